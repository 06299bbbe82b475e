-- Nothing hangs (issue 18): a button made before its server starts, a request
-- after stop(), setup() called again, params the server could not read.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

local function line_buffer(text)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { text })
  return buf
end

H.test('a button made while no server runs shows why, and comes up when it starts', function()
  local dir = H.tmpdir()
  nm.setup({ socket = dir .. '/s.sock', spawn = false })
  local buf = line_buffer('Banksy')
  nm.button(buf, 0, 'artist', 'banksy')
  H.wait(5000, function()
    return H.virt_text(buf, 0):find('✗ cannot connect', 1, true) ~= nil
  end, function()
    return 'the error on the button (at ' .. H.virt_text(buf, 0) .. ')'
  end)
  H.start_server(dir)
  H.wait(10000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, function()
    return 'the button to come up (at ' .. H.virt_text(buf, 0) .. ')'
  end)
end)

H.test('a request after stop() gets its callback', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local _, err = nm.request_sync('stats', {})
  H.eq(nil, err, 'stats before stop')
  nm.stop()
  local res, err2 = nm.request_sync('stats', {}, 2000)
  H.eq(nil, res, 'result')
  H.eq(nm.NOT_CONNECTED, err2 and err2.code, 'error code (not a timeout)')
end)

H.test('buttons carry over when setup() is called again', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local buf = line_buffer('Kaws')
  nm.button(buf, 0, 'artist', 'kaws')
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Follow ]'
  end, 'first state')
  nm.setup({ socket = srv.socket, spawn = false })
  local code, _, err = H.call(srv.socket, 'follow', 'kind=artist', 'id=kaws', 'await:=true')
  H.eq(0, code, 'follow by another client: ' .. err)
  H.wait(5000, function()
    return H.virt_text(buf, 0) == '[ Following ]'
  end, function()
    return 'the follow on the button after setup() (at ' .. H.virt_text(buf, 0) .. ')'
  end)
end)

H.test('params that are not UTF-8 raise at once; an id-less error fails waiting requests', function()
  local srv = H.start_server(H.tmpdir(), { '--simulate', 'latency=3000' })
  nm.setup({ socket = srv.socket, spawn = false })
  local ok, e = pcall(nm.request, 'follow', { kind = 'artist', id = 'a\255b' }, function() end)
  H.eq(false, ok, 'request with invalid UTF-8 raised')
  H.ok(tostring(e):find('/id is not valid UTF-8', 1, true), 'message names the field: ' .. tostring(e))
  H.eq(false, (pcall(nm.request, 'stats', { ['k\192\128'] = 1 })), 'an overlong key raised')
  local _, err = nm.request_sync('getFollowState', { kind = 'artist', id = 'é😀' }, 5000)
  H.eq(nil, err, 'valid UTF-8 goes through')

  local got
  nm.request('follow', { kind = 'artist', id = 'b', await = true }, function(e2)
    got = e2 or 'no error'
  end)
  vim.wait(200)
  nm._connection().writer:write('{"jsonrpc":"2.0","id":\n') -- a line the server cannot read
  H.wait(2000, function()
    return got ~= nil
  end, 'the waiting follow to fail')
  H.eq(-32700, type(got) == 'table' and got.code, 'parse error')
end)

H.finish()
