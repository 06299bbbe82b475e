-- Drives `netmodel serve` with Neovim's own JSON-RPC client, vim.lsp.rpc
-- (Neovim 0.7 API: vim.lsp.rpc.start(cmd, args, dispatchers, extra)).
--
-- Run:  NETMODEL_BIN=... NM_OUT=out.json \
--       nvim --headless -u NONE -i NONE -n -c "luafile nvim_client.lua" -c "qa!"
--
-- Writes everything it saw as JSON to $NM_OUT; test_clients.py asserts on it.
--
-- What vim.lsp.rpc 0.7 puts on the wire (runtime/lua/vim/lsp/rpc.lua):
--   * header: only "Content-Length: N\r\n\r\n" (no Content-Type);
--   * ids: Lua integers 1, 2, 3, ... per client;
--   * JSON keys in Lua-table hash order: "method" or "params" may come before
--     "jsonrpc"; observed: {"method":"stats","jsonrpc":"2.0","id":2};
--   * vim.json (lua-cjson) escapes "/" as "\/": the method "$/cancelRequest"
--     arrives as "$\/cancelRequest", "a/b" as "a\/b";
--   * params = nil  -> member omitted;
--     params = {}   -> "params":[]   (an empty Lua table encodes as an ARRAY);
--     params = vim.empty_dict() -> "params":{};  params = vim.NIL -> "params":null;
-- and what it expects back:
--   * replies are matched with tonumber(id), so the id must be a number (or a
--     numeric string); a reply whose id is null is "INVALID_SERVER_MESSAGE";
--   * bodies are decoded with luanil.object, so "result":null arrives as nil;
--   * RequestCancelled (-32800) errors are swallowed (never reach the callback).

local out_path = assert(os.getenv('NM_OUT'), 'NM_OUT not set')
local bin = assert(os.getenv('NETMODEL_BIN'), 'NETMODEL_BIN not set')

local res = { steps = {}, order = {}, errors = {}, notifications = {} }

local function write_out()
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(res))
  f:close()
end

local ok, err = pcall(function()
  local exited = false
  local client = vim.lsp.rpc.start(bin, { 'serve', '--log-level', 'debug' }, {
    notification = function(method, _params)
      table.insert(res.notifications, method)
    end,
    on_error = function(code, e)
      table.insert(res.errors, {
        code = code,
        name = vim.lsp.rpc.client_errors[code],
        err = vim.inspect(e),
      })
    end,
    on_exit = function(code, signal)
      res.exit = { code = code, signal = signal }
      exited = true
    end,
  })
  assert(client, 'vim.lsp.rpc.start returned nil (spawn failed)')
  res.pid = client.pid

  local function call(name, method, params)
    local r = { method = method, done = false }
    local sent, id = client.request(method, params, function(e, result)
      if e then
        r.err = { code = e.code, message = e.message, data = e.data }
      end
      if result == nil then
        r.result_is_nil = true
      else
        r.result = result
      end
      r.done = true
    end)
    r.sent = sent
    r.id = id
    r.id_type = type(id)
    if not vim.wait(10000, function() return r.done end, 10) then
      r.timed_out = true
    end
    res.steps[name] = r
    table.insert(res.order, name)
    return r
  end

  -- initialize exactly as vim.lsp.start_client (0.7) builds it.
  local version = vim.version()
  call('initialize', 'initialize', {
    processId = vim.loop.getpid(),
    clientInfo = {
      name = 'Neovim',
      version = string.format('%s.%s.%s', version.major, version.minor, version.patch),
    },
    rootPath = vim.NIL,
    rootUri = vim.NIL,
    initializationOptions = nil,
    capabilities = vim.lsp.protocol.make_client_capabilities(),
    trace = 'off',
    workspaceFolders = vim.NIL,
  })
  -- Neovim then sends `initialized` with an empty table, which encodes as [].
  res.initialized_sent = client.notify('initialized', {})

  call('stats_nil', 'stats', nil)                   -- no "params" member
  call('stats_empty_table', 'stats', {})            -- "params":[]
  call('stats_empty_dict', 'stats', vim.empty_dict()) -- "params":{}
  call('stats_vim_nil', 'stats', vim.NIL)           -- "params":null
  call('unknown', 'netmodel/noSuchMethod', nil)
  -- $/cancelRequest for an id the server never saw: must be ignored silently.
  res.cancel_sent = client.notify('$/cancelRequest', { id = 4242 })
  call('stats_final', 'stats', nil)
  call('shutdown', 'shutdown', nil)
  res.exit_sent = client.notify('exit', nil)
  if not vim.wait(10000, function() return exited end, 10) then
    res.exit_timed_out = true
  end
end)

if not ok then
  res.lua_error = tostring(err)
end
-- Let scheduled on_error/notification dispatchers run before writing.
vim.wait(50, function() return false end, 10)
write_out()
