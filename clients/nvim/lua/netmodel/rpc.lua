-- One JSON-RPC 2.0 connection to netmodel: a running server's Unix socket, or a
-- `netmodel serve` spawned over stdio. Messages are newline-delimited JSON: the
-- server detects the framing per connection from the first byte, and NDJSON needs
-- no header parsing here. Neovim 0.7 APIs only (vim.loop, vim.json).
local uv = vim.loop

local M = {}

-- Errors made on this side of the wire. JSON-RPC reserves -32768…-32000 for the
-- protocol (the server's own codes are there and -32001…-32005), so the client's
-- sit just above it, the same numbers in every netmodel client (docs/clients.md).
-- The numbers are the shared protocol table (schema/openrpc.json, written into
-- netmodel/protocol.lua by scripts/gen-protocol).
local codes = require('netmodel.protocol').client_errors
M.CONNECTION_LOST = codes.CONNECTION_LOST
M.TIMEOUT = codes.TIMEOUT
M.NOT_CONNECTED = codes.NOT_CONNECTED
M.CANCELLED = codes.CANCELLED

local Conn = {}
Conn.__index = Conn

-- Calls a user's function (a request callback, a subscription's on_state or
-- on_error): an error in it is reported, and the caller goes on, so that no
-- callback can leave the connection half torn down or the other callbacks uncalled.
function M.safe(fn, ...)
  if not fn then
    return
  end
  local ok, err = pcall(fn, ...)
  if not ok then
    vim.notify('netmodel: a callback failed: ' .. tostring(err), vim.log.levels.ERROR)
  end
end
local safe = M.safe

-- How many times a server that cannot start is started, while subscriptions wait
-- for one, before the plugin gives up until the next request or setup(); and the
-- wait before the first retry, doubled after each.
M.SPAWN_TRIES = 3
M.SPAWN_RETRY_MS = 1000

-- Numbers each connection, across all Conn objects, so that a state's version is
-- only ever compared with versions from the same server connection.
local generation = 0
local function next_gen()
  generation = generation + 1
  return generation
end

-- opts: socket (path or false), spawn (bool), cmd (list), state_dir (path or nil),
-- max_attempts (reconnect tries before giving up; nil: for ever),
-- on_connect() (after every (re)connect, before queued requests are written),
-- on_notification(method, params), on_lost(message) (reconnecting),
-- on_end(message) (the connection ended for good: its spawned server died, or
-- reconnecting gave up), on_down(message), on_spawn_failed(message) (a server
-- that cannot start was given up on), wanted(). Each is called through M.safe.
function M.new(opts)
  return setmetatable({
    opts = opts,
    status = 'idle', -- idle | connecting | connected | waiting (a reconnect is scheduled)
    gen = next_gen(), -- changes per connection; messages of an older one are ignored
    pending = {}, -- id -> callback(err, result)
    queue = {}, -- lines written once connected
    next_id = 0,
    retry_ms = 0,
    attempts = 0, -- reconnect tries since the server last answered
  }, Conn)
end

local function close(h)
  if h and not h:is_closing() then
    h:close()
  end
end

-- The JSON Pointer of the first string (value or key) in v that is not valid
-- UTF-8, or nil. The server cannot parse such a line: its error would carry
-- `id: null`, which no callback could be matched with.
local function utf8_ok(s)
  if not s:find('[\128-\255]') then
    return true
  end
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local len, cp, min
    if c < 0x80 then
      len, cp, min = 1, c, 0
    elseif c >= 0xC2 and c <= 0xDF then
      len, cp, min = 2, c - 0xC0, 0x80
    elseif c >= 0xE0 and c <= 0xEF then
      len, cp, min = 3, c - 0xE0, 0x800
    elseif c >= 0xF0 and c <= 0xF4 then
      len, cp, min = 4, c - 0xF0, 0x10000
    else
      return false
    end
    for j = i + 1, i + len - 1 do
      local cc = s:byte(j)
      if not cc or cc < 0x80 or cc > 0xBF then
        return false
      end
      cp = cp * 64 + (cc - 0x80)
    end
    if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then
      return false
    end
    i = i + len
  end
  return true
end

local function bad_utf8(v, path)
  if type(v) == 'string' then
    return not utf8_ok(v) and path or nil
  elseif type(v) == 'table' then
    for k, x in pairs(v) do
      local p = path .. '/' .. tostring(k)
      if type(k) == 'string' and not utf8_ok(k) then
        return p
      end
      local bad = bad_utf8(x, p)
      if bad then
        return bad
      end
    end
  end
end
M._bad_utf8 = bad_utf8

local function check(method, params)
  local bad = bad_utf8(params, '')
  if bad then
    error(('netmodel: %s: params%s is not valid UTF-8, which the server cannot read'):format(method, bad), 0)
  end
end

-- Raises at once for params the server could not read. opts.timeout_ms: when it
-- elapses first, the request is cancelled (as cancel()) and callback gets TIMEOUT.
-- The callback is called exactly once, whatever happens.
function Conn:request(method, params, callback, opts)
  check(method, params)
  self.next_id = self.next_id + 1
  local id = self.next_id
  callback = callback or function() end
  if self.stopped then -- stop() ended this connection for good: answer rather than wait
    vim.schedule(function()
      safe(callback, { code = M.NOT_CONNECTED, message = 'netmodel was stopped (call setup() to connect again)' }, nil)
    end)
    return id
  end
  self.pending[id] = callback
  local timeout = opts and opts.timeout_ms
  if timeout then
    vim.defer_fn(function()
      self:cancel(id, { code = M.TIMEOUT, message = ('%s timed out after %d ms'):format(method, timeout) })
    end, timeout)
  end
  self:_send({ jsonrpc = '2.0', id = id, method = method, params = params }, id)
  return id
end

function Conn:notify(method, params)
  check(method, params)
  if not self.stopped then
    self:_send({ jsonrpc = '2.0', method = method, params = params })
  end
end

-- Ask the server to stop working on a request (`$/cancelRequest`; one still queued
-- is not sent at all); its callback gets `err` (default CANCELLED) now, and the
-- answer, should one still come, is dropped. False if it was answered already.
function Conn:cancel(id, err)
  local cb = self.pending[id]
  if not cb then
    return false
  end
  self.pending[id] = nil
  local queued = false
  for i, entry in ipairs(self.queue) do
    if entry.id == id then
      table.remove(self.queue, i)
      queued = true
      break
    end
  end
  if not queued and self.status == 'connected' then
    self:notify('$/cancelRequest', { id = id })
  end
  safe(cb, err or { code = M.CANCELLED, message = 'request ' .. id .. ' cancelled' }, nil)
  return true
end

-- An empty Lua table encodes as `[]`; params are objects, so an empty `params`
-- (the request's, or a list's inside it, as in `{ list = L, params = {} }`) is
-- sent as `{}`, as every netmodel client sends it.
local function objects(v)
  if type(v) ~= 'table' then
    return v
  end
  for k, x in pairs(v) do
    if k == 'params' and type(x) == 'table' and next(x) == nil then
      v[k] = vim.empty_dict()
    else
      objects(x)
    end
  end
  return v
end

-- One NDJSON line of a message.
function M.encode(msg)
  if msg.params == nil then
    msg.params = vim.empty_dict()
  end
  return vim.json.encode(objects(msg)) .. '\n'
end

function Conn:_send(msg, id)
  local line = M.encode(msg)
  if self.status == 'connected' then
    self.writer:write(line)
  else
    table.insert(self.queue, { line = line, id = id })
    self:connect()
  end
end

-- Whoever can put a socket where we look receives what we send, tokens included
-- (configure). So the socket's folder must be a real folder of ours that neither
-- its group nor others can write (Neovim cannot read the peer's SO_PEERCRED; the
-- server checks the same folder where it listens). Returns why not, or nil. A
-- missing folder passes: connecting fails, or a spawned server creates it 0700.
function M.untrusted_folder(path)
  local folder = vim.fn.fnamemodify(path, ':h')
  local st = uv.fs_lstat(folder)
  if not st then
    return nil
  end
  local refuse = ('refusing to connect to %s: its folder %s'):format(path, folder)
  if st.type == 'link' then
    return refuse .. ' is a symbolic link; give the real path'
  end
  local me = uv.getuid()
  if st.uid ~= me then
    return ('%s belongs to uid %d, not to this user (uid %d), who could have put any server there'):format(
      refuse,
      st.uid,
      me
    )
  end
  local group, others = bit.band(st.mode, 16) ~= 0, bit.band(st.mode, 2) ~= 0 -- 0o020, 0o002
  if group or others then
    local writers = group and others and 'its group and other users' or group and 'its group' or 'other users'
    return ('%s can be written by %s (mode %04o), who could have put any server there; run `chmod 700 %s`'):format(
      refuse,
      writers,
      bit.band(st.mode, 4095),
      folder
    )
  end
end

function Conn:connect()
  if self.status == 'connecting' or self.status == 'connected' or self.stopped then
    return
  end
  if self.status ~= 'waiting' then
    self.spawn_failures = 0 -- asked for (a request, setup()): a server that cannot start is tried again
  end
  self.status = 'connecting'
  local path = self.opts.socket
  if not path then
    return self:_spawn()
  end
  local why = M.untrusted_folder(path)
  if why then
    -- Not spawned either: a server would refuse that folder too.
    return self:_down(why)
  end
  -- A server that listens on the socket owns the state folder: use it rather than
  -- start a second one, which would refuse to run.
  local pipe = uv.new_pipe(false)
  pipe:connect(path, function(err)
    vim.schedule(function()
      if not err then
        return self:_attach(pipe, pipe)
      end
      close(pipe)
      if self.opts.spawn then
        self:_spawn()
      else
        self:_down('cannot connect to ' .. path .. ': ' .. err)
      end
    end)
  end)
end

function Conn:_spawn()
  local cmd = self.opts.cmd
  local args = { unpack(cmd, 2) }
  if self.opts.state_dir then
    table.insert(args, '--state-dir=' .. self.opts.state_dir)
  end
  if self.opts.socket then
    -- Listen on the socket too, so other Neovims (and `netmodel call`) share this
    -- server instead of failing on its state folder.
    table.insert(args, '--socket=' .. self.opts.socket)
  end
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local log = ''
  local handle, pid
  handle, pid = uv.spawn(cmd[1], { args = args, stdio = { stdin, stdout, stderr } }, function(code, signal)
    close(handle)
    vim.schedule(function()
      if self.process == handle then
        log = vim.trim(log)
        local why = ('server exited (code %d, signal %d)%s'):format(code, signal, log ~= '' and ': ' .. log or '')
        self:_lost(self.gen, why, 'exit')
      end
    end)
  end)
  if not handle then
    close(stdin)
    close(stdout)
    close(stderr)
    self.transport = 'spawn'
    return self:_spawn_failed('cannot start ' .. cmd[1] .. ': ' .. tostring(pid))
  end
  stderr:read_start(function(_, chunk)
    if chunk then
      log = (log .. chunk):sub(-2000) -- the last words explain an exit
    else
      close(stderr)
    end
  end)
  self.process = handle
  self:_attach(stdout, stdin, pid)
end

function Conn:_attach(reader, writer, pid)
  self.gen = next_gen()
  local gen = self.gen
  self.status, self.reader, self.writer, self.pid, self.ended = 'connected', reader, writer, pid, nil
  self.transport = pid and 'spawn' or 'socket'
  self.answered = false -- a spawned server counts as up once it answered
  -- The start of a line not ended yet, as the chunks it came in: only each new
  -- chunk is searched for the end of a line, and a line is joined once, so reading
  -- a message costs O(its size) however many chunks it spans.
  local parts = {}
  local function emit(line)
    -- One scheduled call per message: a failing callback cannot swallow the rest.
    vim.schedule(function()
      if gen == self.gen then
        self:_dispatch(line)
      end
    end)
  end
  reader:read_start(function(err, chunk)
    if not chunk then
      return vim.schedule(function()
        self:_lost(gen, err or 'connection closed by the server', 'eof')
      end)
    end
    local start = 1
    while true do
      local nl = chunk:find('\n', start, true)
      if not nl then
        break
      end
      if #parts > 0 then
        parts[#parts + 1] = chunk:sub(start, nl - 1)
        emit(table.concat(parts))
        parts = {}
      else
        emit(chunk:sub(start, nl - 1))
      end
      start = nl + 1
    end
    if start <= #chunk then
      parts[#parts + 1] = start == 1 and chunk or chunk:sub(start)
    end
  end)
  safe(self.opts.on_connect)
  local queue = self.queue
  self.queue = {}
  for _, entry in ipairs(queue) do
    writer:write(entry.line)
  end
end

function Conn:_dispatch(line)
  if line:match('^%s*$') then
    return
  end
  local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok or type(msg) ~= 'table' then
    return
  end
  if not self.answered then
    self.answered, self.ever_answered, self.retry_ms, self.attempts = true, true, 0, 0
    self.spawn_failures = 0
  end
  if msg.method then -- the server sends notifications only, never requests
    safe(self.opts.on_notification, msg.method, msg.params)
  elseif msg.id ~= nil then
    local cb = self.pending[msg.id]
    self.pending[msg.id] = nil
    if cb then
      safe(cb, msg.error, msg.result)
    end
  elseif type(msg.error) == 'table' then
    -- `id: null`: a line the server could not read, which may be any waiting
    -- request's; each fails with the error rather than wait for good.
    local pending = self.pending
    self.pending = {}
    for _, cb in pairs(pending) do
      safe(cb, msg.error, nil)
    end
  end
end

-- Every request that has not been answered gets `err`; nothing is resent, since a
-- mutation may or may not have reached the server.
function Conn:_fail_all(err)
  local pending = self.pending
  self.pending, self.queue = {}, {}
  for _, cb in pairs(pending) do
    safe(cb, err, nil)
  end
end

-- event: 'eof' (the reader ended) or 'exit' (the spawned server did). A spawned
-- server counts as lost once both happened: replies it wrote before exiting are
-- still read, and the exit explains why (its last stderr lines).
function Conn:_lost(gen, why, event)
  if gen ~= self.gen or self.status ~= 'connected' then
    return
  end
  if self.process then
    self.ended = self.ended or {}
    self.ended[event] = why
    if not (self.ended.eof and self.ended.exit) then
      return
    end
    why = self.ended.exit
  end
  self.gen = next_gen() -- lines of the old connection still scheduled are dropped
  close(self.reader)
  close(self.writer)
  self.reader, self.writer, self.pid, self.process, self.ended = nil, nil, nil, nil, nil
  if not self.answered then
    if self.transport == 'spawn' then
      return self:_spawn_failed(why) -- it never worked: a failed start, not a lost server
    end
    return self:_down(why)
  end
  -- The state first, then the callbacks: whatever they do (a new request, an
  -- error) meets a connection that knows it is down.
  if self.transport == 'spawn' then
    -- Our own server died: not started again behind the user's back (a crash
    -- would loop), as in every netmodel client. The next request or setup()
    -- starts one, and subscribes the handles again.
    local pending = self:_take_pending()
    self:_end(why)
    return self:_answer_all(pending, { code = M.CONNECTION_LOST, message = why })
  end
  self.status = 'waiting'
  local pending = self:_take_pending()
  safe(self.opts.on_lost, why)
  self:_answer_all(pending, { code = M.CONNECTION_LOST, message = why })
  if self.status == 'waiting' then -- a callback may have started connecting already
    self:_retry()
  end
end

-- The requests still waiting, taken off the connection (and the queue emptied).
function Conn:_take_pending()
  local pending = self.pending
  self.pending, self.queue = {}, {}
  return pending
end

function Conn:_answer_all(pending, err)
  for _, cb in pairs(pending) do
    safe(cb, err, nil)
  end
end

-- The connection ended for good (until the next request or setup()).
function Conn:_end(why)
  self.status, self.retry_ms, self.attempts = 'idle', 0, 0
  safe(self.opts.on_end, why)
end

-- A spawned server exited before it answered (a bad option, a state folder in use,
-- a missing binary): it is tried again while subscriptions want a server, but only
-- SPAWN_TRIES times in all, with a growing wait, and then reported once (its own
-- words: stderr) rather than started again every few seconds for ever.
function Conn:_spawn_failed(why)
  self.spawn_failures = (self.spawn_failures or 0) + 1
  local wanted = self.opts.wanted and self.opts.wanted()
  if not wanted or self.spawn_failures >= M.SPAWN_TRIES then
    self.status, self.retry_ms, self.attempts = 'idle', 0, 0
    local pending = self:_take_pending()
    if wanted then
      why = ('cannot start the server (tried %d times; the next request or setup() tries again): %s'):format(
        self.spawn_failures,
        why
      )
      safe(self.opts.on_spawn_failed, why)
    end
    return self:_answer_all(pending, { code = M.NOT_CONNECTED, message = why })
  end
  self.status = 'waiting'
  local pending = self:_take_pending()
  safe(self.opts.on_down, why)
  self:_answer_all(pending, { code = M.NOT_CONNECTED, message = why })
  local delay = M.SPAWN_RETRY_MS * 2 ^ (self.spawn_failures - 1)
  vim.defer_fn(function()
    if self.status == 'waiting' and not self.stopped then
      self:connect()
    end
  end, delay)
end

-- No server could be reached (or started for lack of a binary).
function Conn:_down(why)
  -- Subscriptions (buttons, lists) want their server, also one not started yet.
  local keep_trying = self.ever_answered or (self.opts.wanted and self.opts.wanted())
  self.status = keep_trying and 'waiting' or 'idle' -- idle: the next request tries again
  local pending = self:_take_pending()
  safe(self.opts.on_down, why)
  self:_answer_all(pending, { code = M.NOT_CONNECTED, message = why })
  if keep_trying and self.status == 'waiting' then
    self:_retry()
  end
end

-- Reconnect with backoff (0.1 s doubling to 5 s), so subscriptions come back when
-- the server restarts, without spinning while it is gone.
function Conn:_retry()
  if self.stopped then
    return
  end
  local max = self.opts.max_attempts
  if max and self.attempts >= max then
    self:_fail_all({ code = M.CONNECTION_LOST, message = 'gave up reconnecting after ' .. max .. ' tries' })
    return self:_end(('gave up reconnecting after %d tries'):format(max))
  end
  self.attempts = self.attempts + 1
  self.retry_ms = math.min(math.max(100, self.retry_ms * 2), 5000)
  vim.defer_fn(function()
    if self.status == 'waiting' then
      self:connect()
    end
  end, self.retry_ms)
end

-- Closing stdin ends a spawned server (it exits on EOF after persisting pending
-- intent), so no server outlives its Neovim.
function Conn:stop()
  self.stopped = true
  self.gen = next_gen()
  close(self.reader)
  close(self.writer)
  self.status = 'idle'
  self:_fail_all({ code = M.CONNECTION_LOST, message = 'connection closed (stop)' })
end

return M
