-- Commands only; the modules load (and the server is reached) on first use.
if vim.g.loaded_netmodel then
  return
end
vim.g.loaded_netmodel = true

local function command(name, nargs, fn, desc)
  vim.api.nvim_create_user_command(name, fn, { nargs = nargs, desc = desc })
end

local function entity(opts)
  if #opts.fargs ~= 2 then
    return vim.notify('netmodel: expected {kind} {id}', vim.log.levels.ERROR)
  end
  return opts.fargs[1], opts.fargs[2]
end

command('NetmodelFollow', '+', function(opts)
  local kind, id = entity(opts)
  if id then
    require('netmodel').follow(kind, id, require('netmodel').report)
  end
end, 'netmodel: follow {kind} {id}')

command('NetmodelUnfollow', '+', function(opts)
  local kind, id = entity(opts)
  if id then
    require('netmodel').unfollow(kind, id, require('netmodel').report)
  end
end, 'netmodel: unfollow {kind} {id}')

-- With no argument: the list item or follow button on the cursor's line.
command('NetmodelToggle', '*', function(opts)
  local nm = require('netmodel')
  if #opts.fargs > 0 then
    local kind, id = entity(opts)
    if id then
      nm.toggle(kind, id, nm.report)
    end
    return
  end
  local list = require('netmodel.list')
  local view = list.views[vim.api.nvim_get_current_buf()]
  if view then
    return list.toggle(view)
  end
  local b = require('netmodel.button').at(0, vim.api.nvim_win_get_cursor(0)[1] - 1)
  if b then
    b.toggle()
  else
    vim.notify('netmodel: no follow button on this line', vim.log.levels.WARN)
  end
end, 'netmodel: toggle follow of {kind} {id}, or of what is under the cursor')

command('NetmodelList', 1, function(opts)
  require('netmodel').open_list(opts.args)
end, 'netmodel: open the list buffer of {list}, e.g. following/artist')
