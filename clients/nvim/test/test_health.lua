-- :checkhealth netmodel: the binary, its version, the socket, the protocol version.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')
local health = require('netmodel.health')

-- The report :checkhealth writes, as one string.
local function checkhealth()
  vim.cmd('checkhealth netmodel')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  return text
end

local function has(text, needle)
  H.ok(text:find(needle, 1, true), ('%q not in the report:\n%s'):format(needle, text))
end

H.test('the protocol version is the schema one', function()
  local schema = vim.json.decode(table.concat(vim.fn.readfile(H.root .. '/../../schema/openrpc.json'), '\n'))
  H.eq(schema.components.schemas.InitializeResult.properties.protocolVersion.const, health.protocol_version)
end)

H.test('a running server: found, version, reachable, protocol', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ cmd = { H.bin, 'serve' }, socket = srv.socket, spawn = false })
  local version = vim.trim(vim.fn.system({ H.bin, '--version' }))
  local report = checkhealth()
  has(report, 'OK') -- 0.7: "- OK: …"; 0.10: "- OK …"
  has(report, 'found ' .. H.bin)
  has(report, version)
  has(report, srv.socket .. ' reachable: netmodel ')
  has(report, 'protocol version ' .. health.protocol_version)
  -- the instance is in serverInfo: the one `stats` names
  local stats = nm.request_sync('stats', {})
  nm.stop()
  H.ok(type(stats.instance) == 'string' and stats.instance ~= '', 'stats instance: ' .. vim.inspect(stats.instance))
  has(report, ', instance ' .. stats.instance)
  H.ok(not report:find('ERROR', 1, true), 'no error: ' .. report)
  H.eq('disconnected', nm.info().status == 'connected' and 'connected' or 'disconnected', 'the check used its own connection')
end)

H.test('another protocol version is an error', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ cmd = { H.bin, 'serve' }, socket = srv.socket, spawn = false })
  health.protocol_version = '0.9'
  local report = checkhealth()
  health.protocol_version = '1.0'
  has(report, 'ERROR')
  has(report, 'the server speaks protocol 1.0; this plugin speaks 0.9')
end)

H.test('no binary and no server', function()
  local dir = H.tmpdir()
  nm.setup({ cmd = { '/nonexistent/netmodel', 'serve' }, socket = dir .. '/none.sock', spawn = false })
  local report = checkhealth()
  has(report, '/nonexistent/netmodel not found')
  has(report, 'no server listens on ' .. dir .. '/none.sock')
end)

H.finish()
