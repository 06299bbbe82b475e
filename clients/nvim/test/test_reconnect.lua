-- The server restarts on the same socket: the plugin reconnects, subscribes
-- again, and takes the new server's states (another instance).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

H.test('reconnects and re-subscribes after the server restarts', function()
  local dir = H.tmpdir()
  local srv = H.start_server(dir)
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'Banksy' })
  local b = nm.button(buf, 0, 'artist', 'banksy')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, 'first state')
  -- raise the version above what the new server will send
  for _, method in ipairs({ 'follow', 'unfollow', 'follow', 'unfollow' }) do
    local _, err = nm.request_sync(method, { kind = 'artist', id = 'banksy', await = true })
    H.eq(nil, err, method .. ' error')
  end
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]' and b.state.version >= 6
  end, 'settled at a high version')
  local old_version, old_instance = b.state.version, b.sub.instance

  vim.loop.kill(srv.pid, 'sigkill') -- leaves a stale socket file behind
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')

  local srv2 = H.start_server(dir)
  H.wait(10000, function()
    return nm.info().status == 'connected'
  end, 'reconnect')
  local code, _, err = H.call(srv2.socket, 'follow', 'kind=artist', 'id=banksy', 'await:=true')
  H.eq(0, code, 'follow by another client: ' .. err)
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Following ]'
  end, function()
    return "the other client's follow on the button (at " .. H.virt_text(buf, 0) .. ')'
  end)
  H.ok(b.state.version > old_version, 'versions go on across a restart on one state folder')
  H.ok(b.sub.instance and b.sub.instance ~= old_instance, 'another instance: ' .. tostring(b.sub.instance))
end)

H.test('a reconnect to the same server process keeps the versions held', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local seen = {}
  local sub = nm.subscribe({ type = 'entity', kind = 'artist', id = 'same' }, function(state)
    table.insert(seen, state.version)
  end)
  local _, err = nm.request_sync('follow', { kind = 'artist', id = 'same', await = true })
  H.eq(nil, err, 'follow error')
  H.wait(5000, function()
    return sub.instance ~= nil and #seen >= 2
  end, 'the states of the follow')
  local instance = sub.instance
  local conn = nm._connection()
  conn:_lost(conn.gen, 'dropped by the test', 'eof') -- this side drops; the server lives on
  H.wait(5000, function()
    return nm.info().status == 'connected' and sub.name ~= nil
  end, 'reconnect')
  H.eq(instance, sub.instance, 'same instance')
  _, err = nm.request_sync('unfollow', { kind = 'artist', id = 'same', await = true })
  H.eq(nil, err, 'unfollow error')
  H.wait(5000, function()
    local s = nm.state('artist', 'same')
    return s and s.confirmed == false
  end, 'the unfollow')
  vim.wait(200)
  for i = 2, #seen do
    H.ok(seen[i] > seen[i - 1], 'a state delivered twice or out of order: ' .. vim.inspect(seen))
  end
end)

H.test('a reconnect to the same server process resumes: only what changed is sent', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local seen = {}
  local topics = {}
  for n = 1, 20 do
    topics[n] = { type = 'entity', kind = 'artist', id = 'resume-' .. n }
  end
  local sub = nm.subscribe(topics, function(state)
    seen[state.id] = (seen[state.id] or 0) + 1
  end)
  H.wait(5000, function()
    return vim.tbl_count(seen) == 20 and sub.resume_version ~= nil
  end, 'every state fetched')
  local before = vim.deepcopy(seen)
  local conn = nm._connection()
  conn:_lost(conn.gen, 'dropped by the test', 'eof') -- this side drops; the server lives on
  H.wait(5000, function()
    return nm.info().status == 'connected' and sub.name ~= nil
  end, 'reconnect')
  H.eq(false, sub.reset, 'resumed, not a whole snapshot')
  vim.wait(200)
  H.eq(before, seen, 'nothing changed while away: no state delivered again')
  local _, err = nm.request_sync('follow', { kind = 'artist', id = 'resume-7', await = true })
  H.eq(nil, err, 'follow error')
  H.wait(5000, function()
    local s = nm.state('artist', 'resume-7')
    return s and s.confirmed == true
  end, 'a change after the resume still arrives')
end)

H.finish()
