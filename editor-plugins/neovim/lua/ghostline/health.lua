-- :checkhealth ghostline: the binary is found, the daemon answers, a model is loaded.
local M = {}

local h = vim.health or require('health')
local start = h.start or h.report_start
local ok = h.ok or h.report_ok
local warn = h.warn or h.report_warn
local err = h.error or h.report_error
local info = h.info or h.report_info

function M.check()
  local gl = require('ghostline')
  local cfg = gl.config
  start('ghostline')
  info(vim.fn.matchstr(vim.fn.execute('version'), 'NVIM v[^\n]*') .. (vim.fn.has('nvim-0.10') == 1 and ' (inline virtual text)'
    or ' (overlay virtual text; inline needs 0.10)'))
  local exe = vim.fn.exepath(cfg.cmd)
  if exe == '' then
    err(require('ghostline.logic').binary_missing_message(cfg.cmd))
    return
  end
  ok('binary: ' .. exe)
  local version = vim.fn.system({ exe, '--version' })
  if vim.v.shell_error == 0 then info('version: ' .. vim.trim(version)) end
  info('server command: ' .. table.concat(require('ghostline.logic').server_cmd(cfg), ' '))
  local sock = gl.socket_path()
  if sock then info('daemon socket: ' .. sock .. ' (log: ' .. sock .. '.log)') end

  -- The daemon: start the client if no buffer has started it yet, and wait for initialize.
  if gl.state.status ~= 'ready' and gl.state.status ~= 'error' then
    gl.ensure_started()
    vim.wait(60000, function() return gl.state.status == 'ready' or gl.state.status == 'error' end, 50)
  end
  if gl.state.status ~= 'ready' then
    local advice = { 'See :GhostlineLog' }
    local log = sock and (sock .. '.log')
    if log and vim.fn.filereadable(log) == 1 then
      local lines = vim.fn.readfile(log)
      for i = math.max(1, #lines - 2), #lines do table.insert(advice, 'daemon log: ' .. lines[i]) end
    end
    err('the daemon does not answer (status: ' .. gl.state.status .. (gl.state.detail and (': ' .. gl.state.detail) or '') .. ')',
      advice)
    return
  end
  ok('the daemon answers')
  local stats = gl.stats()
  local completer = type(stats.daemon) == 'table' and stats.daemon.completer or nil
  if gl.state.detail and gl.state.detail:find('no model is loaded', 1, true) then
    err('no model is loaded: ' .. gl.state.detail, { 'Pass a model: setup{ model = "/path/model.gguf" } and :GhostlineRestart, or set GHOSTLINE_MODEL_DIR' })
  elseif completer then
    ok('model loaded: ' .. completer)
  else
    warn('ghostline/stats did not answer: ' .. vim.inspect(stats.daemon))
  end
  if gl.state.grows then
    ok('growing ghost text: the daemon sends ghostline/completionUpdated')
  else
    info('growing ghost text: this daemon does not send ghostline/completionUpdated')
  end
end

return M
