-- A backend that rejects everything (422): the error reaches the callback and
-- the button shows the rollback.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('follow with await gets -32002 and the button rolls back', function()
  local dir = H.tmpdir()
  nm.setup({
    cmd = { H.bin, 'serve', '--simulate', 'latency=200,failure=1,status=422', '--seed', '1' },
    socket = false,
    state_dir = dir .. '/state',
  })
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Banksy' })
  nm.button(buf, 0, 'artist', 'banksy')
  local rec = H.recorder(function()
    return H.virt_text(buf, 0)
  end)
  -- the first fetch fails too: no state is known, the error is shown
  H.wait(5000, function()
    return rec.poll():find('422', 1, true) ~= nil
  end, function()
    return 'the failed fetch (seen ' .. vim.inspect(rec.seen) .. ')'
  end)

  local got
  nm.follow('artist', 'banksy', { await = true }, function(err, state)
    got = { err = err, state = state }
  end)
  H.wait(5000, function()
    rec.poll()
    return got ~= nil
  end, 'the follow callback')
  H.track_pid(nm.info().pid)
  H.eq(nil, got.state, 'result')
  H.eq(-32002, got.err.code, 'error code')
  H.eq(422, got.err.data.status, 'data.status')
  H.ok(got.err.data.state.following ~= true, 'rolled-back state in data.state')

  H.wait(5000, function()
    local t = rec.poll()
    return vim.startswith(t, '[ Follow ] ✗ ') and t:find('422', 1, true) ~= nil
  end, function()
    return 'the rollback on the button (seen ' .. vim.inspect(rec.seen) .. ')'
  end)
  H.ok(vim.tbl_contains(vim.tbl_map(function(t)
    return vim.startswith(t, '[ Following… ]')
  end, rec.seen), true), 'optimistic pending state shown first: ' .. vim.inspect(rec.seen))
  H.eq(-32002, nm.state('artist', 'banksy').error.code, 'error of the held state')
end)

H.test('an intent refused 401 waits for credentials: the button says sign in', function()
  local srv = H.start_server(H.tmpdir(), { '--simulate', 'failure=1,status=401' })
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Locked' })
  nm.button(buf, 0, 'artist', 'locked')
  nm.follow('artist', 'locked')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Following… ] 🔑 sign in'
  end, function()
    return 'the sign-in marker (at ' .. H.virt_text(buf, 0) .. ')'
  end)
  H.ok(nm.needs_credentials(nm.state('artist', 'locked')), 'needs_credentials of the held state')
  -- The button may show the read's 401 a turn before the intent's own 401 is
  -- answered (the intent is sent after its group commit): wait for the intent.
  local waiting
  for _ = 1, 100 do
    waiting = nm.request_sync('stats', {}).waitingForCredentials
    if waiting == 1 then
      break
    end
    vim.wait(50)
  end
  H.eq(1, waiting, 'stats.waitingForCredentials')
end)

H.finish()
