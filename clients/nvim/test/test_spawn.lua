-- Spawning `netmodel serve`, and no server outliving its Neovim.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('spawns a server when none listens, and shares it on the socket', function()
  local dir = H.tmpdir()
  local sock = dir .. '/run/s.sock' -- its folder does not exist yet
  nm.setup({ cmd = { H.bin, 'serve' }, socket = sock, state_dir = dir .. '/state' })
  local state, err = nm.request_sync('follow', { kind = 'artist', id = 'banksy', await = true })
  H.eq(nil, err, 'follow error')
  H.eq(true, state.following and state.confirmed, 'followed and confirmed')
  local info = nm.info()
  H.eq('spawn', info.transport, 'transport')
  H.ok(info.pid and H.alive(info.pid), 'spawned server alive')
  H.track_pid(info.pid)
  H.ok(vim.loop.fs_stat(dir .. '/state'), 'state folder used')
  -- another client reaches the same server (and the same models) through the socket
  local code, out, stderr = H.call(sock, 'getFollowState', 'kind=artist', 'id=banksy')
  H.eq(0, code, 'netmodel call: ' .. stderr)
  H.eq(true, vim.json.decode(out).following, 'seen by the other client')
  nm.stop()
  H.wait(5000, function()
    return not H.alive(info.pid)
  end, 'spawned server to exit after stop()')
end)

H.test('spawns over stdio only with socket = false', function()
  local dir = H.tmpdir()
  nm.setup({ cmd = { H.bin, 'serve' }, socket = false, state_dir = dir .. '/state' })
  local stats, err = nm.request_sync('stats', {})
  H.eq(nil, err, 'stats error')
  H.eq(1, stats.connections.total, 'connections (stdio only)')
  H.track_pid(nm.info().pid)
end)

-- A spawned server that dies is not started again: test_agree.lua.

H.test('a server that cannot start is reported, and not restarted in a loop', function()
  local dir = H.tmpdir()
  H.start_server(dir) -- owns dir/state
  nm.setup({ cmd = { H.bin, 'serve' }, socket = false, state_dir = dir .. '/state' })
  local res, err = nm.request_sync('stats', {})
  H.eq(nil, res, 'result')
  H.eq(nm.NOT_CONNECTED, err.code, 'error code')
  H.ok(err.message:find('in use', 1, true), "the server's own words: " .. err.message)
  H.eq('idle', nm.info().status, 'status (no respawn)')
end)

H.test('a server that cannot start while a button waits: a few tries with backoff, reported once', function()
  local dir = H.tmpdir()
  local starts = dir .. '/starts'
  local errors = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    end
    notify(msg, level)
  end
  -- each start is written down, then it is the real binary with an option it refuses
  nm.setup({
    cmd = { '/bin/sh', '-c', 'echo x >> "$0"; exec "$@"', starts, H.bin, 'serve', '--no-such-option' },
    socket = false,
    state_dir = dir .. '/state',
  })
  local function count()
    return vim.fn.filereadable(starts) == 1 and #vim.fn.readfile(starts) or 0
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Banksy' })
  nm.button(buf, 0, 'artist', 'banksy')
  H.wait(15000, function()
    return count() > 0 and nm.info().status == 'idle'
  end, function()
    return 'the plugin to give up (status ' .. nm.info().status .. ', ' .. count() .. ' starts)'
  end)
  vim.notify = notify
  H.eq(require('netmodel.rpc').SPAWN_TRIES, count(), 'starts before giving up')
  H.eq(1, #errors, 'reported once: ' .. vim.inspect(errors))
  H.ok(errors[1]:find('no-such-option', 1, true), "with the server's own words: " .. errors[1])
  H.ok(H.virt_text(buf, 0):find('cannot start the server', 1, true), 'on the button: ' .. H.virt_text(buf, 0))
  -- asking again (a request) tries again, once
  local _, err = nm.request_sync('stats', {})
  H.eq(nm.NOT_CONNECTED, err and err.code, 'the request fails')
  H.ok(err.message:find('no-such-option', 1, true), "the request says why: " .. err.message)
end)

-- A child Neovim (driven over --embed RPC) spawns a server; then it quits or is
-- killed, and the server must go too.
local function child_with_server()
  local dir = H.tmpdir()
  local ch = vim.fn.jobstart({
    'nvim', '--embed', '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '--cmd', 'set rtp^=' .. H.root,
  }, { rpc = true })
  H.ok(ch > 0, 'child nvim started')
  local pid = vim.rpcrequest(ch, 'nvim_exec_lua', [[
    local bin, state_dir = ...
    local nm = require('netmodel')
    nm.setup({ cmd = { bin, 'serve' }, socket = false, state_dir = state_dir })
    local _, err = nm.request_sync('stats', {})
    assert(not err, vim.inspect(err))
    return nm.info().pid
  ]], { H.bin, dir .. '/state' })
  H.ok(type(pid) == 'number' and H.alive(pid), 'server spawned by the child: ' .. vim.inspect(pid))
  H.track_pid(pid)
  return ch, pid
end

H.test('no orphaned server after Neovim quits', function()
  local ch, pid = child_with_server()
  vim.rpcnotify(ch, 'nvim_command', 'qall!')
  H.wait(5000, function()
    return not H.alive(pid)
  end, 'server ' .. pid .. ' to exit after :qall!')
end)

H.test('no orphaned server after Neovim is killed with SIGKILL', function()
  local ch, pid = child_with_server()
  local nvim_pid = vim.fn.jobpid(ch)
  vim.loop.kill(nvim_pid, 'sigkill')
  H.wait(5000, function()
    return not H.alive(nvim_pid)
  end, 'child nvim to die')
  H.wait(5000, function()
    return not H.alive(pid)
  end, 'server ' .. pid .. ' to exit on stdin EOF')
end)

H.finish()
