-- Where the plugin behaves as the Python and Node clients do (docs/clients.md):
-- client-made error codes outside JSON-RPC's reserved range, timeouts and cancel
-- on async requests, topic shorthands, a spawned server not started again behind
-- the user's back, a reconnect limit, and notices that can be silenced.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

local function reserved(code)
  return code >= -32768 and code <= -32000
end

-- Calls fn(callback) and waits for that callback; returns its err, result.
local function answer(ms, fn)
  local done, err, res
  fn(function(e, r)
    done, err, res = true, e, r
  end)
  H.wait(ms, function()
    return done
  end, 'the callback')
  return err, res
end

H.test("the plugin's own error codes are outside JSON-RPC's reserved range", function()
  for _, name in ipairs({ 'CONNECTION_LOST', 'TIMEOUT', 'NOT_CONNECTED', 'CANCELLED' }) do
    H.ok(type(nm[name]) == 'number' and not reserved(nm[name]), name .. ' = ' .. tostring(nm[name]))
  end
  H.eq({ -31999, -31998, -31997, -31996 }, { nm.CONNECTION_LOST, nm.TIMEOUT, nm.NOT_CONNECTED, nm.CANCELLED }, 'codes')
  local dir = H.tmpdir()
  nm.setup({ socket = dir .. '/none.sock', spawn = false })
  local _, err = nm.request_sync('stats', {})
  H.eq(nm.NOT_CONNECTED, err and err.code, 'no server')
end)

H.test('an async request times out, cancelled on the server', function()
  local srv = H.start_server(H.tmpdir(), { '--simulate', 'latency=3000' })
  nm.setup({ socket = srv.socket, spawn = false })
  local t0 = vim.loop.hrtime()
  local err = answer(5000, function(cb)
    nm.request('follow', { kind = 'artist', id = 'slow', await = true }, cb, { timeout_ms = 200 })
  end)
  local ms = (vim.loop.hrtime() - t0) / 1e6
  H.eq(nm.TIMEOUT, err and err.code, 'error code')
  H.ok(ms < 2000, ('answered after %d ms'):format(ms))
  -- the connection goes on: a later request is answered
  local stats, e2 = nm.request_sync('stats', {})
  H.eq(nil, e2, 'stats after the timeout')
  H.ok(stats, 'stats')
end)

H.test('cancel() answers an async request CANCELLED at once', function()
  local srv = H.start_server(H.tmpdir(), { '--simulate', 'latency=3000' })
  nm.setup({ socket = srv.socket, spawn = false })
  local calls, got = 0, nil
  local id = nm.request('follow', { kind = 'artist', id = 'cancelled', await = true }, function(e)
    calls, got = calls + 1, e
  end)
  H.wait(2000, function()
    return nm.info().status == 'connected'
  end, 'connected')
  H.eq(true, nm.cancel(id), 'cancel() of a waiting request')
  H.eq(1, calls, 'callback called at once')
  H.eq(nm.CANCELLED, got and got.code, 'error code')
  H.eq(false, nm.cancel(id), 'cancel() again')
  vim.wait(300)
  H.eq(1, calls, 'callback called once')
end)

H.test('topic shorthands as netmodel watch takes them', function()
  H.eq({ type = 'entity' }, nm.topic('entity'), 'entity')
  H.eq({ type = 'entity', kind = 'artist' }, nm.topic('entity:artist'), 'entity:KIND')
  H.eq({ type = 'entity', kind = 'artist', id = 'banksy' }, nm.topic('entity:artist/banksy'), 'entity:KIND/ID')
  local l = nm.topic('list:following/artist')
  H.eq('following/artist', l.list, 'list name')
  H.eq('{}', vim.json.encode(l.params), 'list params, an object')
  H.ok(not pcall(nm.topic, 'artist/banksy'), 'unknown shorthand refused')

  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local seen = {}
  local sub = nm.subscribe('entity:artist/shorthand', function(s)
    table.insert(seen, s)
  end)
  H.wait(5000, function()
    return #seen >= 1
  end, 'the snapshot through a shorthand')
  H.eq('shorthand', seen[1].id, 'state id')
  local lists = {}
  local lsub = nm.subscribe({ 'list:following/artist' }, function(s)
    table.insert(lists, s)
  end, function(e)
    H.fail('list subscribe refused: ' .. vim.inspect(e))
  end)
  H.wait(5000, function()
    return #lists >= 1
  end, 'the list snapshot through a shorthand')
  sub.unsubscribe()
  lsub.unsubscribe()
end)

H.test('a spawned server that dies is not started again; the next request does', function()
  local dir = H.tmpdir()
  nm.setup({ cmd = { H.bin, 'serve' }, socket = false, state_dir = dir .. '/state', quiet = true })
  local errors, states = {}, {}
  local sub = nm.subscribe('entity:gene/brca1', function(s)
    table.insert(states, s)
  end, function(e)
    table.insert(errors, e)
  end)
  H.wait(5000, function()
    return #states >= 1
  end, 'first state')
  local first = nm.info().pid
  H.track_pid(first)
  vim.loop.kill(first, 'sigkill')
  H.wait(5000, function()
    return #errors >= 1
  end, 'the subscription told of the end')
  H.eq(nm.CONNECTION_LOST, errors[1].code, 'error code')
  vim.wait(1000) -- a respawn would come within 0.1 s
  H.eq('idle', nm.info().status, 'status (not spawned again)')
  H.eq(nil, nm.info().pid, 'no new server')
  -- the next request starts one, and the subscription comes back with it
  local _, err = nm.request_sync('follow', { kind = 'gene', id = 'brca1' })
  H.eq(nil, err, 'follow error')
  H.track_pid(nm.info().pid)
  H.wait(5000, function()
    return states[#states].following == true
  end, 'the subscription, subscribed again')
  sub.unsubscribe()
end)

H.test('reconnect gives up after reconnect.max_attempts', function()
  local srv = H.start_server(H.tmpdir())
  local notices = {}
  local notify = vim.notify
  vim.notify = function(msg)
    table.insert(notices, msg)
  end
  nm.setup({ socket = srv.socket, spawn = false, reconnect = { max_attempts = 2 } })
  local errors, states = {}, {}
  local sub = nm.subscribe('entity:artist/giveup', function(s)
    table.insert(states, s)
  end, function(e)
    table.insert(errors, e)
  end)
  H.wait(5000, function()
    return #states >= 1
  end, 'first state')
  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    for _, e in ipairs(errors) do
      if e.code == nm.CONNECTION_LOST and e.message:find('gave up', 1, true) then
        return true
      end
    end
  end, function()
    return 'the subscription told the client gave up (errors ' .. vim.inspect(errors) .. ')'
  end)
  H.eq('idle', nm.info().status, 'status after giving up')
  vim.notify = notify
  H.ok(#notices >= 1, 'notices without quiet')
  sub.unsubscribe()
end)

H.test('quiet = true silences the connection notices', function()
  local srv = H.start_server(H.tmpdir())
  local notices = {}
  local notify = vim.notify
  vim.notify = function(msg)
    table.insert(notices, msg)
  end
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  local states = {}
  local sub = nm.subscribe('entity:artist/quiet', function(s)
    table.insert(states, s)
  end)
  H.wait(5000, function()
    return #states >= 1
  end, 'first state')
  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')
  vim.wait(500)
  vim.notify = notify
  H.eq({}, notices, 'notices')
  sub.unsubscribe()
  nm.stop()
end)

H.finish()
