-- The list buffer against the real server's fetchList. Skipped, and says so, only
-- when the server answers fetchList with -32601 (method not found).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')
local nm = require('netmodel')

-- The items the buffer shows: id -> {lnum, text (the virtual text)}, and their count.
local function items(buf)
  local out, n = {}, 0
  for lnum, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local id = line:match('^  artist/(%S+)$')
    if id then
      out[id], n = { lnum = lnum, text = H.virt_text(buf, lnum - 1) }, n + 1
    end
  end
  return out, n
end

local function header(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

local function loaded(buf)
  return header(buf):find(' loaded', 1, true) ~= nil
end

-- Waits for the list to load, then presses `L` while it has more; returns the pages.
local function load_all(buf)
  local pages = 1
  H.wait(5000, function()
    return loaded(buf)
  end, function()
    return 'the list (header: ' .. header(buf) .. ')'
  end)
  while header(buf):find('(more: L)', 1, true) do
    local _, before = items(buf)
    press('L')
    H.wait(5000, function()
      return loaded(buf) and select(2, items(buf)) > before
    end, function()
      return 'page ' .. (pages + 1) .. ' (header: ' .. header(buf) .. ')'
    end)
    pages = pages + 1
    H.ok(pages < 100, 'paging ends')
  end
  return pages
end

H.test(':NetmodelList following/artist', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  local _, err = nm.request_sync('fetchList', { list = 'following/artist', page = 'first' })
  if err and err.code == -32601 then
    H.skip('server has no fetchList')
  end
  H.eq(nil, err, 'fetchList error')

  -- enough follows for more than one page on any reasonable page size
  local n, left, errors = 120, 120, {}
  for i = 1, n do
    nm.follow('artist', ('a%03d'):format(i), { await = true }, function(e)
      left = left - 1
      table.insert(errors, e)
    end)
  end
  H.wait(20000, function()
    return left == 0
  end, 'the follows')
  H.eq({}, errors, 'follow errors')

  -- what the buffer asks for, to tell a refresh from a next page
  local pages_asked, request = {}, nm.request
  nm.request = function(method, params, cb)
    if method == 'fetchList' then
      table.insert(pages_asked, params.page)
    end
    return request(method, params, cb)
  end

  vim.cmd('NetmodelList following/artist')
  local buf = vim.api.nvim_get_current_buf()
  H.eq('netmodel://following/artist', vim.api.nvim_buf_get_name(buf), 'buffer name')
  local pages = load_all(buf)
  H.eq('first', pages_asked[1], 'first page asked')
  H.eq(pages - 1, #vim.tbl_filter(function(p)
    return p == 'next'
  end, pages_asked), "'next' pages asked by L")
  local shown, count = items(buf)
  H.eq(n, count, 'items after ' .. pages .. ' pages')
  H.ok(pages > 1, 'more than one page for ' .. n .. ' items')
  for id, it in pairs(shown) do
    H.eq('[ Following ]', it.text, 'button of ' .. id)
  end

  -- <CR> unfollows the item under the cursor; the list's notification shows it
  vim.api.nvim_win_set_cursor(0, { shown.a001.lnum, 0 })
  press('<CR>')
  H.wait(5000, function()
    local it = items(buf).a001
    return not it or it.text == '[ Follow ]'
  end, 'a001 unfollowed in the list')
  local state = nm.request_sync('getFollowState', { kind = 'artist', id = 'a001' })
  H.eq(false, state.following, 'a001 on the server')

  -- another client's change arrives as a list notification
  local code, _, e = H.call(srv.socket, 'unfollow', 'kind=artist', 'id=a002', 'await:=true')
  H.eq(0, code, 'netmodel call unfollow: ' .. e)
  H.wait(5000, function()
    local it = items(buf).a002
    return not it or it.text == '[ Follow ]'
  end, 'a002 unfollowed in the list')

  -- `R` refreshes: the unfollowed are gone, a new follow appears
  H.eq(0, (H.call(srv.socket, 'follow', 'kind=artist', 'id=zzz', 'await:=true')), 'follow zzz')
  pages_asked = {}
  press('R')
  H.eq({ 'refresh' }, pages_asked, 'pages asked by R')
  H.ok(not loaded(buf), 'loading shown at once: ' .. header(buf))
  load_all(buf)
  local want = { zzz = true }
  for i = 3, n do
    want[('a%03d'):format(i)] = true
  end
  H.eq(want, vim.tbl_map(function()
    return true
  end, (items(buf))), 'items after the refresh')
end)

H.test('open_list with empty params {} loads the list', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  for b in pairs(require('netmodel.list').views) do -- a view left open would be reused
    vim.api.nvim_buf_delete(b, { force = true })
  end
  local buf = nm.open_list('following/artist', {})
  H.wait(5000, function()
    local first = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    return table.concat(first, '\n'):find('(empty)', 1, true) ~= nil
  end, function()
    return 'the empty list (buffer: ' .. vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) .. ')'
  end)
end)

H.test('open_list with a null param is the list without it (the server drops nulls)', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  for b in pairs(require('netmodel.list').views) do
    vim.api.nvim_buf_delete(b, { force = true })
  end
  local buf = nm.open_list('following/artist', { tag = vim.NIL })
  H.wait(5000, function()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('(empty)', 1, true) ~= nil
  end, function()
    return 'the empty list (buffer: ' .. vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) .. ')'
  end)
  H.eq(buf, nm.open_list('following/artist', {}), 'the same buffer')
end)

H.test('a list opened with other params gets a buffer of its own', function()
  local srv = H.start_server(H.tmpdir())
  nm.setup({ socket = srv.socket, spawn = false })
  for b in pairs(require('netmodel.list').views) do
    vim.api.nvim_buf_delete(b, { force = true })
  end
  local before = #vim.api.nvim_list_bufs()
  local plain = nm.open_list('following/artist', {})
  local ok, other = pcall(nm.open_list, 'following/artist', { tag = 'x' })
  H.ok(ok, 'the second open_list: ' .. tostring(other))
  H.ok(other ~= plain, 'another buffer')
  H.eq('netmodel://following/artist{"tag":"x"}', vim.api.nvim_buf_get_name(other), 'its name holds its params')
  H.eq(before + 2, #vim.api.nvim_list_bufs(), 'two buffers, no stray one')
  H.eq(other, nm.open_list('following/artist', { tag = 'x' }), 'the same params: the same buffer again')
end)

H.finish()
