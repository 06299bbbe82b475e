-- The plugin connects only to a socket whose folder is the user's alone (issue 16):
-- an impostor listening where netmodel should be must see no connection. Tests that
-- give folders to `nobody` need root, as in CI.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')
local uv = vim.loop

-- Not netmodel: listens on path and counts the connections it gets.
local function impostor(path)
  local fake = { connections = 0 }
  fake.pipe = uv.new_pipe(false)
  assert(fake.pipe:bind(path))
  fake.pipe:listen(16, function()
    fake.connections = fake.connections + 1
    local peer = uv.new_pipe(false)
    fake.pipe:accept(peer)
    peer:close()
  end)
  return fake
end

-- A fresh folder with mode (set after mkdir: the umask must not count).
local function folder(mode)
  local dir = H.tmpdir()
  assert(uv.fs_chmod(dir, mode))
  return dir
end

-- The error of a request on a fresh setup with opts.
local function refusal(opts)
  nm.setup(opts)
  local res, err = nm.request_sync('stats', {}, 3000)
  H.eq(nil, res, 'result')
  H.eq(nm.NOT_CONNECTED, err and err.code, 'error code')
  return err.message
end

H.test('a socket folder others can write is refused, and no server is spawned for it', function()
  local dir = folder(511) -- 0777
  local fake = impostor(dir .. '/s.sock')
  local want = ('refusing to connect to %s/s.sock: its folder %s can be written by its group and other users '
    .. '(mode 0777), who could have put any server there; run `chmod 700 %s`'):format(dir, dir, dir)
  H.eq(want, refusal({ socket = dir .. '/s.sock', spawn = false }), 'message')
  -- With spawn, not "cannot start /nonexistent…": the server would refuse that folder too.
  H.eq(want, refusal({ cmd = { '/nonexistent/netmodel', 'serve' }, socket = dir .. '/s.sock' }), 'message with spawn')
  vim.wait(100)
  H.eq(0, fake.connections, 'connections the impostor got')
end)

H.test('a group-writable socket folder is refused', function()
  local dir = folder(504) -- 0770
  impostor(dir .. '/s.sock')
  local msg = refusal({ socket = dir .. '/s.sock', spawn = false })
  H.ok(msg:find('can be written by its group (mode 0770)', 1, true), msg)
end)

H.test('a symlinked socket folder is refused', function()
  local dir = folder(448) -- 0700
  local link = H.tmpdir() .. '/link'
  assert(uv.fs_symlink(dir, link))
  local fake = impostor(dir .. '/s.sock')
  local msg = refusal({ socket = link .. '/s.sock', spawn = false })
  H.ok(msg:find('its folder ' .. link .. ' is a symbolic link', 1, true), msg)
  vim.wait(100)
  H.eq(0, fake.connections, 'connections the impostor got')
end)

H.test('a socket folder of another user is refused', function()
  if uv.getuid() ~= 0 then
    H.skip('needs root to give a folder to another user')
  end
  local dir = folder(448)
  assert(uv.fs_chown(dir, 65534, 65534))
  local fake = impostor(dir .. '/s.sock')
  local msg = refusal({ socket = dir .. '/s.sock', spawn = false })
  H.ok(msg:find('belongs to uid 65534, not to this user (uid 0)', 1, true), msg)
  vim.wait(100)
  H.eq(0, fake.connections, 'connections the impostor got')
end)

H.test('reconnecting keeps away from an impostor in a folder others can now write', function()
  local dir = H.tmpdir()
  local srv = H.start_server(dir)
  nm.setup({ socket = srv.socket, spawn = false })
  local _, err = nm.request_sync('stats', {})
  H.eq(nil, err, 'stats error')
  uv.kill(srv.pid, 'sigterm') -- removes its socket
  H.wait(5000, function()
    return nm.info().status ~= 'connected' and not uv.fs_lstat(srv.socket)
  end, 'the server gone')
  assert(uv.fs_chmod(dir, 511))
  local fake = impostor(srv.socket)
  vim.wait(1500) -- retries after 0.1, 0.2, 0.4 and 0.8 s
  H.eq(0, fake.connections, 'connections the impostor got')
  H.ok(nm.info().status ~= 'connected', 'status ' .. nm.info().status)
end)

H.finish()
