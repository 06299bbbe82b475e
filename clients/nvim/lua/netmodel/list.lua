-- The list buffer: one `fetchList` list (e.g. following/artist) with each item's
-- follow state, driven by the list's ListState notifications.
local nm = require('netmodel')
local button = require('netmodel.button')
local api = vim.api

local M = {}
M.views = {} -- bufnr -> view

local HELP = '<CR> toggle follow · L next page · R refresh · q close'

-- The interface states the buffer reports (setInterfaceState, the node
-- controller's): the rows a window shows are `visible`; DISPLAY_SCREENS window
-- heights above and below them `display`; PRELOAD_SCREENS more heights beyond
-- that `preload`. The server loads their follow state and details (`attributes`)
-- ahead, visible first, and drops the waiting work of rows set back to `none`.
M.DISPLAY_SCREENS = 1
M.PRELOAD_SCREENS = 2
local LEVEL = { none = 0, preload = 1, display = 2, visible = 3 }

-- The text a row shows of an item's details (`attributes`), or nil: its name, by
-- the names APIs give it. open_list(…, { describe = fn }) replaces it.
function M.describe(attributes)
  if type(attributes) ~= 'table' then
    return nil
  end
  for _, field in ipairs({ 'name', 'display_name', 'title', 'login', 'acct' }) do
    local v = attributes[field]
    if type(v) == 'string' and v ~= '' then
      return v
    end
  end
end

local function entity_key(kind, id)
  return kind .. '\0' .. id
end

-- Lines set as they differ from what the buffer holds, so that windows keep their
-- place (and a new page is only appended).
local function set_lines(buf, lines)
  local old = api.nvim_buf_get_lines(buf, 0, -1, false)
  local common = math.min(#old, #lines)
  for i = 1, common do
    if old[i] ~= lines[i] then
      api.nvim_buf_set_lines(buf, i - 1, i, false, { lines[i] })
    end
  end
  if #lines > common then
    api.nvim_buf_set_lines(buf, common, -1, false, vim.list_slice(lines, common + 1))
  elseif #old > common then
    api.nvim_buf_set_lines(buf, common, -1, false, {})
  end
end

local function render(view)
  if not api.nvim_buf_is_loaded(view.buf) then
    return -- wiped out or unloaded (Neovim quitting): nothing to draw on
  end
  local buf, s = view.buf, view.state or {}
  -- a fetch in flight shows as loading at once, whatever the last state said
  local status = (view.fetching or not s.state) and 'loading' or s.state
  local lines = { ('%s  %s%s'):format(view.list, status, s.hasMore and ' (more: L)' or ''), HELP }
  local marks = {} -- line (0-based) -> virt_text
  view.item_at = {}
  -- section titles go before the item they start at
  local titles = {}
  for _, sec in ipairs(s.sections or {}) do
    titles[sec.start] = sec.title
  end
  for i, item in ipairs(s.items or {}) do
    if titles[i - 1] then
      table.insert(lines, '── ' .. titles[i - 1])
    end
    -- An item's attributes are its entity's (ListItem): details a preload loads
    -- come as a new state of the list.
    local details = view.describe(item.attributes)
    table.insert(lines, ('  %s/%s%s'):format(item.kind, item.id, details and '  ' .. details or ''))
    view.item_at[#lines] = item
    marks[#lines - 1] = button.label(item)
  end
  local err = view.error or s.error
  if err then
    table.insert(lines, 'error: ' .. tostring(err.message))
  elseif status == 'loading' then
    table.insert(lines, 'loading…')
  elseif s.state == 'loaded' and #(s.items or {}) == 0 then
    table.insert(lines, '(empty)')
  end

  vim.bo[buf].modifiable = true
  set_lines(buf, lines)
  vim.bo[buf].modifiable = false
  api.nvim_buf_clear_namespace(buf, button.ns, 0, -1)
  for line, chunks in pairs(marks) do
    api.nvim_buf_set_extmark(buf, button.ns, line, 0, { virt_text = chunks, virt_text_pos = 'eol' })
  end
  M.report_later(view) -- the rows under the windows may be other items now
end

-- key -> {level, item}: the level each item has in the windows showing the view's
-- buffer now (the highest, when several windows show it); none when it is hidden.
local function levels_shown(view)
  local want = {}
  local function mark(from, to, level)
    for lnum = math.max(from, 1), to do
      local item = view.item_at[lnum]
      if item then
        local key = entity_key(item.kind, item.id)
        local had = want[key]
        if not had or LEVEL[had.level] < LEVEL[level] then
          want[key] = { level = level, item = item }
        end
      end
    end
  end
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == view.buf then
      local rows = api.nvim_win_call(win, function() -- one value only in 0.7
        return { vim.fn.line('w0'), vim.fn.line('w$') }
      end)
      local top, bottom = rows[1], rows[2]
      local height = math.max(api.nvim_win_get_height(win), 1)
      local display = M.DISPLAY_SCREENS * height
      local preload = display + M.PRELOAD_SCREENS * height
      mark(top - preload, bottom + preload, 'preload')
      mark(top - display, bottom + display, 'display')
      mark(top, bottom, 'visible')
    end
  end
  return want
end

-- Tells the server the levels that changed since the last report (setInterfaceState,
-- one call per level: `none` first, so what left the windows leaves its queue before
-- the rest is queued). `hidden`: every item goes to none (the buffer is hidden or
-- wiped out).
function M.report(view, hidden)
  view.report_scheduled = false
  if view.no_interface then
    return
  end
  local conn = nm._connection()
  if view.interface_gen ~= conn.gen then
    -- The server forgets a connection's interest with the connection.
    view.interface, view.interface_gen = {}, conn.gen
  end
  if conn.status ~= 'connected' then
    return -- reported again once connected: the list's snapshot renders it
  end
  local want = hidden and {} or levels_shown(view)
  local changes = { none = {}, visible = {}, display = {}, preload = {} }
  for key, had in pairs(view.interface) do
    if not want[key] then
      table.insert(changes.none, { kind = had.item.kind, id = had.item.id })
      view.interface[key] = nil
    end
  end
  for key, w in pairs(want) do
    local had = view.interface[key]
    if not had or had.level ~= w.level then
      table.insert(changes[w.level], { kind = w.item.kind, id = w.item.id })
      view.interface[key] = w
    end
  end
  for _, level in ipairs({ 'none', 'visible', 'display', 'preload' }) do
    if #changes[level] > 0 then
      nm.request('setInterfaceState', { items = changes[level], state = level }, function(err)
        if err and err.code == require('netmodel.protocol').errors.METHOD_NOT_FOUND then
          view.no_interface = true -- an older server: no preload, nothing else changes
        end
      end)
    end
  end
end

-- Scrolling fires many events: one report per turn of the loop.
function M.report_later(view, hidden)
  if hidden then
    view.report_hidden = true
  end
  if view.report_scheduled then
    return
  end
  view.report_scheduled = true
  vim.schedule(function()
    local was_hidden = view.report_hidden
    view.report_hidden = false
    if M.views[view.buf] == view or was_hidden then
      M.report(view, was_hidden)
    end
  end)
end

local group = api.nvim_create_augroup('netmodel_list', { clear = true })
-- Any window's scroll or resize, and a window closed (several may show one buffer).
api.nvim_create_autocmd({ 'WinScrolled', 'WinClosed', 'VimResized' }, {
  group = group,
  callback = function()
    for _, view in pairs(M.views) do
      M.report_later(view)
    end
  end,
})

local function on_state(view, state)
  if not nm._newer(view.held, 'list', state) then
    -- The same state again, e.g. the snapshot of a new connection to the same
    -- server, which forgot the old connection's interest: told again.
    return M.report_later(view)
  end
  view.state, view.error = state, nil
  -- A restarted server knows nothing of the list: load it again.
  if state.state == 'idle' and not view.fetching then
    M.fetch(view, 'first')
  end
  render(view)
end

-- page: 'first', 'next' or 'refresh'.
function M.fetch(view, page)
  view.fetching = true
  render(view)
  nm.request('fetchList', { list = view.list, params = view.params, page = page }, function(err, state)
    view.fetching = false
    if not api.nvim_buf_is_valid(view.buf) then
      return
    end
    if err then
      view.error = err
    else
      on_state(view, state) -- may be dropped: the notification of that state came first
    end
    render(view) -- no longer fetching, whichever way
  end)
end

-- Toggles the item on a line (1-based; default: the cursor's).
function M.toggle(view, lnum)
  local item = view.item_at[lnum or api.nvim_win_get_cursor(0)[1]]
  if item then
    nm.set_following(item.kind, item.id, nm.follow_on_press(item), nm.report)
  end
end

-- Opens (or shows again) the buffer of a list; params default to {}. opts.describe
-- (attributes -> text or nil): what a row shows of its item's details.
function M.open(list, params, opts)
  if params == nil or (type(params) == 'table' and next(params) == nil) then
    params = vim.empty_dict() -- a bare {} would be sent as [], which the server refuses
  end
  for buf, view in pairs(M.views) do
    if view.list == list and nm._params_key(view.params) == nm._params_key(params) then
      api.nvim_set_current_buf(buf)
      M.fetch(view, 'refresh')
      return buf
    end
  end
  local buf = api.nvim_create_buf(true, true)
  -- A list is its name and its params: each pair its own buffer, named apart.
  local key = nm._params_key(params)
  api.nvim_buf_set_name(buf, 'netmodel://' .. list .. (key ~= '{}' and key or ''))
  vim.bo[buf].filetype = 'netmodel-list'
  vim.bo[buf].modifiable = false
  api.nvim_set_current_buf(buf)
  local view = {
    buf = buf,
    list = list,
    params = params,
    held = {},
    item_at = {},
    interface = {}, -- key -> {level, item}: what the server was told
    describe = opts and opts.describe or M.describe,
  }
  M.views[buf] = view

  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map('<CR>', function()
    M.toggle(view)
  end, 'netmodel: toggle follow')
  map('L', function()
    M.fetch(view, 'next')
  end, 'netmodel: next page')
  map('R', function()
    M.fetch(view, 'refresh')
  end, 'netmodel: refresh')
  map('q', '<Cmd>bwipeout<CR>', 'netmodel: close')

  view.sub = nm.subscribe({ type = 'list', list = list, params = params }, function(state)
    on_state(view, state)
  end, function(err)
    view.error = err
    render(view)
  end)
  api.nvim_create_autocmd('CursorMoved', {
    buffer = buf,
    callback = function()
      M.report_later(view)
    end,
  })
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      M.report_later(view)
    end,
  })
  api.nvim_create_autocmd('BufHidden', {
    buffer = buf,
    callback = function()
      M.report_later(view, true) -- it leaves its last window
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      M.report(view, true)
      view.sub.unsubscribe()
      M.views[buf] = nil
    end,
  })
  render(view)
  M.fetch(view, 'first')
  return buf
end

return M
