-- The list buffer drives preload (setInterfaceState): scrolling a real buffer
-- against the artsy demo server of examples/, whose list items keep only their id
-- here, so a row's name can only come from its detail call.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

local N = 200
local FIRST = 3 -- the line of the first item: a header and a help line come before

-- The buffer is scrolled in a child Neovim (over --embed RPC) by keys it reads as
-- typed: its own main loop runs WinScrolled and CursorMoved, as for a user.
local child

local function C(code, ...)
  return vim.rpcrequest(child, 'nvim_exec_lua', code, { ... })
end

local function keys(k)
  vim.rpcrequest(child, 'nvim_input', k)
end

local function id_at(lnum)
  return ('p%03d'):format(lnum - FIRST + 1)
end

local function header()
  return C('return vim.api.nvim_buf_get_lines(_G.buf, 0, 1, false)[1]')
end

local function line(lnum)
  return C('return vim.api.nvim_buf_get_lines(_G.buf, ... - 1, ..., false)[1]', lnum)
end

local function level(id)
  local l = C('return _G.level[...]', id)
  return l ~= vim.NIL and l or nil -- never reported
end

-- Lines [from, to] a window of the child shows (default: its list window).
local function rows(win)
  return C([[
    local win = ... or _G.win
    return vim.api.nvim_win_call(win, function()
      return { vim.fn.line('w0'), vim.fn.line('w$') }
    end)
  ]], win)
end

-- The ids whose detail the demo was asked for: id -> count.
local function details_asked(demo)
  local asked = {}
  for _, r in ipairs(demo.log()) do
    local id = r.method == 'GET' and r.path:match('^/api/v1/artist/([^/]+)$')
    if id then
      asked[id] = (asked[id] or 0) + 1
    end
  end
  return asked
end

local function preload_stats()
  return nm.request_sync('stats', {}).preload
end

local function named(from, to)
  for lnum = from, to do
    if line(lnum) ~= ('  artist/%s  %s'):format(id_at(lnum), id_at(lnum):upper()) then
      return false
    end
  end
  return true
end

H.test('scrolling a list buffer preloads around its windows and withdraws what left them', function()
  local demo = H.start_demo('artsy')
  local ids = {}
  for i = 1, N do
    ids[i] = ('p%03d'):format(i)
  end
  demo.control('POST', 'follows', { artist = ids }) -- newest first: p001 on top
  local config = demo.config(function(c)
    c.lists.followedArtists.item.keep = nil
    c.lists.followedArtists.item.attributes = nil
    c.lists.followedArtists.sections = nil
  end)
  local srv = H.start_server(H.tmpdir(), { '--backend=rest', '--config=' .. config })
  nm.setup({ socket = srv.socket, spawn = false, quiet = true }) -- this Neovim reads the stats

  child = vim.fn.jobstart({
    'nvim', '--embed', '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '--cmd', 'set rtp^=' .. H.root,
  }, { rpc = true })
  H.ok(child > 0, 'child nvim started')
  local height = C([[
    local nm = require('netmodel')
    nm.setup({ socket = ..., spawn = false, quiet = true })
    -- what the buffer tells the server: id -> its last level
    _G.level, _G.told = {}, 0
    local request = nm.request
    nm.request = function(method, params, cb, opts)
      if method == 'setInterfaceState' then
        for _, item in ipairs(params.items) do
          _G.level[item.id] = params.state
          _G.told = _G.told + 1
        end
      end
      return request(method, params, cb, opts)
    end
    _G.buf = nm.open_list('followedArtists')
    _G.win = vim.api.nvim_get_current_win()
    vim.cmd('botright new') -- a window of another buffer below: the list's is 10 rows
    _G.other = vim.api.nvim_get_current_buf()
    vim.api.nvim_set_current_win(_G.win)
    vim.cmd('resize 10')
    return vim.api.nvim_win_get_height(_G.win)
  ]], srv.socket)
  H.eq(10, height, 'window height')
  local list = { DISPLAY_SCREENS = C("return require('netmodel.list').DISPLAY_SCREENS"), PRELOAD_SCREENS = C("return require('netmodel.list').PRELOAD_SCREENS") }
  local around = (list.DISPLAY_SCREENS + list.PRELOAD_SCREENS) * height

  -- every page, loaded with L while the window stays on top
  local function count()
    return C('return #vim.api.nvim_buf_get_lines(_G.buf, 0, -1, false)')
  end
  H.wait(10000, function()
    return header():find(' loaded', 1, true) ~= nil
  end, function()
    return 'the first page (header: ' .. header() .. ')'
  end)
  while header():find('(more: L)', 1, true) do
    local n = count()
    keys('L')
    H.wait(10000, function()
      local h = header() -- the last page may be empty: no more then
      return h:find(' loaded', 1, true) ~= nil and (count() > n or not h:find('(more: L)', 1, true))
    end, function()
      return 'the next page (header: ' .. header() .. ')'
    end)
  end
  H.eq(N + FIRST - 1, C('return #vim.api.nvim_buf_get_lines(_G.buf, 0, -1, false)'), 'lines: header, help, items')

  -- on top: the visible rows show their names, fetched ahead
  local top = rows()
  H.eq(1, top[1], 'the window on top')
  local reach = top[2] + around -- the last line in range
  H.wait(10000, function()
    local p = preload_stats()
    return named(FIRST, top[2]) and p.queued == 0 and p.inFlight == 0
  end, function()
    return 'the names of the visible rows (line 3: ' .. line(3) .. ')'
  end)
  local asked = details_asked(demo)
  local want = {}
  for lnum = FIRST, reach do
    want[id_at(lnum)] = 1
  end
  H.eq(want, asked, 'details asked: each row within ' .. reach .. ' lines, once, and no other')
  H.eq('visible', level(id_at(FIRST)), 'the first row')
  H.eq('preload', level(id_at(reach)), 'the last row in range')
  H.eq(nil, level(id_at(reach + 1)), 'the row after it: never near a window')

  -- details are slow now: a jump to the middle queues its rows, a jump to the end
  -- withdraws those not sent yet
  demo.control('POST', 'faults', { { method = 'GET', path = '^/api/v1/artist/', delay_ms = 1500, times = vim.NIL } })
  local before = preload_stats()
  keys(math.floor(N / 2) .. 'Gzz')
  local mid
  H.wait(5000, function()
    mid = rows()
    return mid[1] > reach and level(id_at(mid[1])) == 'visible' and preload_stats().inFlight > 0
  end, function()
    return 'the middle rows reported and their details under way (' .. vim.inspect(mid) .. ')'
  end)
  H.eq('none', level(id_at(FIRST)), 'the first row left the range')
  keys('G')
  local bottom
  H.wait(5000, function()
    bottom = rows()
    return bottom[2] == N + FIRST - 1 and level(id_at(bottom[2])) == 'visible'
  end, 'the window at the end, reported')
  H.wait(20000, function()
    return named(bottom[1], bottom[2])
  end, 'the names of the rows at the end')
  local after = preload_stats()
  H.ok(
    after.cancelled > before.cancelled,
    ('waiting details withdrawn: cancelled %d -> %d'):format(before.cancelled, after.cancelled)
  )
  asked = details_asked(demo)
  local mid_from, mid_to, bottom_from = mid[1] - around, mid[2] + around, bottom[1] - around
  local queued_mid, sent_mid = 0, 0
  for lnum = FIRST, N + FIRST - 1 do
    local id = id_at(lnum)
    local near = lnum <= reach or (lnum >= mid_from and lnum <= mid_to) or lnum >= bottom_from
    if not near then
      H.eq(nil, asked[id], 'no detail for ' .. id .. ' (line ' .. lnum .. ', never near a window)')
    elseif lnum > reach and lnum < bottom_from then
      queued_mid = queued_mid + 1
      sent_mid = sent_mid + (asked[id] and 1 or 0)
    end
  end
  H.ok(sent_mid < queued_mid, ('of %d middle rows only some were sent (%d)'):format(queued_mid, sent_mid))

  -- the connection drops (the server lives on, and forgets its interest): the rows
  -- shown are told again on the new one
  local told = C([[
    local c = require('netmodel')._connection()
    c:_lost(c.gen, 'dropped by the test', 'eof')
    return _G.told
  ]])
  H.wait(10000, function()
    return C("return require('netmodel').info().status") == 'connected' and C('return _G.told') >= told + height
  end, 'the visible rows told again after a reconnect')

  -- a second window on the buffer, on top: both ranges count
  local win2 = C([[
    vim.cmd('split')
    return vim.api.nvim_get_current_win()
  ]])
  keys('gg')
  H.wait(5000, function()
    return level(id_at(FIRST)) == 'visible'
  end, 'the top rows visible again in the second window')
  H.eq('visible', level(id_at(N + FIRST - 1)), 'the last row still visible in the first window')
  C('vim.api.nvim_win_close(..., true)', win2)
  H.wait(5000, function()
    return level(id_at(FIRST)) == 'none'
  end, 'the top rows set to none once their window closed')
  H.eq('visible', level(id_at(N + FIRST - 1)), 'the last row, still shown')

  -- hidden: every row goes to none
  local function all_none()
    return C([[
      for _, l in pairs(_G.level) do
        if l ~= 'none' then
          return false
        end
      end
      return true
    ]])
  end
  C('vim.api.nvim_win_set_buf(_G.win, _G.other)')
  H.wait(5000, all_none, 'every row none once the buffer is hidden')
  -- shown again, then wiped out
  C('vim.api.nvim_win_set_buf(_G.win, _G.buf)')
  H.wait(5000, function()
    return level(id_at(N + FIRST - 1)) == 'visible'
  end, 'the rows reported again when shown')
  C('vim.cmd("bwipeout! " .. _G.buf)')
  H.wait(5000, all_none, 'every row none once the buffer is wiped out')
  vim.fn.jobstop(child)
end)

H.finish()
