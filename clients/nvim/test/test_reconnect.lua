-- The server restarts on the same socket: the plugin reconnects, subscribes
-- again, and takes the new server's states (their versions continue above the old ones).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('reconnects and re-subscribes after the server restarts', function()
  local dir = H.tmpdir()
  local srv = H.start_server(dir)
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Banksy' })
  local b = nm.button(buf, 0, 'artist', 'banksy')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, 'first state')
  -- raise the version above what the new server will send
  for _, method in ipairs({ 'follow', 'unfollow', 'follow', 'unfollow' }) do
    local _, err = nm.request_sync(method, { kind = 'artist', id = 'banksy', await = true })
    H.eq(nil, err, method .. ' error')
  end
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]' and b.state.version >= 6
  end, 'settled at a high version')
  local old_version = b.state.version

  vim.loop.kill(srv.pid, 'sigkill') -- leaves a stale socket file behind
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')

  local srv2 = H.start_server(dir)
  H.wait(10000, function()
    return nm.info().status == 'connected'
  end, 'reconnect')
  local code, _, err = H.call(srv2.socket, 'follow', 'kind=artist', 'id=banksy', 'await:=true')
  H.eq(0, code, 'follow by another client: ' .. err)
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Following ]'
  end, function()
    return "the other client's follow on the button (at " .. H.virt_text(buf, 0) .. ')'
  end)
  H.ok(b.state.version > old_version, 'versions never go backwards across a restart')
end)

H.finish()
