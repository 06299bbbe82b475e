-- The shared conformance vectors (clients/conformance/vectors.json), fed to the
-- plugin's own logic; the Python and Node suites run the same file.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')
local rpc = require('netmodel.rpc')

local text = table.concat(vim.fn.readfile(H.root .. '/../conformance/vectors.json'), '\n')
local V = vim.json.decode(text, { luanil = { object = true, array = true } })

-- A copy with plain tables, as a user writes them (`{}` has no object marker).
local function plain(v)
  if type(v) ~= 'table' then
    return v
  end
  local t = {}
  for k, x in pairs(v) do
    t[k] = plain(x)
  end
  return t
end

local function name_of(state)
  for name, s in pairs(V.states) do
    if s.version == state.version then
      if s.list and s.list == state.list and vim.deep_equal(plain(s.params), plain(state.params)) then
        return name
      elseif not s.list and s.kind == state.kind and s.id == state.id then
        return name
      end
    end
  end
  H.fail('delivered a state no vector names: ' .. vim.inspect(state))
end

for _, v in ipairs(V.deliver) do
  H.test('deliver: ' .. v.name, function()
    local F = nm._vectors
    local held, seen = {}, {}
    -- what send_subscribe's answer and on_notification do with each state
    local function deliver(name)
      local state = plain(V.states[name])
      if F.newer(held, F.key_of(state), state) then
        table.insert(seen, name_of(state)) -- the name the vectors give it
      end
    end
    F.answered_by(v.instance)
    for _, n in ipairs(v.snapshot) do
      deliver(n)
    end
    for _, step in ipairs(v.steps) do
      if step.notify then
        deliver(step.notify)
      else
        F.answered_by(step.reconnect.instance)
        for _, n in ipairs(step.reconnect.snapshot) do
          deliver(n)
        end
      end
    end
    H.eq(v.expect, seen, 'delivered')
  end)
end

H.test('topics: shorthands and the topic sent', function()
  for _, v in ipairs(V.topics) do
    if v.error then
      H.ok(not pcall(nm.topic, v.spec), 'refused: ' .. v.spec)
    else
      local line = rpc.encode({ jsonrpc = '2.0', id = 1, method = 'subscribe', params = { topics = { nm.topic(v.spec) } } })
      local sent = vim.json.decode(line).params.topics[1]
      H.eq(plain(v.topic), plain(sent), v.spec)
      H.ok(not (v.topic.params and line:find('[]', 1, true)), 'params sent as an object: ' .. line)
    end
  end
end)

H.test('encode: empty params are objects', function()
  for _, v in ipairs(V.encode) do
    local line = rpc.encode({ jsonrpc = '2.0', id = 1, method = v.method, params = plain(v.params) })
    for _, t in ipairs(v.contains) do
      H.ok(line:find(t, 1, true), v.name .. ': ' .. line)
    end
    for _, t in ipairs(v.absent) do
      H.ok(not line:find(t, 1, true), v.name .. ': ' .. line)
    end
  end
end)

H.test('errors: the server error object reaches the callback as it is', function()
  for _, v in ipairs(V.errors) do
    local err = vim.json.decode(vim.json.encode(v.error), { luanil = { object = true, array = true } })
    H.eq(v.code, err.code, v.class)
    if v.state_version then
      H.eq(v.state_version, err.data.state.version, v.class .. ' state')
    end
  end
end)

H.test('client codes', function()
  for name, code in pairs(V.client_codes) do
    H.eq(code, nm[name], name)
  end
end)

H.test('needs credentials', function()
  for _, v in ipairs(V.needs_credentials) do
    H.eq(v.expect, nm.needs_credentials(plain(v.state)), vim.inspect(v.state.error))
  end
end)

-- Nulls kept (vim.NIL), as a caller's params may hold them.
local VN = vim.json.decode(text)

H.test('list keys: canonical params, nulls dropped', function()
  for _, v in ipairs(VN.list_keys) do
    H.eq(v.key, nm._vectors.params_key(v.params), v.name)
    H.eq(nm._vectors.key_of({ list = 'search', params = vim.json.decode(v.key) }),
      nm._vectors.key_of({ list = 'search', params = v.params }), v.name .. ': the list named by the server')
  end
end)

H.test('default socket', function()
  local saved = vim.env.XDG_RUNTIME_DIR
  for _, v in ipairs(V.default_socket) do
    vim.env.XDG_RUNTIME_DIR = v.env and v.env.XDG_RUNTIME_DIR
    H.eq(v.path:gsub('{uid}', tostring(vim.loop.getuid())), nm.default_socket(), vim.inspect(v.env))
  end
  vim.env.XDG_RUNTIME_DIR = saved
end)

-- The generated table (lua/netmodel/protocol.lua, from schema/openrpc.json by
-- scripts/gen-protocol) is what the plugin's names are.
local schema = vim.json.decode(table.concat(vim.fn.readfile(H.root .. '/../../schema/openrpc.json'), '\n'))
local ext = schema['x-netmodel-protocol']
local protocol = require('netmodel.protocol')

local function upper(name)
  return (name:gsub('(%l)(%u)', '%1_%2'):upper())
end

H.test('error codes are the table', function()
  local n = 0
  for name, e in pairs(schema.components.errors) do
    H.eq(e.code, protocol.errors[upper(ext.errorNames.renamed[name] or name)], name)
    n = n + 1
  end
  H.eq(n, vim.tbl_count(protocol.errors), 'as many as the schema')
  for name, code in pairs(ext.clientErrors.codes) do
    H.eq(code, nm[upper(name)], name)
    H.eq(code, rpc[upper(name)], name)
  end
end)

H.test('topic shorthands are the table', function()
  local forms = {}
  for i, f in ipairs(ext.topicShorthands.forms) do
    forms[i] = f.shorthand
    H.eq(plain(f.topic), plain(nm.topic(f.shorthand)), f.shorthand)
  end
  local ok, err = pcall(nm.topic, 'nope')
  local want = table.concat(forms, ', ', 1, #forms - 1) .. ' or ' .. forms[#forms]
  H.ok(not ok and err:find(want, 1, true), tostring(err))
end)

H.finish()
