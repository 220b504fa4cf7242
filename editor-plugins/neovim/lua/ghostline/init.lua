-- Ghostline for Neovim (0.7.2 and later): runs `ghostline connect` as an LSP client, asks for
-- `textDocument/inlineCompletion` while you type in insert mode, and shows the answer as ghost
-- text with extmarks. See editor-plugins/README.md.
local logic = require('ghostline.logic')

local api = vim.api
local uv = vim.loop
local M = {}

local ns = api.nvim_create_namespace('ghostline')
local has_inline = vim.fn.has('nvim-0.10') == 1
local method_calls = vim.fn.has('nvim-0.11') == 1 -- client:request() instead of client.request()

local defaults = {
  cmd = 'ghostline', -- the binary (PATH by default)
  address = nil, -- daemon socket: unix:PATH, tcp:HOST:PORT or a path; nil: connect's default
  model = nil, -- --model for a daemon this editor starts
  draft = nil, -- --draft
  threads = 0, -- --threads (0: all cores)
  daemon_args = {}, -- more `ghostline serve` options for a daemon this editor starts
  enabled = true,
  filetypes = logic.default_filetypes,
  debounce_ms = 20, -- wait this long after a keystroke before asking (the client side)
  daemon_debounce_ms = nil, -- the daemon's debounceMs for this session (nil: its default)
  max_tokens = 0, -- 0: the daemon's default
  deadline_ms = 0, -- 0: the daemon's default
  completion = 'auto', -- 'auto' (the syntax decides), 'line' (one line at most), 'block' (several)
  languages = {}, -- filetype -> true/false: switch a filetype on (beyond `filetypes`) or off
  keymaps = { accept = '<Tab>', accept_word = '<M-w>', accept_line = '<M-l>', dismiss = '<C-]>' },
  hl_group = 'GhostlineSuggestion',
}

M.config = vim.deepcopy(defaults)

-- What the statusline and :GhostlineStats show.
M.state = {
  status = 'stopped', -- starting, ready, error, stopped
  detail = nil,
  last_latency_ms = nil,
  latencies = {},
  shown = 0,
  requests = 0,
  cancels = 0,
  rerequests = 0,
  outcomes = {}, -- ghostline/completionOutcome reports sent, by outcome
  grows = false, -- the daemon sends ghostline/completionUpdated
}

local client_id = nil
local pending = nil -- { id, bufnr }
-- The ghost text shown: where, its text, and of the completion it comes from, the daemon's id,
-- the characters accepted so far and the filetype, for ghostline/completionOutcome.
local ghost = nil -- { bufnr, row, col, text, insert, start_col, end_col, tick, id, accepted, language }
local timer = nil
local root_dir = nil
local last_sent = nil -- { bufnr, version, row, col } of the last automatic request

local function call(client, name, ...)
  if method_calls then return client[name](client, ...) end
  return client[name](...)
end

local function get_client()
  if not client_id then return nil end
  return vim.lsp.get_client_by_id(client_id)
end

local function buf_version(bufnr)
  local versions = vim.lsp.util.buf_versions
  return (versions and versions[bufnr]) or api.nvim_buf_get_changedtick(bufnr)
end

local function settings()
  local s = logic.client_settings(M.config)
  if M.config.daemon_debounce_ms then s.debounceMs = M.config.daemon_debounce_ms else s.debounceMs = nil end
  return s
end

local function set_status(status, detail)
  M.state.status = status
  M.state.detail = detail
  pcall(vim.cmd, 'redrawstatus')
end

-- ---- ghost text ----

-- Tells the daemon what became of the completion `g` shows (nothing for other servers' items).
local function report(g, outcome, chars)
  local client = get_client()
  if not g or not g.id or not client then return end
  M.state.outcomes[outcome] = (M.state.outcomes[outcome] or 0) + 1
  call(client, 'notify', 'ghostline/completionOutcome', logic.outcome_params(g.id, outcome, chars, g.language))
end

-- Removes the ghost text; `outcome` (dismissed, typedOver) is reported for its completion.
local function clear(outcome)
  if outcome and ghost then report(ghost, outcome, ghost.accepted) end
  if ghost and api.nvim_buf_is_valid(ghost.bufnr) then api.nvim_buf_clear_namespace(ghost.bufnr, ns, 0, -1) end
  ghost = nil
end

local function render(g)
  api.nvim_buf_clear_namespace(g.bufnr, ns, 0, -1)
  local tab = string.rep(' ', vim.bo[g.bufnr].tabstop)
  local lines = logic.split_lines((g.text:gsub('\t', tab)))
  local hl = M.config.hl_group
  local opts = { hl_mode = 'combine' }
  if lines[1] ~= '' then
    if has_inline then
      opts.virt_text = { { lines[1], hl } }
      opts.virt_text_pos = 'inline'
    else
      -- 0.7-0.9: overlay the ghost text and the rest of the line after it, so that it reads as
      -- if inserted at the cursor.
      local line = api.nvim_buf_get_lines(g.bufnr, g.row, g.row + 1, false)[1] or ''
      opts.virt_text = { { lines[1], hl } }
      local after = line:sub(g.col + 1):gsub('\t', tab)
      if after ~= '' then table.insert(opts.virt_text, { after, 'Normal' }) end
      opts.virt_text_pos = 'overlay'
    end
  end
  if #lines > 1 then
    opts.virt_lines = {}
    for i = 2, #lines do table.insert(opts.virt_lines, { { lines[i] == '' and ' ' or lines[i], hl } }) end
  end
  api.nvim_buf_set_extmark(g.bufnr, ns, g.row, g.col, opts)
end

local function show(g)
  g.tick = api.nvim_buf_get_changedtick(g.bufnr)
  ghost = g
  render(g)
end

function M.visible()
  if not ghost or ghost.bufnr ~= api.nvim_get_current_buf() then return false end
  local cur = api.nvim_win_get_cursor(0)
  return cur[1] - 1 == ghost.row and cur[2] == ghost.col
end

function M.ghost_text()
  return M.visible() and ghost.text or nil
end

-- ---- requests ----

local function cancel_pending()
  local p = pending
  pending = nil
  if not p then return end
  local client = get_client()
  if client then
    call(client, 'cancel_request', p.id)
    M.state.cancels = M.state.cancels + 1
  end
end

local function record_latency(ms)
  M.state.last_latency_ms = ms
  table.insert(M.state.latencies, ms)
  if #M.state.latencies > 200 then table.remove(M.state.latencies, 1) end
end

function M.request(trigger_kind)
  local bufnr = api.nvim_get_current_buf()
  local client = get_client()
  if not M.config.enabled or not client or M.state.status ~= 'ready' then return end
  if not vim.lsp.buf_is_attached(bufnr, client.id) then return end
  local cur = api.nvim_win_get_cursor(0)
  local row, col = cur[1] - 1, cur[2]
  local version = buf_version(bufnr)
  -- A debounce timer can fire after the edit it was set for was already asked about.
  local key = { bufnr, version, row, col }
  if (trigger_kind or 2) == 2 and last_sent and vim.deep_equal(last_sent, key) then return end
  last_sent = key
  cancel_pending()
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row, character = logic.utf16_col(line, col) },
    context = { triggerKind = trigger_kind or 2 },
  }
  local t0 = uv.hrtime()
  local id
  local ok, rid = call(client, 'request', 'textDocument/inlineCompletion', params, function(err, result)
    if pending and pending.id == id then pending = nil end
    if err then return end -- cancelled, or superseded by a newer request
    record_latency((uv.hrtime() - t0) / 1e6)
    -- Stale: another buffer, an edit or a cursor move since, or insert mode left.
    if api.nvim_get_current_buf() ~= bufnr or buf_version(bufnr) ~= version then return end
    local now = api.nvim_win_get_cursor(0)
    if now[1] - 1 ~= row or now[2] ~= col or api.nvim_get_mode().mode:sub(1, 1) ~= 'i' then return end
    local items = logic.items_of(result)
    local g = items[1] and logic.ghost_from_item(items[1], row, line, col)
    if not g then
      clear('typedOver') -- the rest of a completion typed through, if one was shown
      return
    end
    -- The rest of the completion shown (typed through or accepted in part), answered again:
    -- still the same completion.
    if ghost and ghost.bufnr == bufnr and ghost.row == row and ghost.col == col and ghost.text == g.text then return end
    -- A new completion replaces one whose start was typed through.
    if ghost and ghost.id ~= g.id then clear('typedOver') end
    M.state.shown = M.state.shown + 1
    g.bufnr, g.row, g.col = bufnr, row, col
    g.accepted, g.language = 0, vim.bo[bufnr].filetype
    show(g)
    pcall(vim.cmd, 'redrawstatus')
  end, bufnr)
  if ok then
    id = rid
    pending = { id = rid, bufnr = bufnr }
    M.state.requests = M.state.requests + 1
  end
end

local function schedule_request()
  if timer then timer:stop() else timer = uv.new_timer() end
  timer:start(M.config.debounce_ms, 0, vim.schedule_wrap(function()
    if api.nvim_get_mode().mode:sub(1, 1) == 'i' then M.request(2) end
  end))
end

local function on_text_changed()
  local bufnr = api.nvim_get_current_buf()
  cancel_pending()
  local tick = api.nvim_buf_get_changedtick(bufnr)
  if ghost and ghost.bufnr == bufnr and ghost.tick ~= tick then
    -- Typing through the ghost text keeps showing the rest of it.
    local cur = api.nvim_win_get_cursor(0)
    local row, col = cur[1] - 1, cur[2]
    local rest
    if row == ghost.row and col >= ghost.col then
      local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
      rest = logic.typed_through(ghost.text, line:sub(ghost.col + 1, col))
    end
    if rest then
      show({ bufnr = bufnr, row = row, col = col, text = rest, insert = rest, start_col = col, end_col = col,
             id = ghost.id, accepted = ghost.accepted, language = ghost.language })
    else
      clear('typedOver')
    end
  end
  schedule_request()
end

local function on_cursor_moved()
  if not ghost then return end
  -- An edit moves the cursor too; TextChangedI (after this event) handles those.
  if api.nvim_buf_get_changedtick(ghost.bufnr) ~= ghost.tick then return end
  if not M.visible() then
    clear('dismissed')
    cancel_pending()
  end
end

-- ---- accept and dismiss ----

local function set_cursor_after(row, col, lines)
  if #lines == 1 then
    api.nvim_win_set_cursor(0, { row + 1, col + #lines[1] })
  else
    api.nvim_win_set_cursor(0, { row + #lines, #lines[#lines] })
  end
end

-- kind: 'all' (default), 'word' or 'line'. Returns false when no ghost text is shown.
function M.accept(kind)
  if not M.visible() then return false end
  local g = ghost
  local part = g.text
  if kind == 'word' then part = logic.next_word(g.text) elseif kind == 'line' then part = logic.next_line(g.text) end
  cancel_pending()
  if part == g.text then
    report(g, 'accepted', 0)
    -- The whole item: replace its range with its text; the cursor goes after the ghost text.
    local line = api.nvim_buf_get_lines(g.bufnr, g.row, g.row + 1, false)[1] or ''
    local typed = line:sub(g.start_col + 1, g.col)
    local lines = logic.split_lines(g.insert)
    clear()
    api.nvim_buf_set_text(g.bufnr, g.row, g.start_col, g.row, g.end_col, lines)
    set_cursor_after(g.row, g.start_col, logic.split_lines(typed .. g.text))
  else
    local lines = logic.split_lines(part)
    api.nvim_buf_set_text(g.bufnr, g.row, g.col, g.row, g.col, lines)
    set_cursor_after(g.row, g.col, lines)
    local cur = api.nvim_win_get_cursor(0)
    local rest = g.text:sub(#part + 1)
    local accepted = (g.accepted or 0) + vim.fn.strchars(part)
    report(g, 'acceptedPartially', accepted)
    show({ bufnr = g.bufnr, row = cur[1] - 1, col = cur[2], text = rest, insert = rest, start_col = cur[2],
           end_col = cur[2], id = g.id, accepted = accepted, language = g.language })
  end
  return true
end

function M.dismiss()
  if not ghost then return false end
  clear('dismissed')
  cancel_pending()
  return true
end

-- ---- the client ----

local function on_completion_updated(_, params)
  local bufnr = api.nvim_get_current_buf()
  local cur = api.nvim_win_get_cursor(0)
  local line = api.nvim_buf_get_lines(bufnr, cur[1] - 1, cur[1], false)[1] or ''
  local view = {
    enabled = M.config.enabled,
    insert_mode = api.nvim_get_mode().mode:sub(1, 1) == 'i',
    uri = vim.uri_from_bufnr(bufnr),
    version = buf_version(bufnr),
    line = cur[1] - 1,
    character = logic.utf16_col(line, cur[2]),
  }
  if logic.should_rerequest(params, view) then
    M.state.rerequests = M.state.rerequests + 1
    M.request(1)
  end
end

local function on_log_message(err, params, ctx, config)
  if params and type(params.message) == 'string' and params.message:find('no model is loaded', 1, true) then
    set_status('error', params.message)
  end
  return vim.lsp.handlers['window/logMessage'](err, params, ctx, config)
end

local function client_config()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  return {
    name = 'ghostline',
    cmd = logic.server_cmd(M.config),
    root_dir = root_dir,
    init_options = settings(),
    capabilities = caps,
    flags = { debounce_text_changes = 0 },
    handlers = {
      ['ghostline/completionUpdated'] = on_completion_updated,
      ['window/logMessage'] = on_log_message,
    },
    on_init = function(client, result)
      M.state.grows = logic.advertises_completion_updated(result and result.capabilities)
      if M.state.status ~= 'error' then set_status('ready') end
      call(client, 'notify', 'workspace/didChangeConfiguration', { settings = { ghostline = settings() } })
    end,
    on_exit = function(code, signal)
      client_id = nil
      pending = nil
      vim.schedule(function()
        clear()
        if code ~= 0 or (signal and signal ~= 0) then
          set_status('error', ('the server exited (code %d, signal %d); see :GhostlineLog'):format(code, signal or 0))
        else
          set_status('stopped')
        end
      end)
    end,
  }
end

local function filetype_enabled(ft)
  return logic.language_enabled(M.config, ft)
end

-- The binary can be run; otherwise the status and a message say what to do.
local function binary_found()
  if vim.fn.executable(M.config.cmd) == 1 then return true end
  local message = logic.binary_missing_message(M.config.cmd)
  if M.state.detail ~= message then vim.notify(message, vim.log.levels.ERROR) end
  set_status('error', message)
  return false
end

function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if not api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then return end
  if not filetype_enabled(vim.bo[bufnr].filetype) then return end
  if not get_client() and not binary_found() then return end
  if vim.lsp.start then
    if M.state.status == 'stopped' or M.state.status == 'error' then set_status('starting') end
    client_id = vim.lsp.start(client_config(), { bufnr = bufnr })
    return
  end
  if not get_client() then
    set_status('starting')
    client_id = vim.lsp.start_client(client_config())
    if not client_id then
      set_status('error', 'could not start ' .. M.config.cmd)
      return
    end
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
end

-- Starts the client without a buffer (for :checkhealth); buffers attach to it later.
function M.ensure_started()
  if get_client() then return client_id end
  if not binary_found() then return nil end
  local start = vim.lsp.start_client
  if not start then return nil end
  set_status('starting')
  client_id = start(client_config())
  if not client_id then set_status('error', 'could not start ' .. M.config.cmd) end
  return client_id
end

function M.stop()
  clear()
  cancel_pending()
  local client = get_client()
  client_id = nil
  if client then call(client, 'stop') end
  set_status('stopped')
end

function M.restart()
  local bufs = {}
  local client = get_client()
  if client then
    for b in pairs(client.attached_buffers or {}) do table.insert(bufs, b) end
  end
  M.stop()
  vim.wait(3000, function() return client == nil or call(client, 'is_stopped') end, 50)
  for _, b in ipairs(bufs) do M.attach(b) end
  if #bufs == 0 then M.attach(0) end
end

function M.set_enabled(on)
  M.config.enabled = on
  if not on then M.dismiss() end
  local client = get_client()
  if client then call(client, 'notify', 'workspace/didChangeConfiguration', { settings = { ghostline = settings() } }) end
  pcall(vim.cmd, 'redrawstatus')
end

function M.socket_path()
  return logic.socket_path(M.config, os.getenv('XDG_RUNTIME_DIR'), uv.getuid and uv.getuid() or 0)
end

-- For the statusline: `set statusline+=%{v:lua.require'ghostline'.status()}`.
function M.status()
  local s = M.state
  if not M.config.enabled then return 'ghostline: off' end
  local text = 'ghostline: ' .. s.status
  if s.status == 'ready' and s.last_latency_ms then text = text .. (' %dms'):format(math.floor(s.last_latency_ms + 0.5)) end
  return text
end

local function percentile(p)
  local l = vim.deepcopy(M.state.latencies)
  if #l == 0 then return nil end
  table.sort(l)
  return l[math.max(1, math.min(#l, math.ceil(p / 100 * #l)))]
end

function M.stats()
  local out = {
    client = {
      status = M.state.status,
      detail = M.state.detail,
      requests = M.state.requests,
      cancelRequestsSent = M.state.cancels,
      completionsShown = M.state.shown,
      lastLatencyMs = M.state.last_latency_ms,
      p50LatencyMs = percentile(50),
      p90LatencyMs = percentile(90),
      growingGhostText = M.state.grows,
      reRequestsOnCompletionUpdated = M.state.rerequests,
      outcomesReported = M.state.outcomes,
      serverCommand = table.concat(logic.server_cmd(M.config), ' '),
      daemonLog = M.socket_path() and (M.socket_path() .. '.log') or nil,
      lspLog = vim.lsp.get_log_path(),
    },
  }
  local client = get_client()
  if client and M.state.status ~= 'starting' then
    local res = call(client, 'request_sync', 'ghostline/stats', vim.empty_dict(), 3000, api.nvim_get_current_buf())
    out.daemon = res and (res.result or res.err) or 'no answer'
  end
  return out
end

local function open_scratch(lines, ft)
  vim.cmd('botright new')
  local b = api.nvim_get_current_buf()
  vim.bo[b].buftype = 'nofile'
  vim.bo[b].bufhidden = 'wipe'
  vim.bo[b].swapfile = false
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  if ft then vim.bo[b].filetype = ft end
end

local function map(key, fn, desc)
  if not key or key == '' then return end
  vim.keymap.set('i', key, function()
    if not fn() then
      api.nvim_feedkeys(api.nvim_replace_termcodes(key, true, false, true), 'n', false)
    end
  end, { desc = desc, silent = true })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.filetypes then M.config.filetypes = opts.filetypes end
  if opts and opts.daemon_args then M.config.daemon_args = opts.daemon_args end
  if opts and opts.languages then M.config.languages = opts.languages end
  root_dir = uv.cwd()
  api.nvim_set_hl(0, 'GhostlineSuggestion', { link = 'Comment', default = true })

  local group = api.nvim_create_augroup('ghostline', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = logic.attach_filetypes(M.config),
    callback = function(a) M.attach(a.buf) end,
  })
  api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    callback = function(a)
      local client = get_client()
      if client and vim.lsp.buf_is_attached(a.buf, client.id) then on_text_changed() end
    end,
  })
  api.nvim_create_autocmd('CursorMovedI', { group = group, callback = on_cursor_moved })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    callback = function()
      clear('dismissed')
      cancel_pending()
    end,
  })

  local km = M.config.keymaps or {}
  map(km.accept, function() return M.accept('all') end, 'Ghostline: accept the ghost text')
  map(km.accept_word, function() return M.accept('word') end, 'Ghostline: accept a word')
  map(km.accept_line, function() return M.accept('line') end, 'Ghostline: accept a line')
  map(km.dismiss, M.dismiss, 'Ghostline: dismiss the ghost text')

  local cmd = api.nvim_create_user_command
  cmd('GhostlineEnable', function() M.set_enabled(true) end, {})
  cmd('GhostlineDisable', function() M.set_enabled(false) end, {})
  cmd('GhostlineToggle', function() M.set_enabled(not M.config.enabled) end, {})
  cmd('GhostlineRestart', function() M.restart() end, {})
  cmd('GhostlineStats', function()
    open_scratch(vim.split(logic.pretty_json(M.stats()), '\n'), 'json')
  end, {})
  cmd('GhostlineLog', function()
    local sock = M.socket_path()
    local log = sock and (sock .. '.log')
    if log and vim.fn.filereadable(log) == 1 then
      vim.cmd('botright split ' .. vim.fn.fnameescape(log))
    end
    print(('Ghostline: daemon log %s; LSP client log %s'):format(log or '(TCP daemon)', vim.lsp.get_log_path()))
  end, {})

  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) then M.attach(b) end
  end
end

return M
