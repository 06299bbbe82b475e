-- configure is sent again on a new connection (docs/clients.md: "configure sent
-- again, then the subscriptions"): a restarted server would otherwise run its
-- default environment with no token.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('configure (token, environment) is sent again after a reconnect', function()
  local demo = H.start_demo('mastodon')
  local dir = H.tmpdir()
  local config = demo.config()
  local srv = H.start_server(dir, { '--backend=rest', '--config=' .. config })
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  local res, err = nm.request_sync('configure', { authToken = 'demo-token', environment = 'local' })
  H.eq(nil, err, 'configure')
  H.eq('local', res.environment, 'environment')
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'account 5' })
  local b = nm.button(buf, 0, 'account', '5')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, function()
    return 'the first state (at ' .. H.virt_text(buf, 0) .. ')'
  end)

  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')
  H.start_server(dir, { '--backend=rest', '--config=' .. config }) -- knows no token
  H.wait(10000, function()
    return nm.info().status == 'connected' and b.sub.name ~= nil
  end, 'reconnect')
  local state, ferr = nm.request_sync('follow', { kind = 'account', id = '5', await = true }, 10000)
  H.eq(nil, ferr, 'follow after the reconnect (the token sent again)')
  H.eq(true, state.confirmed, 'confirmed by the demo')
  H.ok(not nm.needs_credentials(state), 'not waiting for credentials')
end)

H.finish()
