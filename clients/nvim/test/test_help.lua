-- :help netmodel works once :helptags ran, and every netmodel link has its tag.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/helpers.lua')

H.test(':help netmodel', function()
  -- a copy, so :helptags writes no tags file into the repository
  local rt = H.tmpdir()
  vim.fn.mkdir(rt .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(H.root .. '/doc/netmodel.txt'), rt .. '/doc/netmodel.txt')
  vim.cmd('helptags ' .. rt .. '/doc') -- fails on duplicate tags (E154)
  vim.opt.runtimepath:prepend(rt)

  vim.cmd('help netmodel')
  H.eq('help', vim.bo.buftype, 'buftype')
  H.ok(vim.endswith(vim.api.nvim_buf_get_name(0), '/doc/netmodel.txt'), 'file ' .. vim.api.nvim_buf_get_name(0))
  H.ok(vim.api.nvim_get_current_line():find('*netmodel*', 1, true), 'on the tag: ' .. vim.api.nvim_get_current_line())

  local tags = {}
  for _, line in ipairs(vim.fn.readfile(rt .. '/doc/tags')) do
    tags[line:match('^[^\t]+')] = true
  end
  for _, want in ipairs({ ':NetmodelFollow', ':NetmodelUnfollow', ':NetmodelToggle', ':NetmodelList',
    'netmodel.setup()', 'netmodel.request()', 'netmodel.request_sync()', 'netmodel.subscribe()',
    'netmodel.button()', 'netmodel-list' }) do
    H.ok(tags[want], 'tag ' .. want)
  end
  -- every |link| to a netmodel topic must resolve
  local text = table.concat(vim.fn.readfile(rt .. '/doc/netmodel.txt'), '\n')
  for link in text:gmatch('|([^|%s]+)|') do
    if link:lower():find('netmodel', 1, true) then
      H.ok(tags[link], 'link |' .. link .. '| has a tag')
    end
  end
  vim.cmd('help :NetmodelList')
  H.ok(vim.api.nvim_get_current_line():find('*:NetmodelList*', 1, true), 'on :NetmodelList')
end)

H.finish()
