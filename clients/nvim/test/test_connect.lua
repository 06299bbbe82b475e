-- Connecting to a running server's socket, the follow button, :NetmodelFollow.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('connects to a listening socket instead of spawning', function()
  local srv = H.start_server(H.tmpdir())
  -- a spawn would fail: this command does not exist
  nm.setup({ cmd = { '/nonexistent/netmodel', 'serve' }, socket = srv.socket, spawn = true })
  local init, err = nm.request_sync('initialize', { processId = vim.fn.getpid() })
  H.eq(nil, err, 'initialize error')
  H.eq('netmodel', init.serverInfo.name, 'serverInfo.name')
  H.eq('socket', nm.info().transport, 'transport')
  H.eq(nil, nm.info().pid, 'pid of a server we did not spawn')
end)

H.test('no server and spawn = false: requests fail with NOT_CONNECTED', function()
  nm.setup({ socket = H.tmpdir() .. '/none.sock', spawn = false })
  local res, err = nm.request_sync('stats', {}, 3000)
  H.eq(nil, res, 'result')
  H.eq(nm.NOT_CONNECTED, err and err.code, 'error code')
end)

H.test(':NetmodelFollow/Unfollow/Toggle update the button from notifications', function()
  local srv = H.start_server(H.tmpdir(), { '--simulate', 'latency=300' })
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Banksy', 'Kaws' })
  local b = nm.button(buf, 1, 'artist', 'banksy')
  H.eq('[ … ]', H.virt_text(buf, 1), 'button before the first state')
  local rec = H.recorder(function()
    return H.virt_text(buf, 1)
  end)
  rec.wait(5000, '[ Follow ]') -- the fetch the subscription started
  H.eq('', H.virt_text(buf, 0), 'other line untouched')

  vim.cmd('NetmodelFollow artist banksy')
  rec.wait(5000, '[ Following ]')
  H.ok(vim.tbl_contains(rec.seen, '[ Following… ]'), 'pending shown: ' .. vim.inspect(rec.seen))
  H.eq(true, b.state.confirmed, 'confirmed')

  vim.cmd('NetmodelUnfollow artist banksy')
  rec.wait(5000, '[ Follow ]')
  H.ok(vim.tbl_contains(rec.seen, '[ Unfollowing… ]'), 'pending unfollow shown: ' .. vim.inspect(rec.seen))

  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('NetmodelToggle')
  rec.wait(5000, '[ Following ]')

  -- a change made by another client reaches the button
  local code, _, err = H.call(srv.socket, 'unfollow', 'kind=artist', 'id=banksy')
  H.eq(0, code, 'netmodel call unfollow: ' .. err)
  rec.wait(5000, '[ Follow ]')
  local code2 = H.call(srv.socket, 'getFollowState', 'kind=artist', 'id=banksy', 'maxAgeMs:=0')
  H.eq(0, code2, 'getFollowState exit code')
end)

H.test('states older than the one held are dropped', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'x' })
  local b = nm.button(buf, 0, 'artist', 'kaws')
  local _, err = nm.request_sync('follow', { kind = 'artist', id = 'kaws', await = true })
  H.eq(nil, err, 'follow error')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Following ]'
  end, 'following')
  -- feed the connection a notification as the server would send it
  local conn, v = nm._connection(), b.state.version
  local function inject(version)
    local state = vim.tbl_extend('force', b.state, { following = false, confirmed = false, version = version })
    local params = { subscription = b.sub.name, seq = 99, state = state }
    conn:_dispatch(vim.json.encode({ jsonrpc = '2.0', method = 'stateChanged', params = params }))
  end
  inject(v - 1)
  H.eq('[ Following ]', H.virt_text(buf, 0), 'after an older state')
  inject(v + 1) -- proves the injection path reaches the button
  H.eq('[ Follow ]', H.virt_text(buf, 0), 'after a newer state')
end)

-- A host that ends its socket connection ends its own session, not the daemon others
-- share (issue 27 §6): stop(), and a Neovim that says shutdown and exit and quits, leave
-- it serving the others.
H.test('stopping a socket connection leaves a shared daemon running', function()
  local srv = H.start_server(H.tmpdir())
  for _ = 1, 2 do
    nm.setup({ socket = srv.socket, spawn = false })
    local state, err = nm.request_sync('follow', { kind = 'artist', id = 'banksy', await = true })
    H.eq(nil, err, 'follow error')
    H.eq(true, state.confirmed, 'confirmed')
    nm.stop()
  end
  local quit = vim.fn.jobstart({
    vim.v.progpath, '--headless', '--clean', '--cmd', 'set rtp^=' .. H.root,
    '-c', ('lua require("netmodel").setup({ socket = %q, spawn = false })'):format(srv.socket),
    '-c', 'lua assert(require("netmodel").request_sync("stats", {}, 10000))',
    -- LSP's way out, as a host may say it: it ends that session only.
    '-c', 'lua local _, e = require("netmodel").request_sync("shutdown", {}, 10000); assert(e == nil, vim.inspect(e))',
    '-c', 'lua require("netmodel").notify("exit")', '-c', 'sleep 200m', '-c', 'qa!',
  })
  H.ok(quit > 0, 'cannot start another Neovim')
  H.eq({ 0 }, vim.fn.jobwait({ quit }, 20000), 'the other Neovim connected, asked and quit')
  vim.wait(300)
  H.eq(nil, srv.exit_code, 'the daemon is still running')
  local code, out, err = H.call(srv.socket, 'getFollowState', 'kind=artist', 'id=banksy')
  H.eq(0, code, 'netmodel call after the sessions ended: ' .. err)
  H.eq(true, vim.json.decode(out).following, 'the state the ended sessions left')
end)

H.finish()
