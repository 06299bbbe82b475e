-- The stats topic: the server's figures reach on_state, first right after
-- subscribing, then when they change.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('stats: pushed after subscribing, then when the figures change', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  H.eq({ type = 'stats' }, nm.topic('stats'), 'the shorthand')
  local seen = {}
  local sub = nm.subscribe('stats', function(stats)
    table.insert(seen, stats)
  end)
  H.wait(5000, function()
    return #seen == 1
  end, 'the first figures')
  H.eq(1, seen[1].subscriptions, 'subscriptions')
  H.eq(seen[1], sub.stats, 'sub.stats')
  local code = H.call(srv.socket, 'follow', 'kind=artist', 'id=banksy', 'await:=true')
  H.eq(0, code, 'follow')
  H.wait(5000, function()
    return #seen >= 2 and seen[#seen].backend.mutations == 1
  end, function()
    return 'figures with the follow: ' .. vim.inspect(seen)
  end)
  H.ok(seen[#seen].uptimeMs >= seen[1].uptimeMs + 900, 'at most once a second')
  sub.unsubscribe()
end)

H.test('inspect: asked through the generic request, like every method', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local res, err = nm.request_sync('inspect', { sections = { 'connections', 'entities' }, limit = 5 })
  H.eq(nil, err, 'inspect')
  H.eq(5, res.limit, 'limit')
  H.eq(1, res.connections.total, 'this connection')
  H.eq(0, res.entities.total, 'nothing unsettled')
  H.eq(nil, res.lists, 'only the sections asked for')
end)

H.finish()
