-- The follow button: virtual text at the end of a line that shows an entity's
-- follow state, kept current by a subscription to that entity.
local nm = require('netmodel')
local api = vim.api

local M = {}
M.ns = api.nvim_create_namespace('netmodel')

vim.cmd([[
  highlight default link NetmodelFollow Special
  highlight default link NetmodelFollowing String
  highlight default link NetmodelPending Comment
  highlight default link NetmodelError ErrorMsg
  highlight default link NetmodelSignIn WarningMsg
]])

-- virt_text chunks for an EntityState (or a list item, which has no pending/error);
-- err: why the button gets no states (no server, a refused subscription), or nil.
function M.label(state, err)
  local chunks
  if state == nil or (state.following == nil and not state.error) then
    chunks = { { '[ … ]', 'NetmodelPending' } } -- not fetched yet
  elseif state.pending then
    -- what was asked for, shown at once (optimistic), marked as unconfirmed
    chunks = { { state.following and '[ Following… ]' or '[ Unfollowing… ]', 'NetmodelPending' } }
  elseif state.following then
    chunks = { { '[ Following ]', 'NetmodelFollowing' } }
  elseif state.requested == true then
    -- a follow request awaiting approval (a locked account); pressing withdraws it
    chunks = { { '[ Requested ]', 'NetmodelPending' } }
  else
    chunks = { { '[ Follow ]', 'NetmodelFollow' } }
  end
  if not err and nm.needs_credentials(state) then
    -- kept pending, not rolled back: it goes through once a token is configured
    table.insert(chunks, { ' 🔑 sign in', 'NetmodelSignIn' })
    return chunks
  end
  err = err or (state and state.error) -- after a rollback the server keeps it until the next success
  if err then
    table.insert(chunks, { ' ✗ ' .. tostring(err.message), 'NetmodelError' })
  end
  return chunks
end

local buttons = {} -- bufnr -> extmark id -> button

local function render(b)
  if not api.nvim_buf_is_valid(b.bufnr) then
    return b.delete()
  end
  local pos = api.nvim_buf_get_extmark_by_id(b.bufnr, M.ns, b.mark, {})
  if pos[1] then -- the mark moves with edits; keep it where it is now
    api.nvim_buf_set_extmark(b.bufnr, M.ns, pos[1], pos[2], {
      id = b.mark,
      virt_text = M.label(b.state, b.error),
      virt_text_pos = 'eol',
    })
  end
end

-- line is 0-based, as in nvim_buf_set_extmark().
function M.new(bufnr, line, kind, id)
  if bufnr == 0 then
    bufnr = api.nvim_get_current_buf()
  end
  local mark = api.nvim_buf_set_extmark(bufnr, M.ns, line, 0, { virt_text = M.label(nil), virt_text_pos = 'eol' })
  local b = { bufnr = bufnr, mark = mark, kind = kind, id = id }
  function b.toggle(callback)
    nm.toggle(kind, id, callback or nm.report)
  end
  function b.delete()
    b.sub.unsubscribe()
    if buttons[bufnr] then
      buttons[bufnr][mark] = nil
    end
    if api.nvim_buf_is_valid(bufnr) then
      api.nvim_buf_del_extmark(bufnr, M.ns, mark)
    end
  end
  -- Errors show on the button (one notice per button would flood): no server yet,
  -- which it keeps trying, or a subscription the server refused.
  b.sub = nm.subscribe({ type = 'entity', kind = kind, id = id }, function(state)
    b.state, b.error = state, nil
    render(b)
  end, function(err)
    b.error = err
    render(b)
  end)

  if not buttons[bufnr] then
    buttons[bufnr] = {}
    api.nvim_create_autocmd('BufWipeout', {
      buffer = bufnr,
      once = true,
      callback = function()
        for _, other in pairs(buttons[bufnr] or {}) do
          other.sub.unsubscribe()
        end
        buttons[bufnr] = nil
      end,
    })
  end
  buttons[bufnr][mark] = b
  return b
end

-- The button on a line (0-based) of a buffer, or nil.
function M.at(bufnr, line)
  bufnr = bufnr == 0 and api.nvim_get_current_buf() or bufnr
  for _, m in ipairs(api.nvim_buf_get_extmarks(bufnr, M.ns, { line, 0 }, { line, -1 }, {})) do
    local b = (buttons[bufnr] or {})[m[1]]
    if b then
      return b
    end
  end
end

return M
