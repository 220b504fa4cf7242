-- The plugin's logic that does not touch editor state: the server command, LSP positions,
-- the ghost text of a completion item, partial accepts, typing through, and when a
-- `ghostline/completionUpdated` notification re-requests. Unit-tested in test/unit.lua.
local M = {}

M.default_filetypes = {
  'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
  'c', 'cpp', 'go', 'rust', 'java', 'lua',
}

-- The server command: `ghostline connect [ADDR] -- [daemon options]`.
function M.server_cmd(opts)
  local cmd = { opts.cmd or 'ghostline', 'connect' }
  if opts.address and opts.address ~= '' then
    local addr = opts.address
    if not addr:find(':') then addr = 'unix:' .. addr end
    table.insert(cmd, addr)
  end
  local serve = {}
  if opts.model and opts.model ~= '' then vim.list_extend(serve, { '--model', opts.model }) end
  if opts.draft and opts.draft ~= '' then vim.list_extend(serve, { '--draft', opts.draft }) end
  if opts.threads and opts.threads > 0 then vim.list_extend(serve, { '--threads', tostring(opts.threads) }) end
  vim.list_extend(serve, opts.daemon_args or {})
  if #serve > 0 then
    table.insert(cmd, '--')
    vim.list_extend(cmd, serve)
  end
  return cmd
end

-- The per-session settings the daemon accepts (initializationOptions, didChangeConfiguration).
-- `completion` is 'auto', 'line' or 'block'; `languages` maps a filetype (the languageId the
-- client sends) to true/false, sent as an object even when empty.
function M.client_settings(opts)
  local languages = vim.empty_dict()
  for ft, on in pairs(opts.languages or {}) do languages[ft] = on end
  return {
    enabled = opts.enabled ~= false,
    debounceMs = opts.debounce_ms or 10,
    maxTokens = opts.max_tokens or 0,
    deadlineMs = opts.deadline_ms or 0,
    completion = opts.completion or 'auto',
    languages = languages,
  }
end

-- Whether buffers of filetype `ft` get completions: listed in `filetypes` or switched on in
-- `languages`, and not switched off there.
function M.language_enabled(opts, ft)
  local languages = opts.languages or {}
  if languages[ft] ~= nil then return languages[ft] == true end
  return vim.tbl_contains(opts.filetypes or M.default_filetypes, ft)
end

-- The filetypes whose buffers the plugin attaches to.
function M.attach_filetypes(opts)
  local out = {}
  for _, ft in ipairs(opts.filetypes or M.default_filetypes) do
    if M.language_enabled(opts, ft) then table.insert(out, ft) end
  end
  for ft, on in pairs(opts.languages or {}) do
    if on == true and not vim.tbl_contains(out, ft) then table.insert(out, ft) end
  end
  table.sort(out)
  return out
end

-- What to tell the user when the binary cannot be started: the path tried, the option that
-- names it, and how to install it.
function M.binary_missing_message(cmd)
  local tried
  if cmd:find('/', 1, true) then
    tried = cmd .. ' does not exist or is not executable'
  else
    tried = "'" .. cmd .. "' is not on PATH"
  end
  return 'ghostline: cannot start the daemon: ' .. tried .. ". Set the binary with require('ghostline')"
    .. ".setup({ cmd = '/full/path/to/ghostline' }), or install it from a Ghostline checkout with"
    .. ' `scripts/setup --install` (into ~/.local/bin, which must be on PATH).'
end

-- The id of a Ghostline inline-completion item (in its ghostline.completionAccepted command),
-- which the plugin reports the completion's fate by; nil for other servers' items.
function M.completion_id(item)
  local c = type(item) == 'table' and item.command or nil
  if type(c) ~= 'table' or c.command ~= 'ghostline.completionAccepted' then return nil end
  local id = type(c.arguments) == 'table' and c.arguments[1] or nil
  return type(id) == 'number' and id or nil
end

-- The params of ghostline/completionOutcome; `chars` the characters kept so far.
function M.outcome_params(id, outcome, chars, language)
  local p = { id = id, outcome = outcome, acceptedChars = chars or 0 }
  if language and language ~= '' then p.languageId = language end
  return p
end

-- The socket `ghostline connect` uses, nil for TCP. Its default is in the user's private
-- directory: $XDG_RUNTIME_DIR, else /tmp/ghostline-UID/ (mirrors lsp/private_dir.cpp; connect
-- makes and checks the directory).
function M.socket_path(opts, env_runtime_dir, uid)
  local addr = opts.address
  if addr and addr ~= '' then
    if addr:sub(1, 5) == 'unix:' then return addr:sub(6) end
    if addr:find(':') then return nil end
    return addr
  end
  if env_runtime_dir and env_runtime_dir ~= '' then
    local dir = env_runtime_dir:gsub('(.)/+$', '%1')
    return dir .. '/ghostline.sock'
  end
  return '/tmp/ghostline-' .. tostring(uid) .. '/ghostline.sock'
end

-- Iterates code points of a UTF-8 string (invalid bytes count as one unit each).
local function utf8_codes(s)
  local i = 1
  return function()
    if i > #s then return nil end
    local b = s:byte(i)
    local len, cp
    if b < 0x80 then len, cp = 1, b
    elseif b >= 0xF0 and b < 0xF8 then len, cp = 4, b % 0x08
    elseif b >= 0xE0 then len, cp = 3, b % 0x10
    elseif b >= 0xC0 then len, cp = 2, b % 0x20
    else len, cp = 1, b end
    for k = 1, len - 1 do
      local nb = s:byte(i + k)
      if not nb then len = k break end
      cp = cp * 64 + nb % 64
    end
    local start = i
    i = i + len
    return start, cp
  end
end

-- UTF-16 code units in the first `byte_col` bytes of `line` (the LSP default encoding).
function M.utf16_col(line, byte_col)
  local prefix = line:sub(1, byte_col)
  local n = 0
  for _, c in utf8_codes(prefix) do
    n = n + ((c >= 0x10000) and 2 or 1)
  end
  return n
end

-- Byte column in `line` of a UTF-16 character offset.
function M.byte_col(line, utf16)
  local n = 0
  for start, c in utf8_codes(line) do
    if n >= utf16 then return start - 1 end
    n = n + ((c >= 0x10000) and 2 or 1)
  end
  return #line
end

local function item_text(item)
  local t = item.insertText
  if type(t) == 'table' then
    -- A snippet: drop tab stops and placeholders' markup, keep their text.
    t = t.value or ''
    t = t:gsub('%${%d+:([^}]*)}', '%1'):gsub('%$%d+', ''):gsub('\\([%$}\\])', '%1')
  end
  return t or ''
end

-- The ghost text an inline-completion item shows at the cursor, or nil when it does not apply.
-- `line` is the cursor's line, `col` the cursor's byte column, `row` its 0-based line.
-- An item may replace a range that starts before the cursor on the same line: the part
-- between the range's start and the cursor must then be the start of its text.
-- Returns { text = ghost, insert = full text, start_col, end_col (bytes, on `row`) }.
function M.ghost_from_item(item, row, line, col)
  if type(item) ~= 'table' then return nil end
  local text = item_text(item)
  local start_col, end_col = col, col
  local r = item.range
  if type(r) == 'table' and r.start and r['end'] then
    if r.start.line ~= row or r['end'].line ~= row then return nil end
    start_col = M.byte_col(line, r.start.character)
    end_col = M.byte_col(line, r['end'].character)
    if start_col > col or end_col < col then return nil end
    local typed = line:sub(start_col + 1, col)
    if text:sub(1, #typed) ~= typed then return nil end
    text = text:sub(#typed + 1)
    -- What the range replaces after the cursor, when the text ends with it, is not ghost text.
    local after = line:sub(col + 1, end_col)
    if after ~= '' and text:sub(-#after) == after then text = text:sub(1, #text - #after) end
  end
  if text == '' then return nil end
  return { text = text, insert = item_text(item), start_col = start_col, end_col = end_col, id = M.completion_id(item) }
end

-- The items of an inline-completion result (a list or { items = [...] }).
function M.items_of(result)
  if type(result) ~= 'table' then return {} end
  if result.items then return result.items end
  return result
end

function M.split_lines(text)
  local lines = {}
  for l in (text .. '\n'):gmatch('(.-)\n') do table.insert(lines, l) end
  return lines
end

-- The next word of the ghost text: leading blanks, then a run of word characters or a run of
-- other non-blank characters; a ghost text starting with a newline takes the newline and the
-- next line's indentation.
function M.next_word(text)
  local nl = text:match('^\n[ \t]*')
  if nl then return nl end
  local w = text:match('^[ \t]*[%w_]+') or text:match('^[ \t]*[^%w_%s]+') or text:match('^[ \t]+')
  return w or text:sub(1, 1)
end

-- The rest of the ghost text's first line; when that is empty, the newline and the next line.
function M.next_line(text)
  local first = text:match('^[^\n]*')
  if first ~= '' then return first end
  local nxt = text:match('^\n[^\n]*')
  return nxt or text
end

-- Typing through: `typed` was inserted where `ghost` was shown; the rest of it, or nil when the
-- typing does not follow the ghost text.
function M.typed_through(ghost, typed)
  if typed == '' then return ghost end
  if #typed < #ghost and ghost:sub(1, #typed) == typed then return ghost:sub(#typed + 1) end
  return nil
end

-- Whether a `ghostline/completionUpdated` notification should re-request: completions on, in
-- insert mode, same document, same version (no edit since) and same cursor position (UTF-16).
function M.should_rerequest(params, view)
  if type(params) ~= 'table' or type(view) ~= 'table' then return false end
  if not view.enabled or not view.insert_mode then return false end
  local td, pos = params.textDocument, params.position
  if type(td) ~= 'table' or type(pos) ~= 'table' then return false end
  if type(params.version) ~= 'number' then return false end
  return td.uri == view.uri and params.version == view.version and pos.line == view.line
    and pos.character == view.character
end

function M.advertises_completion_updated(capabilities)
  local e = type(capabilities) == 'table' and capabilities.experimental or nil
  local g = type(e) == 'table' and e.ghostline or nil
  return type(g) == 'table' and g.completionUpdated == true
end

-- A small JSON pretty printer for :GhostlineStats (vim.fn.json_encode prints one line).
function M.pretty_json(value, indent)
  indent = indent or ''
  local t = type(value)
  if t == 'table' then
    local is_list = vim.tbl_islist(value) and (next(value) ~= nil or getmetatable(value) == vim._empty_dict_mt)
    if next(value) == nil then return is_list and '[]' or '{}' end
    local inner = indent .. '  '
    local parts = {}
    if vim.tbl_islist(value) then
      for _, v in ipairs(value) do table.insert(parts, inner .. M.pretty_json(v, inner)) end
      return '[\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. ']'
    end
    local keys = vim.tbl_keys(value)
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
      table.insert(parts, inner .. vim.fn.json_encode(tostring(k)) .. ': ' .. M.pretty_json(value[k], inner))
    end
    return '{\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. '}'
  elseif value == nil or value == vim.NIL then
    return 'null'
  end
  return vim.fn.json_encode(value)
end

return M
