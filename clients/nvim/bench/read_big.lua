-- How long the plugin takes to read one big message from a real server: a
-- `getEntity` whose attributes (the artsy demo's detail answer, replaced by a fault
-- rule) hold N MB. Run from the repository:
--   NETMODEL_BIN=… nvim --headless -u NONE -i NONE -n --cmd "set rtp^=clients/nvim" \
--     -c "luafile clients/nvim/bench/read_big.lua"
-- NETMODEL_BENCH_MB: the sizes, comma-separated (default 5,30).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h') .. '/test/helpers.lua')
local uv = vim.loop
local nm = require('netmodel')

local demo = H.start_demo('artsy')
local srv = H.start_server(H.tmpdir(), {
  '--backend=rest',
  '--config=' .. demo.config(),
  '--max-unread-bytes=400000000',
})
nm.setup({ socket = srv.socket, spawn = false, quiet = true })
for mb in (os.getenv('NETMODEL_BENCH_MB') or '5,30'):gmatch('%d+') do
  local id = 'big' .. mb
  local blurb = string.rep('x', tonumber(mb) * 1000000)
  demo.control('POST', 'faults', { { method = 'GET', path = '/api/v1/artist/' .. id .. '$', status = 200, body = { id = id, blurb = blurb }, times = 1 } })
  -- the server holds it once read: the second getEntity is the one timed
  local _, err = nm.request_sync('getEntity', { kind = 'artist', id = id }, 600000)
  assert(not err, vim.inspect(err))
  local t0 = uv.hrtime()
  local state, e = nm.request_sync('getEntity', { kind = 'artist', id = id }, 600000)
  local s = (uv.hrtime() - t0) / 1e9
  assert(not e and #state.attributes.blurb == #blurb, vim.inspect(e))
  io.stdout:write(('%s MB message: %.2f s\n'):format(mb, s))
end
H.finish()
