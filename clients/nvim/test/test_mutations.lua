-- setup({ tell_failures = true }): the intents the server's ledger says failed are
-- told with vim.notify ("your follow of X failed: …"), each once: as they fail, and
-- on connect and every reconnect those not told yet, the seqs seen kept in seen_file.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

local told = {}
local print_notify = vim.notify
vim.notify = function(msg, level)
  table.insert(told, msg)
  print_notify(msg, level)
end

local REFUSING = '--simulate=latency=10,failure=1,status=422'

-- A fresh state folder and a server on it simulating `simulate`, nothing told yet:
-- the folder, the server and the seen file.
local function fresh(simulate)
  told = {}
  local dir = H.tmpdir()
  return dir, H.start_server(dir, { simulate }), dir .. '/seen'
end

local function connect_telling(srv, seen)
  nm.setup({ socket = srv.socket, spawn = false, quiet = true, tell_failures = true, seen_file = seen })
end

local function failures()
  local out = {}
  for _, msg in ipairs(told) do
    if msg:find('failed:', 1, true) then
      table.insert(out, msg)
    end
  end
  return out
end

H.test('a follow refused while Neovim was away is told on connect, and on reconnect, once', function()
  local dir, srv, seen = fresh(REFUSING)
  -- Another client follows while this one is not there; the API refuses it.
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  local _, err = nm.request_sync('follow', { kind = 'artist', id = 'kaws', await = true }, 5000)
  H.eq(-32002, err and err.code, 'the follow refused')
  nm.stop()
  H.eq({}, failures(), 'nothing told without the option')

  connect_telling(srv, seen)
  H.wait(5000, function()
    return #failures() == 1
  end, 'the failure told on connect')
  H.eq('netmodel: your follow of artist/kaws failed: simulated HTTP 422 (follow artist/kaws)', failures()[1], 'message')
  H.wait(2000, function()
    return vim.fn.filereadable(seen) == 1 and vim.fn.readfile(seen)[1] == '1'
  end, 'the seq seen kept')

  -- While the plugin is away (its server stopped), another server on the same state
  -- folder sees an unfollow refused; when the plugin's server is back, the reconnect
  -- reads the ledger from the seq seen: only the new failure is told.
  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')
  local other_dir = H.tmpdir()
  local other = H.start_server(other_dir, { '--state-dir=' .. dir .. '/state', REFUSING })
  local code, out, stderr = H.call(other.socket, 'unfollow', 'kind=artist', 'id=andy', 'await:=true')
  H.eq(1, code, 'the unfollow refused: ' .. out .. stderr)
  vim.loop.kill(other.pid, 'sigterm')
  H.wait(5000, function()
    return other.exit_code ~= nil
  end, 'the other server to stop')
  H.start_server(dir, { REFUSING })
  H.wait(10000, function()
    return #failures() == 2
  end, 'the new failure told on reconnect')
  H.eq('netmodel: your unfollow of artist/andy failed: simulated HTTP 422 (unfollow artist/andy)', failures()[2], 'second')
  vim.wait(300)
  H.eq(2, #failures(), 'the first one not told again')
end)

H.test('a follow that fails while Neovim is connected is told as it fails, and not again on reconnect', function()
  local dir, srv, seen = fresh(REFUSING)
  connect_telling(srv, seen)
  H.wait(5000, function()
    return nm.info().status == 'connected' and vim.fn.filereadable(seen) == 1
  end, 'connected, the empty ledger read')
  nm.request('follow', { kind = 'artist', id = 'kaws' })
  H.wait(5000, function()
    return #failures() == 1
  end, 'the failure told as it happened')
  H.eq('netmodel: your follow of artist/kaws failed: simulated HTTP 422 (follow artist/kaws)', failures()[1], 'message')
  vim.loop.kill(srv.pid, 'sigkill')
  H.wait(5000, function()
    return nm.info().status ~= 'connected'
  end, 'the plugin to see the server gone')
  H.start_server(dir, { REFUSING })
  H.wait(10000, function()
    return nm.info().status == 'connected'
  end, 'reconnected')
  vim.wait(500)
  H.eq(1, #failures(), 'told once, not again from the ledger on reconnect')
  nm.stop()
end)

H.test('an intent still pending when the ledger was read, failed while Neovim was closed, is told next time', function()
  local _, srv, seen = fresh('--simulate=latency=1500,failure=1,status=422')
  -- Another client's follow, not settled when this plugin reads the ledger.
  local code, out, err = H.call(srv.socket, 'follow', 'kind=artist', 'id=kaws')
  H.eq(0, code, 'follow accepted: ' .. out .. err)
  connect_telling(srv, seen)
  H.wait(5000, function()
    return vim.fn.filereadable(seen) == 1
  end, 'the ledger read')
  H.eq('0', vim.fn.readfile(seen)[1], 'the next read starts before the pending intent')
  nm.stop()
  -- Refused while the plugin is away.
  H.wait(5000, function()
    local _, mutations = H.call(srv.socket, 'getMutations')
    return mutations:find('"refused"', 1, true) ~= nil
  end, 'the follow refused')
  H.eq({}, failures(), 'not told while away')
  connect_telling(srv, seen)
  H.wait(5000, function()
    return #failures() == 1
  end, 'told on the next connect')
  H.eq('1', vim.fn.readfile(seen)[1], 'settled: the next read starts after it')
  nm.stop()
end)

H.test('the mutations topic gives each outcome to on_state', function()
  local dir = H.tmpdir()
  local srv = H.start_server(dir, { '--simulate=latency=10,failure=1,status=422' })
  nm.setup({ socket = srv.socket, spawn = false, quiet = true })
  H.eq({ type = 'mutations' }, nm.topic('mutations'), 'the shorthand')
  local got = {}
  local sub = nm.subscribe('mutations', function(entry)
    table.insert(got, entry)
  end)
  H.wait(5000, function()
    return sub.name ~= nil
  end, 'subscribed')
  nm.request('follow', { kind = 'artist', id = 'kaws' })
  H.wait(5000, function()
    return #got == 1
  end, 'the outcome pushed')
  H.eq('refused', got[1].outcome, 'outcome')
  H.ok(nm.mutation_failed(got[1]), 'failed')
  H.eq('your follow of artist/kaws failed: simulated HTTP 422 (follow artist/kaws)', nm.mutation_message(got[1]), 'message')
end)

H.finish()
