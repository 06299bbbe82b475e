-- A follow request awaiting approval (a locked Mastodon account, against the
-- mastodon demo server of examples/): drawn `[ Requested ]`, and pressing it
-- withdraws the request (unfollow), as Mastodon's own UI does.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('a requested follow is drawn [ Requested ]; pressing it withdraws the request', function()
  local demo = H.start_demo('mastodon')
  local srv = H.start_server(H.tmpdir(), { '--backend=rest', '--config=' .. demo.config() }, {
    MASTODON_TOKEN = 'demo-token',
  })
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'locked account 7' })
  local b = nm.button(buf, 0, 'account', '7')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, function()
    return 'the first state (at ' .. H.virt_text(buf, 0) .. ')'
  end)
  local done
  b.toggle(function(err, state)
    done = { err = err, state = state }
  end)
  H.wait(5000, function()
    return done ~= nil
  end, 'the follow')
  H.eq(nil, done.err, 'follow error')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Requested ]' and b.state.requested == true
  end, function()
    return '[ Requested ] (at ' .. H.virt_text(buf, 0) .. ')'
  end)
  H.eq({ '7' }, demo.control('GET', 'state').requested, 'the demo holds the request')

  local calls, request = {}, nm.request
  nm.request = function(method, params, cb, opts)
    table.insert(calls, { method, params.following })
    return request(method, params, cb, opts)
  end
  done = nil
  b.toggle(function(err, state)
    done = { err = err, state = state }
  end)
  H.wait(5000, function()
    return done ~= nil
  end, 'the press on [ Requested ]')
  nm.request = request
  H.eq({ { 'setFollowState', false } }, calls, 'pressing a requested button unfollows')
  H.eq(nil, done.err, 'unfollow error')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, function()
    return '[ Follow ] again (at ' .. H.virt_text(buf, 0) .. ')'
  end)
  H.eq({}, demo.control('GET', 'state').requested, 'the request withdrawn on the demo')
end)

H.finish()
