-- A tiny harness for the headless tests: each test file runs in its own Neovim
-- (test/run.sh), against the real binary, with its own temp folders.
local uv = vim.loop
local H = {}

H.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h') -- clients/nvim
H.bin = os.getenv('NETMODEL_BIN') or vim.fn.fnamemodify(H.root .. '/../../.build/debug/netmodel', ':p')

local failures, jobs, pids = 0, {}, {}

-- Messages on their own lines in the test output.
vim.notify = function(msg, level)
  io.stdout:write(('   notify(%s): %s\n'):format(level or '', msg))
end

-- A fresh folder (short path: Unix socket paths are limited to 107 bytes).
function H.tmpdir()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p', 448)
  return dir
end

function H.fail(msg)
  error(msg, 0)
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    H.fail(('%s: want %s, got %s'):format(what or 'value', vim.inspect(want), vim.inspect(got)))
  end
end

function H.ok(cond, what)
  if not cond then
    H.fail(what or 'assertion failed')
  end
  return cond
end

-- Polls cond every 10 ms until it holds; fails with `what` (a string, or a
-- function giving one, for details known only then) after ms.
function H.wait(ms, cond, what)
  if not vim.wait(ms, cond, 10) then
    H.fail('timed out after ' .. ms .. ' ms waiting for ' .. (type(what) == 'function' and what() or what))
  end
end

-- Records each distinct value of get() while waiting, so a test can tell that a
-- transient state (pending) was shown.
function H.recorder(get)
  local r = { seen = {} }
  function r.poll()
    local v = get()
    if r.seen[#r.seen] ~= v then
      table.insert(r.seen, v)
    end
    return v
  end
  function r.wait(ms, want)
    H.wait(ms, function()
      return r.poll() == want
    end, function()
      return vim.inspect(want) .. ' (seen ' .. vim.inspect(r.seen) .. ')'
    end)
  end
  return r
end

-- The virtual texts of the netmodel namespace's extmarks on a buffer's line (0-based),
-- read back from Neovim, joined.
function H.virt_text(buf, line)
  local ns = vim.api.nvim_get_namespaces().netmodel
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { line, 0 }, { line, -1 }, { details = true })) do
    local t = ''
    for _, chunk in ipairs(m[4].virt_text or {}) do
      t = t .. chunk[1]
    end
    table.insert(out, t)
  end
  return table.concat(out, ' | ')
end

function H.alive(pid)
  local f = io.open('/proc/' .. pid .. '/stat')
  if not f then
    return uv.kill(pid, 0) == 0
  end
  local stat = f:read('*a')
  f:close()
  local state = stat:match('%) (%a)')
  return state ~= 'Z' and state ~= 'X' -- a zombie has exited (the container may not reap)
end

function H.track_pid(pid)
  table.insert(pids, pid)
end

local function connects(path)
  local done, ok = false, false
  local pipe = uv.new_pipe(false)
  pipe:connect(path, function(err)
    ok, done = not err, true
  end)
  vim.wait(1000, function()
    return done
  end, 5)
  pipe:close()
  return ok
end

-- `netmodel serve --socket=DIR/s.sock --no-stdio --state-dir=DIR/state [extra]`,
-- started by the test (env: variables added to its environment); returns once the
-- socket accepts.
function H.start_server(dir, extra, env)
  local sock = dir .. '/s.sock'
  local args = { H.bin, 'serve', '--socket=' .. sock, '--no-stdio', '--state-dir=' .. dir .. '/state' }
  vim.list_extend(args, extra or {})
  local srv = { socket = sock, stderr = '' }
  srv.job = vim.fn.jobstart(args, {
    env = env,
    on_stderr = function(_, data)
      srv.stderr = srv.stderr .. table.concat(data, '\n')
    end,
    on_exit = function(_, code)
      srv.exit_code = code
    end,
  })
  H.ok(srv.job > 0, 'cannot start ' .. H.bin)
  srv.pid = vim.fn.jobpid(srv.job)
  table.insert(jobs, srv.job)
  local deadline = uv.now() + 5000
  while not connects(sock) do
    if srv.exit_code or uv.now() > deadline then
      H.fail('server did not listen on ' .. sock .. ': ' .. srv.stderr)
    end
    vim.wait(20)
  end
  return srv
end

H.examples = vim.fn.fnamemodify(H.root .. '/../../examples', ':p')

-- examples/<api>/server.py (a demo of that API, with its /_control/ API) on a free
-- loopback port; args: more of its options (e.g. `--token`). Stopped by H.finish().
function H.start_demo(api, args)
  local dir = H.tmpdir()
  local port_file = dir .. '/port'
  local argv = { 'python3', H.examples .. '/' .. api .. '/server.py', '--port', '0', '--port-file', port_file, '--quiet' }
  vim.list_extend(argv, args or {})
  local demo = { stderr = '' }
  demo.job = vim.fn.jobstart(argv, {
    on_stderr = function(_, data)
      demo.stderr = demo.stderr .. table.concat(data, '\n')
    end,
    on_exit = function(_, code)
      demo.exit_code = code
    end,
  })
  H.ok(demo.job > 0, 'cannot start the ' .. api .. ' demo server')
  table.insert(jobs, demo.job)
  H.wait(10000, function()
    return demo.exit_code ~= nil or (vim.fn.filereadable(port_file) == 1 and vim.trim(table.concat(vim.fn.readfile(port_file))) ~= '')
  end, 'the ' .. api .. ' demo server')
  H.ok(not demo.exit_code, 'the ' .. api .. ' demo server exited: ' .. demo.stderr)
  demo.url = 'http://127.0.0.1:' .. vim.trim(table.concat(vim.fn.readfile(port_file)))
  -- /_control/<path> (examples/demoserver.py): the decoded answer. Asked with
  -- python3, which the demo needs anyway; the body goes in a file (a big one does
  -- not fit in an argument).
  function demo.control(method, path, body)
    local file = dir .. '/body.json'
    vim.fn.writefile({ body ~= nil and vim.json.encode(body) or '' }, file, 'b')
    local out = vim.fn.system({
      'python3',
      '-c',
      [[
import sys, urllib.request
method, url, file = sys.argv[1:]
data = open(file, 'rb').read() or None
req = urllib.request.Request(url, data=data, method=method, headers={'Content-Type': 'application/json'})
sys.stdout.write(urllib.request.urlopen(req, timeout=30).read().decode())
]],
      method,
      demo.url .. '/_control/' .. path,
      file,
    })
    H.eq(0, vim.v.shell_error, 'control ' .. method .. ' ' .. path .. ': ' .. out)
    return vim.json.decode(out)
  end
  -- examples/<api>/config.json with its `local` environment at this server, written
  -- to a file; returns the file's path. modify(config): changes it first.
  function demo.config(modify)
    local config = vim.json.decode(table.concat(vim.fn.readfile(H.examples .. '/' .. api .. '/config.json'), '\n'))
    config.environments['local'] = demo.url
    if modify then
      modify(config)
    end
    local path = dir .. '/config.json'
    vim.fn.writefile({ vim.json.encode(config) }, path)
    return path
  end
  -- The API requests the server received, oldest first.
  function demo.log()
    return demo.control('GET', 'stats').log
  end
  return demo
end

-- `netmodel call --socket=SOCK args…` as another client; returns code, stdout, stderr.
function H.call(sock, ...)
  local r = { out = '', err = '' }
  local job = vim.fn.jobstart(vim.list_extend({ H.bin, 'call', '--socket=' .. sock }, { ... }), {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, d)
      r.out = table.concat(d, '\n')
    end,
    on_stderr = function(_, d)
      r.err = table.concat(d, '\n')
    end,
    on_exit = function(_, code)
      r.code = code
    end,
  })
  H.wait(10000, function()
    return r.code ~= nil
  end, 'netmodel call ' .. table.concat({ ... }, ' '))
  return r.code, r.out, r.err
end

function H.log(line)
  io.stdout:write(line .. '\n')
end

local SKIP = {}

-- Ends the running test as skipped, printing "SKIP: why".
function H.skip(why)
  error({ [SKIP] = why }, 0)
end

function H.test(name, fn)
  local ok, err = xpcall(fn, function(e)
    return type(e) == 'table' and e[SKIP] and e or debug.traceback(e)
  end)
  if not ok and type(err) == 'table' then
    H.log('SKIP: ' .. err[SKIP] .. ' (' .. name .. ')')
  elseif ok then
    H.log('PASS ' .. name)
  else
    failures = failures + 1
    H.log('FAIL ' .. name .. ': ' .. tostring(err))
  end
end

-- Stops what the tests started, then quits with the number of failures.
function H.finish()
  pcall(function()
    require('netmodel').stop()
  end)
  for _, job in ipairs(jobs) do
    vim.fn.jobstop(job)
  end
  for _, pid in ipairs(pids) do
    if H.alive(pid) then
      uv.kill(pid, 'sigterm')
    end
  end
  vim.cmd(failures == 0 and 'qall!' or ('cquit ' .. failures))
end

return H
