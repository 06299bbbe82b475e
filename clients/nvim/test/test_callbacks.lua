-- No user callback can break the client (issue 26): a request callback that
-- throws while the connection is lost, a subscription's on_error that throws
-- while no server runs. The others are still called, and the plugin reconnects.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

local reported = {}
local notify = vim.notify
vim.notify = function(msg, level)
  if level == vim.log.levels.ERROR then
    table.insert(reported, msg)
  end
  notify(msg, level)
end

H.test('a request callback that throws on a lost connection: the others called, reconnects', function()
  local dir = H.tmpdir()
  local srv = H.start_server(dir, { '--simulate', 'latency=60000' })
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  local _, err = nm.request_sync('stats', {})
  H.eq(nil, err, 'stats')
  reported = {}
  local answers = {}
  for i = 1, 4 do
    nm.follow('artist', 'x' .. i, { await = true }, function(e)
      table.insert(answers, e and e.code)
      if i % 2 == 1 then
        error('boom ' .. i)
      end
    end)
  end
  H.wait(5000, function()
    local stats = nm.request_sync('stats', {})
    return stats and stats.entitiesPending == 4
  end, 'the four follows waiting on the backend')
  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    return #answers == 4
  end, function()
    return 'every waiting callback (called: ' .. vim.inspect(answers) .. ')'
  end)
  H.eq({ nm.CONNECTION_LOST, nm.CONNECTION_LOST, nm.CONNECTION_LOST, nm.CONNECTION_LOST }, answers, 'codes')
  H.ok(#reported == 2 and reported[1]:find('boom', 1, true), 'each error reported: ' .. vim.inspect(reported))
  H.ok(nm.info().status ~= 'connected', 'not left "connected": ' .. nm.info().status)
  H.start_server(dir)
  local stats, err2 = nm.request_sync('stats', {}, 10000)
  H.eq(nil, err2, 'a request after the restart')
  H.ok(stats and stats.uptimeMs, 'stats answered')
  H.eq('connected', nm.info().status, 'reconnected')
end)

H.test('a subscription on_error that throws does not stop the retries', function()
  local dir = H.tmpdir()
  nm.setup({ socket = dir .. '/s.sock', spawn = false, quiet = true })
  reported = {}
  local errors, states = 0, {}
  nm.subscribe('entity:artist/banksy', function(state)
    table.insert(states, state)
  end, function()
    errors = errors + 1
    error('on_error throws')
  end)
  H.wait(5000, function()
    return errors > 0
  end, 'on_error (no server)')
  H.start_server(dir)
  H.wait(10000, function()
    return #states > 0
  end, 'the snapshot once the server runs')
  H.ok(reported[1] and reported[1]:find('on_error throws', 1, true), 'reported: ' .. vim.inspect(reported))
end)

H.test('an on_state that throws: the rest of the snapshot, the other subscriptions and later states still come', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  reported = {}
  local thrower, other = {}, {}
  nm.subscribe({ 'entity:artist/kaws', 'entity:artist/banksy' }, function(state)
    table.insert(thrower, state.id .. '=' .. tostring(state.following))
    error('on_state throws')
  end)
  nm.subscribe('entity:artist/kaws', function(state)
    table.insert(other, state.following)
  end)
  H.wait(5000, function()
    return #thrower >= 2 and #other >= 1
  end, function()
    return 'both snapshot states, though the first threw (' .. vim.inspect({ thrower, other }) .. ')'
  end)
  local _, err = nm.request_sync('follow', { kind = 'artist', id = 'kaws', await = true })
  H.eq(nil, err, 'follow')
  H.wait(5000, function()
    return other[#other] == true and thrower[#thrower] == 'kaws=true'
  end, function()
    return 'the follow in both (' .. vim.inspect({ thrower, other }) .. ')'
  end)
  H.ok(#reported >= 3 and reported[1]:find('on_state throws', 1, true), 'reported: ' .. vim.inspect(reported))
  H.eq('connected', nm.info().status, 'still connected')
end)

H.finish()
