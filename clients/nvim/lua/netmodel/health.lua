-- :checkhealth netmodel — is the server there, which one, and does it speak this
-- plugin's protocol. It looks without side effects: it spawns nothing and does not
-- use the plugin's connection; it opens its own to the socket, asks `initialize`,
-- and closes it.
local uv = vim.loop
local rpc = require('netmodel.rpc')

local M = {}

-- InitializeResult.protocolVersion in schema/openrpc.json (test_health.lua checks
-- that they agree).
M.protocol_version = '1.0'

-- vim.health.start/ok/… since Neovim 0.10; require('health').report_* before.
local function reporter()
  local h = vim.health or require('health')
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    info = h.info or h.report_info,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
  }
end

-- One request on a fresh connection to `path`: its result, or nil and why not.
local function initialize(path, timeout_ms)
  local pipe = uv.new_pipe(false)
  local done, result, why, buffered = false, nil, nil, ''
  -- Made here: Vim functions cannot be called in the loop's callbacks.
  local request = rpc.encode({ jsonrpc = '2.0', id = 1, method = 'initialize', params = { processId = vim.fn.getpid() } })
  local function finish(res, err)
    if not done then
      done, result, why = true, res, err
    end
  end
  pipe:connect(path, function(err)
    if err then
      return finish(nil, 'cannot connect to ' .. path .. ': ' .. err)
    end
    pipe:read_start(function(read_err, chunk)
      if read_err or not chunk then
        return finish(nil, read_err or 'the server closed the connection without answering')
      end
      buffered = buffered .. chunk
      local line = buffered:match('^([^\n]*)\n')
      if line then
        local ok, msg = pcall(vim.json.decode, line)
        if not ok or type(msg) ~= 'table' then
          return finish(nil, 'the answer is not JSON: ' .. line:sub(1, 200))
        elseif msg.error then
          return finish(nil, ('error %s: %s'):format(msg.error.code, msg.error.message))
        end
        finish(msg.result)
      end
    end)
    pipe:write(request)
  end)
  if not vim.wait(timeout_ms, function()
    return done
  end, 20) then
    finish(nil, ('no answer from %s within %d ms'):format(path, timeout_ms))
  end
  if not pipe:is_closing() then
    pipe:close()
  end
  return result, why
end

function M.check()
  local report = reporter()
  local nm = require('netmodel')
  local opts = nm._connection().opts

  report.start('netmodel: the server binary')
  local cmd = opts.cmd or {}
  local bin = cmd[1] and vim.fn.exepath(cmd[1]) or ''
  if bin == '' then
    local say = opts.spawn and report.error or report.warn
    say(('%s not found: the plugin cannot start a server'):format(cmd[1] or '(no cmd)'), {
      'Install netmodel on $PATH, set $NETMODEL_BIN, or give setup({ cmd = { "/path/to/netmodel", "serve" } })',
    })
  else
    report.ok('found ' .. bin)
    local version = vim.fn.system({ bin, '--version' })
    if vim.v.shell_error == 0 then
      report.ok(vim.trim(version))
    else
      report.error(('%s --version failed: %s'):format(bin, vim.trim(version)))
    end
  end

  report.start('netmodel: the socket')
  local path = opts.socket
  if not path then
    report.info('no socket configured: each Neovim spawns its own server over stdio')
    return
  end
  local untrusted = rpc.untrusted_folder(path)
  if untrusted then
    report.error(untrusted)
    return
  end
  if not uv.fs_stat(path) then
    local say = opts.spawn and report.info or report.warn
    say(('no server listens on %s%s'):format(path, opts.spawn and '; the plugin will spawn one' or ''), {
      'Start one: netmodel serve --socket --no-stdio (or its systemd user unit)',
    })
    return
  end
  local result, why = initialize(path, 3000)
  if not result then
    report.error(why, { 'Is `netmodel serve --socket` running? A stale socket file can be removed.' })
    return
  end
  local info = result.serverInfo or {}
  report.ok(('%s reachable: %s %s, instance %s'):format(path, info.name or '?', info.version or '?', info.instance or result.instance or '?'))
  if result.protocolVersion == M.protocol_version then
    report.ok('protocol version ' .. result.protocolVersion)
  else
    report.error(
      ('the server speaks protocol %s; this plugin speaks %s'):format(
        tostring(result.protocolVersion),
        M.protocol_version
      ),
      { 'Update the plugin or the server so that both are of one release' }
    )
  end
end

return M
