-- The list buffer: one `fetchList` list (e.g. following/artist) with each item's
-- follow state, driven by the list's ListState notifications.
local nm = require('netmodel')
local button = require('netmodel.button')
local api = vim.api

local M = {}
M.views = {} -- bufnr -> view

local HELP = '<CR> toggle follow · L next page · R refresh · q close'

local function render(view)
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
    table.insert(lines, ('  %s/%s'):format(item.kind, item.id))
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
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  api.nvim_buf_clear_namespace(buf, button.ns, 0, -1)
  for line, chunks in pairs(marks) do
    api.nvim_buf_set_extmark(buf, button.ns, line, 0, { virt_text = chunks, virt_text_pos = 'eol' })
  end
end

local function on_state(view, state)
  if not nm._newer(view.held, 'list', state) then
    return
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

-- Opens (or shows again) the buffer of a list; params default to {}.
function M.open(list, params)
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
  local view = { buf = buf, list = list, params = params, held = {}, item_at = {} }
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
  api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      view.sub.unsubscribe()
      M.views[buf] = nil
    end,
  })
  render(view)
  M.fetch(view, 'first')
  return buf
end

return M
