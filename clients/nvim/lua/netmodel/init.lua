-- netmodel for Neovim: requests, follow state and subscriptions over one
-- connection (see :help netmodel). The connection is made on first use, so
-- setup() costs nothing at startup.
local protocol = require('netmodel.protocol') -- generated from schema/openrpc.json
local rpc = require('netmodel.rpc')

local M = {}
M.CONNECTION_LOST, M.TIMEOUT, M.NOT_CONNECTED, M.CANCELLED =
  rpc.CONNECTION_LOST, rpc.TIMEOUT, rpc.NOT_CONNECTED, rpc.CANCELLED

-- $XDG_RUNTIME_DIR/netmodel/netmodel.sock, else /tmp/netmodel-$UID/netmodel.sock
-- (schema/openrpc.json, x-netmodel-protocol.defaultSocket).
function M.default_socket()
  local runtime = vim.env[protocol.socket.env]
  if runtime and runtime:sub(1, 1) == '/' then -- a relative one is ignored (XDG Base Directory)
    return runtime .. '/' .. protocol.socket.under_env
  end
  return (protocol.socket.fallback:gsub('{uid}', tostring(vim.loop.getuid())))
end

local conn -- the rpc connection, made by setup() or on first use
local subs = {} -- subscriptions made here: handle -> true; they survive reconnects
local by_name = {} -- the server's subscription name -> handle, for this connection
local known = {} -- "kind/id" -> newest EntityState seen, for toggle

local instance -- the server process's id (subscribe answers), nil until known on this connection
local early = {} -- subscription name -> key -> state, come before that subscribe's answer
local subscribing = 0 -- subscribe requests waiting for their answer

-- Versions grow per server process, and a restart on another state folder (or an
-- older server) may count lower: a version is only compared with one seen from the
-- same process (its instance id; else the same connection). An equal version is the
-- same state seen twice (a reply and a notification): dropped.
local function era()
  return instance or ('connection ' .. conn.gen)
end

local function newer(held, key, state)
  local h = held[key]
  local version = state.version or 0
  if h and h.era == era() and not protocol.newer_version(version, h.version) then
    return false
  end
  held[key] = { era = era(), version = version }
  return true
end
M._newer = newer -- for the list buffer

-- JSON text as the server writes it (vim.json escapes '/', the server does not).
local function json_text(v)
  return (vim.json.encode(v):gsub('\\/', '/'))
end

-- A list's params as its key: their canonical form (schema/openrpc.json,
-- x-netmodel-protocol.listParams), the server's ListState `params` text: members
-- whose value is null (vim.NIL) dropped, as the server drops them; keys sorted;
-- compact JSON.
local function params_key(params)
  local names, value = {}, {}
  if type(params) == 'table' then
    for k, v in pairs(params) do
      if not (protocol.list_params_drop_null and v == vim.NIL) then
        local name = tostring(k)
        names[#names + 1], value[name] = name, v
      end
    end
  end
  table.sort(names)
  local parts = {}
  for i, name in ipairs(names) do
    parts[i] = json_text(name) .. ':' .. json_text(value[name])
  end
  return '{' .. table.concat(parts, ',') .. '}'
end
M._params_key = params_key -- for the list buffer

local function key_of(state)
  if state.list then
    return 'list\0' .. state.list .. '\0' .. params_key(state.params)
  end
  return (state.kind or '') .. '/' .. (state.id or '')
end

-- The version filter as the shared conformance vectors drive it (test only): a
-- subscription's `held` table, and the instance a (re)subscribe answer named.
M._vectors = {
  newer = newer,
  key_of = key_of,
  params_key = params_key,
  answered_by = function(inst)
    instance = inst or {} -- no name: an era of its own, like a new connection's
  end,
}

local known_versions = {}
local function remember(state)
  if type(state) == 'table' and state.kind and state.id and newer(known_versions, key_of(state), state) then
    known[key_of(state)] = state
  end
end

local safe = rpc.safe -- a user's callback that throws is reported; the rest goes on

local function deliver(sub, state)
  if newer(sub.held, key_of(state), state) then
    remember(state)
    safe(sub.on_state, state)
  end
end

local function tell_error(sub, err)
  sub.error = err
  safe(sub.on_error, err)
end

-- What configure set on this connection (merged: members not given keep their
-- value, `values` by name), sent again first on every new connection, since a
-- restarted server starts with its default environment and no token.
local configured = nil

local function merge_configured(params)
  local merged = vim.deepcopy(configured or {})
  for k, v in pairs(params or {}) do
    if k == 'values' and type(v) == 'table' and type(merged.values) == 'table' then
      for name, value in pairs(v) do
        merged.values[name] = value
      end
    else
      merged[k] = vim.deepcopy(v)
    end
  end
  configured = merged
end

-- The version up to which a subscription has every change: its subscribe answer's
-- `version`, then each `through` of the connection. A reconnect resumes from it.
local function saw_version(sub, version)
  if type(version) == 'number' and version >= (sub.resume_version or 0) then
    sub.resume_version = version
  end
end

local function send_subscribe(sub)
  sub.name = nil
  local c = conn
  subscribing = subscribing + 1
  local params = { topics = sub.topics }
  -- Only what changed while away, when the same server still knows; not after an
  -- error was shown (a state delivered again clears it).
  if sub.instance and sub.resume_version and not sub.error then
    params.since = { instance = sub.instance, version = sub.resume_version }
  end
  conn:request('subscribe', params, function(err, res)
    if c ~= conn then
      return -- an old connection's answer (setup() replaced it): the new one subscribes
    end
    subscribing = subscribing - 1
    local held_early = res and early[res.subscription]
    if subscribing == 0 then
      early = {} -- no answer is left to claim them
    elseif res then
      early[res.subscription] = nil
    end
    if res and type(res.instance) == 'string' then
      instance = res.instance
    end
    if sub.closed then
      if res then
        conn:request('unsubscribe', { subscription = res.subscription })
      end
    elseif err then
      tell_error(sub, err)
    else
      sub.name, sub.error = res.subscription, nil
      by_name[res.subscription] = sub
      if sub.instance ~= res.instance then
        sub.resume_version = nil
      end
      sub.instance, sub.reset = res.instance, res.reset
      saw_version(sub, res.version)
      for _, state in ipairs(res.snapshot or {}) do
        deliver(sub, state)
      end
      for _, state in pairs(held_early or {}) do
        deliver(sub, state)
      end
    end
  end)
end

local function on_notification(method, params)
  if method == 'statsChanged' and params then
    -- Written after the subscribe answer, never before: nothing to hold early. No
    -- version: each push is newer than the last.
    local sub = by_name[params.subscription]
    if sub and type(params.stats) == 'table' then
      sub.stats = params.stats
      safe(sub.on_state, params.stats)
    end
  elseif method == 'mutationOutcome' and params then
    -- Like statsChanged: written after the subscribe answer, never before.
    local sub = by_name[params.subscription]
    if sub and type(params.entry) == 'table' then
      safe(sub.on_state, params.entry)
    end
  elseif method == 'stateChanged' and params then
    if params.through then -- every change up to it of this connection's subscriptions is here
      for _, each in pairs(by_name) do
        saw_version(each, params.through)
      end
    end
    local sub = by_name[params.subscription]
    if sub and params.state then
      deliver(sub, params.state)
    elseif params.state and subscribing > 0 and type(params.subscription) == 'string' then
      -- The server writes a turn's notifications before its replies: this may be for
      -- the subscription whose answer comes next. The newest per key waits.
      early[params.subscription] = early[params.subscription] or {}
      early[params.subscription][key_of(params.state)] = params.state
    end
  end
end

local down_reported = false -- subscriptions were told the server is unreachable
local quiet = false -- setup({ quiet = true }): no notices about the connection

-- setup({ tell_failures = true }): the intents the server's ledger says failed
-- (refused, rolled back) are told with vim.notify, "your follow of artist/kaws
-- failed: …": as they fail (the mutations topic), and on each connect those that
-- failed since the last time, so a follow rolled back while Neovim was closed is not
-- lost. `seen_file` (default stdpath('state')/netmodel-mutations-seen) keeps where
-- the next connect reads from: the last seq before the first intent not settled yet
-- (it may still fail while Neovim is closed), and on its second line the failures
-- after that already told, so each failure is told once.
local tell = nil -- { file = path, sub = the mutations subscription } when on

local function read_seen()
  local f = tell and io.open(tell.file, 'r')
  if not f then
    return 0, {}
  end
  local since = tonumber(f:read('*l') or '') or 0
  local told = {}
  for seq in (f:read('*l') or ''):gmatch('%d+') do
    told[tonumber(seq)] = true
  end
  f:close()
  return since, told
end

local function write_seen(since, told)
  vim.fn.mkdir(vim.fn.fnamemodify(tell.file, ':h'), 'p')
  local above = {}
  for seq in pairs(told) do
    if seq > since then
      table.insert(above, seq)
    end
  end
  table.sort(above)
  local f = io.open(tell.file, 'w')
  if f then
    f:write(tostring(since), '\n', table.concat(above, ' '), '\n')
    f:close()
  end
end

-- "your follow of artist/kaws failed: <the error's message>"
function M.mutation_message(entry)
  local what = entry.intent and 'follow' or 'unfollow'
  local err = type(entry.error) == 'table' and entry.error.message or entry.outcome
  return ('your %s of %s/%s failed: %s'):format(what, entry.kind, entry.id, err)
end

function M.mutation_failed(entry)
  return entry.outcome == 'refused' or entry.outcome == 'rolledBack'
end

-- Not settled yet: it may still fail.
local function unsettled(entry)
  return entry.outcome == 'pending' or entry.outcome == 'waiting'
end

-- Tells `entry` once, if it failed; true when it was told now.
local function tell_once(entry, told)
  if not M.mutation_failed(entry) or told[entry.seq] then
    return false
  end
  told[entry.seq] = true
  vim.notify('netmodel: ' .. M.mutation_message(entry), vim.log.levels.WARN)
  return true
end

local function tell_live(entry)
  if not tell or type(entry) ~= 'table' or type(entry.seq) ~= 'number' then
    return
  end
  local since, told = read_seen()
  if entry.seq > since and tell_once(entry, told) then
    write_seen(since, told)
  end
end

-- Reads the ledger from `since`, page by page; `keep` is where the next connect
-- starts (nil until an unsettled entry is met).
local function tell_failures(c, since, told, keep)
  c:request('getMutations', { since = since, limit = 1000 }, function(err, res)
    if err or c ~= conn or type(res) ~= 'table' then
      return -- a server without the ledger, or a connection gone: nothing to tell
    end
    if res.last < since then
      return tell_failures(c, 0, {}, nil) -- another state folder's ledger: all of it is new here
    end
    for _, entry in ipairs(res.entries or {}) do
      tell_once(entry, told)
      if keep == nil and unsettled(entry) then
        keep = entry.seq - 1
      end
    end
    if res.more then
      return tell_failures(c, res.next, told, keep)
    end
    write_seen(keep or res.next, told)
  end)
end

local function on_connect()
  by_name, down_reported, early, subscribing, instance = {}, false, {}, 0, nil
  if configured and next(configured) ~= nil then
    -- Written before the subscriptions and the queued requests: they run configured.
    conn:request('configure', vim.deepcopy(configured), function(err)
      if err and not quiet then
        vim.notify('netmodel: configure refused after reconnecting: ' .. tostring(err.message), vim.log.levels.WARN)
      end
    end)
  end
  for sub in pairs(subs) do
    send_subscribe(sub)
  end
  if tell then
    local since, told = read_seen()
    tell_failures(conn, since, told, nil)
  end
end

-- No server could be reached: each subscription is told once (a button shows it),
-- and the connection keeps trying while there are any (rpc: opts.wanted).
local function on_down(why)
  if down_reported then
    return
  end
  down_reported = true
  for sub in pairs(subs) do
    tell_error(sub, { code = rpc.NOT_CONNECTED, message = why })
  end
end

-- A server that cannot start was given up on: said once, with its own words, and
-- on each subscription (a button shows it).
local function on_spawn_failed(why)
  if not quiet then
    vim.notify('netmodel: ' .. why, vim.log.levels.ERROR)
  end
  for sub in pairs(subs) do
    tell_error(sub, { code = rpc.NOT_CONNECTED, message = why })
  end
end


local function on_lost(why)
  if not quiet then
    vim.notify('netmodel: connection lost, reconnecting (' .. why .. ')', vim.log.levels.WARN)
  end
end

-- The connection ended for good (the spawned server died, or reconnecting gave
-- up): each subscription is told, as the other clients end theirs with a
-- connection error. The handles stay: the next request or setup() subscribes them
-- again.
local function on_end(why)
  by_name = {}
  if not quiet then
    vim.notify('netmodel: connection lost (' .. why .. ')', vim.log.levels.WARN)
  end
  for sub in pairs(subs) do
    tell_error(sub, { code = rpc.CONNECTION_LOST, message = why })
  end
end

-- opts: cmd (the serve command), socket (path, false for none, default
-- M.default_socket()), state_dir, spawn (default true), reconnect ({ max_attempts
-- = N }: give up after N tries; default for ever), quiet (no connection notices),
-- tell_failures (tell each failed intent as it fails, and on each connect those of the
-- ledger not told yet; seen_file: where the seqs told are kept).
function M.setup(opts)
  opts = opts or {}
  if conn then
    conn:stop()
  end
  quiet = opts.quiet == true
  if tell then
    tell.sub.unsubscribe()
  end
  tell = opts.tell_failures
      and { file = opts.seen_file or (vim.fn.stdpath('state') .. '/netmodel-mutations-seen') }
    or nil
  local socket = opts.socket
  if socket == nil then
    socket = M.default_socket()
  end
  conn = rpc.new({
    cmd = opts.cmd or { vim.env.NETMODEL_BIN or 'netmodel', 'serve' },
    socket = socket,
    state_dir = opts.state_dir,
    spawn = opts.spawn ~= false,
    on_connect = on_connect,
    on_notification = on_notification,
    on_lost = on_lost,
    on_end = on_end,
    on_down = on_down,
    on_spawn_failed = on_spawn_failed,
    max_attempts = type(opts.reconnect) == 'table' and opts.reconnect.max_attempts or nil,
    wanted = function()
      return next(subs) ~= nil or tell ~= nil
    end,
  })
  known, known_versions, by_name, down_reported, configured = {}, {}, {}, false, nil
  early, subscribing, instance = {}, 0, nil
  if tell then
    -- Subscribed before the ledger is read on each connect: nothing fails in between
    -- untold (and what both give is told once).
    tell.sub = M.subscribe('mutations', tell_live)
  end
  if next(subs) ~= nil or tell then
    -- Buttons and subscriptions carry over: subscribe them on the new connection. With
    -- tell_failures, at once: what failed while Neovim was closed is told now.
    conn:connect()
  end
  if not M._autocmd then
    M._autocmd = vim.api.nvim_create_autocmd('VimLeavePre', {
      callback = function()
        M.stop()
      end,
    })
  end
  return M
end

local function connection()
  if not conn then
    M.setup()
  end
  return conn
end

function M._connection() -- for tests
  return connection()
end

function M.stop()
  if conn then
    conn:stop()
  end
end

-- {status, transport = 'socket'|'spawn', pid (of a spawned server), socket}
function M.info()
  local c = connection()
  return { status = c.status, transport = c.transport, pid = c.pid, socket = c.opts.socket }
end

-- callback(err, result): err is the JSON-RPC error object ({code, message, data}).
-- opts.timeout_ms: cancel the request and answer TIMEOUT when it elapses first.
-- Returns the request id, for cancel().
function M.request(method, params, callback, opts)
  if method == 'configure' then
    local c, sent = connection(), vim.deepcopy(params or {})
    return c:request(method, params, function(err, result)
      if not err and c == conn then
        merge_configured(sent) -- kept once taken: sent again after a reconnect
      end
      if callback then
        callback(err, result)
      end
    end, opts)
  end
  return connection():request(method, params, callback, opts)
end

-- configure({ environment = …, authToken = … (vim.NIL forgets it), values = {…} }
-- [, callback]): also sent again, merged, on every new connection (a reconnect,
-- a server started again).
function M.configure(params, callback)
  return M.request('configure', params or vim.empty_dict(), callback)
end

-- Cancels a request (`$/cancelRequest`): its callback gets CANCELLED now. False
-- if it was answered already.
function M.cancel(id)
  return conn ~= nil and conn:cancel(id)
end

function M.notify(method, params)
  connection():notify(method, params)
end

-- Returns result, err; waits at most timeout_ms (default 5000) and then cancels.
function M.request_sync(method, params, timeout_ms)
  timeout_ms = timeout_ms or 5000
  local done, err, result
  local c = connection()
  local id = M.request(method, params, function(e, r)
    done, err, result = true, e, r
  end, { timeout_ms = timeout_ms })
  -- The request's own timer answers TIMEOUT; this wait is a backstop.
  if not vim.wait(timeout_ms + 1000, function()
    return done
  end, 10) then
    c:cancel(id, { code = rpc.TIMEOUT, message = method .. ' timed out' })
  end
  return result, err
end

-- Mutation replies (and the rolled-back state of a failure) feed the known states.
local function mutate(method, params, callback)
  M.request(method, params, function(err, state)
    remember(state or (err and err.data and err.data.state))
    if callback then
      callback(err, state)
    end
  end)
end

-- follow(kind, id [, opts] [, callback]); opts.await waits for the backend.
local function mutation(method)
  return function(kind, id, opts, callback)
    if type(opts) == 'function' then
      opts, callback = nil, opts
    end
    mutate(method, { kind = kind, id = id, await = opts and opts.await or nil }, callback)
  end
end
M.follow = mutation('follow')
M.unfollow = mutation('unfollow')

function M.set_following(kind, id, following, opts, callback)
  if type(opts) == 'function' then
    opts, callback = nil, opts
  end
  local params = { kind = kind, id = id, following = following, await = opts and opts.await or nil }
  mutate('setFollowState', params, callback)
end

-- Whether an entity state's intent waits for credentials: pending with -32003 (the
-- backend answered 401/403); the server sends it again after configure {authToken}.
function M.needs_credentials(state)
  return type(state) == 'table' and state.pending == true and type(state.error) == 'table' and state.error.code == protocol.errors.UNAUTHORIZED
end

-- The newest state seen of an entity, or nil.
function M.state(kind, id)
  return known[kind .. '/' .. id]
end

-- Whether to follow, pressing a button showing `state`: not while following, nor
-- while a follow request awaits approval (`requested`: pressing it withdraws the
-- request, as Mastodon's own UI does; a second follow would be ignored).
function M.follow_on_press(state)
  return not (state.following or state.requested == true)
end

-- Flips what is shown; asks the server first when nothing is known here.
function M.toggle(kind, id, callback)
  local function flip(state)
    M.set_following(kind, id, M.follow_on_press(state), callback)
  end
  local state = M.state(kind, id)
  if state and (state.following ~= nil or state.requested == true) then
    return flip(state)
  end
  M.request('getFollowState', { kind = kind, id = id }, function(err, s)
    remember(s)
    if err then
      return callback and callback(err)
    end
    flip(s)
  end)
end

-- A topic table from a table, or from `netmodel watch`'s shorthand: "entity",
-- "entity:KIND", "entity:KIND/ID", "list:NAME" (a list with no params), "stats", or
-- "mutations" (each intent's outcome, the ledger's entry given to on_state).
function M.topic(spec)
  if type(spec) == 'table' then
    return spec
  end
  if type(spec) ~= 'string' then
    error(('netmodel: a topic is a table or a string, not %s'):format(type(spec)), 2)
  end
  local head, rest = spec:match('^([^:]*):(.*)$')
  head, rest = head or spec, rest or ''
  if head == 'list' and rest ~= '' then
    return { type = 'list', list = rest, params = vim.empty_dict() }
  end
  if spec == 'stats' or spec == 'mutations' then
    return { type = spec }
  end
  if head ~= 'entity' then
    error(('netmodel: unknown topic %q (want %s)'):format(spec, protocol.topic_shorthands_text), 2)
  end
  local t = { type = 'entity' }
  if rest ~= '' then
    local kind, id = rest:match('^([^/]*)/(.*)$')
    t.kind, t.id = kind or rest, id
  end
  return t
end

-- topics: one topic or a list, tables ({type = 'entity', kind = K, id = I} or
-- {type = 'list', list = L, params = vim.empty_dict()}) or shorthands (M.topic).
-- on_state(state) gets the snapshot and every newer state (a stats topic: the
-- server's figures, a `stats` table with `uptimeMs` and no kind or list, also kept
-- as sub.stats, at most once a second while they change); on_error(err) a
-- refused subscribe, or the connection ended for good.
-- Returns a handle with :unsubscribe(); it is re-subscribed after a reconnect.
function M.subscribe(topics, on_state, on_error)
  if type(topics) ~= 'table' or topics.type then
    topics = { topics }
  end
  local list = {}
  for i, t in ipairs(topics) do
    list[i] = M.topic(t)
  end
  topics = list
  local sub = { topics = topics, on_state = on_state, on_error = on_error, held = {} }
  function sub.unsubscribe()
    if sub.closed then
      return
    end
    sub.closed, subs[sub] = true, nil
    if sub.name and conn.status == 'connected' then
      by_name[sub.name] = nil
      conn:request('unsubscribe', { subscription = sub.name })
    end
  end
  subs[sub] = true
  local c = connection()
  if c.status == 'connected' then
    send_subscribe(sub)
  else
    c:connect() -- on_connect subscribes every handle
  end
  return sub
end

function M.button(...)
  return require('netmodel.button').new(...)
end

function M.open_list(...)
  return require('netmodel.list').open(...)
end

-- Reports a failed request; the callback commands use.
function M.report(err)
  if err then
    vim.notify(('netmodel: %s (%s)'):format(err.message, tostring(err.code)), vim.log.levels.ERROR)
  end
end

return M
