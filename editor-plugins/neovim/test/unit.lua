-- Unit tests of lua/ghostline/logic.lua and of the ghost-text rendering and accept paths of
-- lua/ghostline/init.lua in a headless Neovim, without a daemon:
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=editor-plugins/neovim' -c 'luafile editor-plugins/neovim/test/unit.lua'
local L = require('ghostline.logic')
local failures, count = 0, 0

local function eq(a, b, what)
  if not vim.deep_equal(a, b) then error(('%s: expected %s, got %s'):format(what or '', vim.inspect(b), vim.inspect(a)), 2) end
end

local function test(name, fn)
  count = count + 1
  local ok, e = pcall(fn)
  if ok then
    io.stdout:write('ok   ' .. name .. '\n')
  else
    failures = failures + 1
    io.stdout:write('FAIL ' .. name .. ': ' .. tostring(e) .. '\n')
  end
end

test('server_cmd: connect on PATH by default', function()
  eq(L.server_cmd({}), { 'ghostline', 'connect' })
end)

test('server_cmd: address, model, draft, threads and daemon args after --', function()
  eq(L.server_cmd({ cmd = '/b/ghostline', address = '/tmp/s.sock', model = '/m.gguf', draft = '/d.gguf', threads = 2,
    daemon_args = { '--record', '/tmp/r.jsonl' } }),
    { '/b/ghostline', 'connect', 'unix:/tmp/s.sock', '--', '--model', '/m.gguf', '--draft', '/d.gguf', '--threads', '2',
      '--record', '/tmp/r.jsonl' })
  eq(L.server_cmd({ address = 'tcp:127.0.0.1:9000' }), { 'ghostline', 'connect', 'tcp:127.0.0.1:9000' })
end)

test('client_settings and socket_path', function()
  eq(L.client_settings({ enabled = false, max_tokens = 8 }),
    { enabled = false, debounceMs = 10, maxTokens = 8, deadlineMs = 0, completion = 'auto', languages = vim.empty_dict() })
  local s = L.client_settings({ completion = 'line', languages = { markdown = false } })
  eq(s.completion, 'line')
  eq(s.languages, { markdown = false })
  -- An empty map goes out as a JSON object, which the daemon requires.
  eq(vim.fn.json_encode(L.client_settings({}).languages), '{}')
  eq(L.socket_path({}, '/run/user/5', 5), '/run/user/5/ghostline.sock')
  eq(L.socket_path({}, '/run/user/5/', 5), '/run/user/5/ghostline.sock')
  eq(L.socket_path({}, nil, 5), '/tmp/ghostline-5/ghostline.sock')
  eq(L.socket_path({}, '', 5), '/tmp/ghostline-5/ghostline.sock')
  eq(L.socket_path({ address = 'unix:/x.sock' }), '/x.sock')
  eq(L.socket_path({ address = 'tcp:9000' }), nil)
end)

test('languages switch filetypes on and off', function()
  local opts = { filetypes = { 'python', 'lua' }, languages = { lua = false, markdown = true } }
  eq(L.language_enabled(opts, 'python'), true)
  eq(L.language_enabled(opts, 'lua'), false)
  eq(L.language_enabled(opts, 'markdown'), true)
  eq(L.language_enabled(opts, 'rust'), false, 'not in filetypes')
  eq(L.attach_filetypes(opts), { 'markdown', 'python' })
  eq(L.language_enabled({}, 'rust'), true, 'the default filetypes')
end)

test('binary_missing_message names the path tried, the option and the install step', function()
  local m = L.binary_missing_message('ghostline')
  assert(m:find("'ghostline' is not on PATH", 1, true), m)
  assert(m:find("setup({ cmd = '/full/path/to/ghostline' })", 1, true), m)
  assert(m:find('scripts/setup --install', 1, true), m)
  assert(m:find('~/.local/bin', 1, true), m)
  m = L.binary_missing_message('/opt/g/bin/ghostline')
  assert(m:find('/opt/g/bin/ghostline does not exist or is not executable', 1, true), m)
end)

test('completion_id and outcome_params', function()
  local item = { insertText = 'x', command = { title = 't', command = 'ghostline.completionAccepted', arguments = { 42 } } }
  eq(L.completion_id(item), 42)
  eq(L.completion_id({ insertText = 'x' }), nil)
  eq(L.completion_id({ insertText = 'x', command = { command = 'other', arguments = { 1 } } }), nil)
  eq(L.ghost_from_item(item, 0, '', 0).id, 42)
  eq(L.outcome_params(42, 'acceptedPartially', 3, 'python'),
    { id = 42, outcome = 'acceptedPartially', acceptedChars = 3, languageId = 'python' })
end)

test('utf16_col and byte_col', function()
  local line = 'a\u{e9}\u{1F600}b' -- a, é (2 bytes), 😀 (4 bytes, 2 UTF-16 units), b
  eq(L.utf16_col(line, 0), 0)
  eq(L.utf16_col(line, 1), 1)
  eq(L.utf16_col(line, 3), 2)
  eq(L.utf16_col(line, 7), 4)
  eq(L.utf16_col(line, #line), 5)
  eq(L.byte_col(line, 2), 3)
  eq(L.byte_col(line, 4), 7)
  eq(L.byte_col(line, 99), #line)
end)

test('ghost_from_item: plain insert at the cursor', function()
  local g = L.ghost_from_item({ insertText = 'rint(x)' }, 0, 'p', 1)
  eq(g, { text = 'rint(x)', insert = 'rint(x)', start_col = 1, end_col = 1 })
  eq(L.ghost_from_item({ insertText = '' }, 0, 'p', 1), nil)
  eq(L.ghost_from_item(nil, 0, 'p', 1), nil)
end)

test('ghost_from_item: a range starting before the cursor', function()
  local item = { insertText = 'print(x)', range = { start = { line = 3, character = 4 }, ['end'] = { line = 3, character = 6 } } }
  local g = L.ghost_from_item(item, 3, '    pr', 6)
  eq(g, { text = 'int(x)', insert = 'print(x)', start_col = 4, end_col = 6 })
  -- The typed part does not match the item's text: not applicable.
  eq(L.ghost_from_item(item, 3, '    px', 6), nil)
  -- Another line: not applicable.
  eq(L.ghost_from_item(item, 2, '    pr', 6), nil)
end)

test('ghost_from_item: a range replacing text after the cursor', function()
  local item = { insertText = 'x, y)', range = { start = { line = 0, character = 2 }, ['end'] = { line = 0, character = 3 } } }
  local g = L.ghost_from_item(item, 0, 'f()', 2)
  eq(g, { text = 'x, y', insert = 'x, y)', start_col = 2, end_col = 3 })
end)

test('ghost_from_item: snippet text loses its markup', function()
  local g = L.ghost_from_item({ insertText = { kind = 'snippet', value = 'f(${1:a}, $2)$0' } }, 0, '', 0)
  eq(g.text, 'f(a, )')
end)

test('items_of: list or InlineCompletionList', function()
  eq(L.items_of({ items = { { insertText = 'a' } } }), { { insertText = 'a' } })
  eq(L.items_of({ { insertText = 'b' } }), { { insertText = 'b' } })
  eq(L.items_of(nil), {})
  eq(L.items_of(vim.NIL), {})
end)

test('next_word and next_line', function()
  eq(L.next_word('foo(bar)'), 'foo')
  eq(L.next_word('  return x'), '  return')
  eq(L.next_word('(a, b)'), '(')
  eq(L.next_word('.append(x)'), '.')
  eq(L.next_word('\n    return x'), '\n    ')
  eq(L.next_line('x + 1\n    return x'), 'x + 1')
  eq(L.next_line('\n    return x\nfoo'), '\n    return x')
  eq(L.next_line('abc'), 'abc')
end)

test('typed_through', function()
  eq(L.typed_through('return x', 're'), 'turn x')
  eq(L.typed_through('return x', ''), 'return x')
  eq(L.typed_through('return x', 'rx'), nil)
  eq(L.typed_through('return x', 'return x'), nil) -- all typed: nothing left to show
end)

test('should_rerequest: same document, version and cursor, in insert mode', function()
  local p = { textDocument = { uri = 'file:///a.py' }, version = 5, position = { line = 2, character = 7 } }
  local v = { enabled = true, insert_mode = true, uri = 'file:///a.py', version = 5, line = 2, character = 7 }
  eq(L.should_rerequest(p, v), true)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { version = 6 })), false)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { character = 8 })), false)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { line = 1 })), false)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { uri = 'file:///b.py' })), false)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { insert_mode = false })), false)
  eq(L.should_rerequest(p, vim.tbl_extend('force', v, { enabled = false })), false)
  eq(L.should_rerequest({ version = 5 }, v), false)
  eq(L.should_rerequest(nil, v), false)
end)

test('advertises_completion_updated', function()
  eq(L.advertises_completion_updated({ experimental = { ghostline = { completionUpdated = true } } }), true)
  eq(L.advertises_completion_updated({ experimental = { ghostlineStats = true } }), false)
  eq(L.advertises_completion_updated(nil), false)
end)

test('pretty_json round-trips', function()
  local v = { a = { 1, 2, { b = 'x' } }, c = vim.NIL, d = 'q"', e = {} }
  local back = vim.fn.json_decode(L.pretty_json(v))
  eq(back.a, { 1, 2, { b = 'x' } })
  eq(back.d, 'q"')
  eq(back.c, vim.NIL)
end)

-- The extmarks and accept paths of init.lua, with a ghost text planted as a reply would.
test('render, type through, accept word/line/all and dismiss in a buffer', function()
  local gl = require('ghostline')
  gl.setup({ filetypes = {} })
  vim.o.virtualedit = 'onemore' -- the cursor past the end of a line, as in insert mode
  local ns = vim.api.nvim_create_namespace('ghostline')
  local b = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(b)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { 'def f(x):', '    ret' })
  vim.api.nvim_win_set_cursor(0, { 2, 7 })
  -- Plant a ghost text through the module's own function (what a reply does).
  local show = nil
  for i = 1, 50 do
    local name, value = debug.getupvalue(gl.request, i)
    if not name then break end
    if name == 'show' then show = value end
  end
  assert(show, 'show() is an upvalue of request()')
  show({ bufnr = b, row = 1, col = 7, text = 'urn x + 1\n# done', insert = 'urn x + 1\n# done', start_col = 7, end_col = 7 })
  eq(gl.visible(), true, 'visible')
  local marks = vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })
  eq(#marks, 1, 'one extmark')
  local d = marks[1][4]
  eq(d.virt_text[1][1], 'urn x + 1', 'first line as virtual text')
  eq(d.virt_lines[1][1][1], '# done', 'the rest as virtual lines')
  eq(gl.accept('word'), true)
  eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { 'def f(x):', '    return' }, 'accept word')
  eq(gl.ghost_text(), ' x + 1\n# done', 'remaining ghost')
  eq(gl.accept('line'), true)
  eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { 'def f(x):', '    return x + 1' }, 'accept line')
  eq(gl.ghost_text(), '\n# done')
  eq(gl.accept('all'), true)
  eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { 'def f(x):', '    return x + 1', '# done' }, 'accept all')
  eq(vim.api.nvim_win_get_cursor(0), { 3, 6 }, 'cursor after the accepted text')
  eq(gl.visible(), false)
  eq(#vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, {}), 0, 'no extmark left')
  show({ bufnr = b, row = 2, col = 6, text = '!', insert = '!', start_col = 6, end_col = 6 })
  eq(gl.dismiss(), true)
  eq(gl.visible(), false)
  eq(gl.accept('all'), false, 'nothing to accept')
end)

test('accept replaces an item range that started before the cursor', function()
  local gl = require('ghostline')
  local b = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(b)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { 'f(a)' })
  vim.api.nvim_win_set_cursor(0, { 1, 3 })
  local show
  for i = 1, 50 do
    local name, value = debug.getupvalue(gl.request, i)
    if not name then break end
    if name == 'show' then show = value end
  end
  local g = L.ghost_from_item({ insertText = 'ab, c)', range = { start = { line = 0, character = 2 }, ['end'] = { line = 0, character = 4 } } }, 0, 'f(a)', 3)
  eq(g.text, 'b, c')
  g.bufnr, g.row, g.col = b, 0, 3
  show(g)
  eq(gl.accept('all'), true)
  eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { 'f(ab, c)' })
  eq(vim.api.nvim_win_get_cursor(0), { 1, 7 })
end)

-- The reports of what became of each shown completion, sent to a stand-in client.
test('accept, accept in part and dismiss report ghostline/completionOutcome', function()
  local gl = require('ghostline')
  local function upvalue(fn, wanted)
    for i = 1, 80 do
      local name, value = debug.getupvalue(fn, i)
      if not name then return nil end
      if name == wanted then return value, i end
    end
  end
  local show = upvalue(gl.request, 'show')
  local get_client = upvalue(gl.request, 'get_client')
  local _, id_index = upvalue(get_client, 'client_id')
  local sent = {}
  local fake = { id = 1, notify = function(method, params) table.insert(sent, { method, params }) end,
                 cancel_request = function() end }
  fake.request = function() return false end
  fake.request_sync = function() return nil end
  local real_get = vim.lsp.get_client_by_id
  vim.lsp.get_client_by_id = function() return fake end
  debug.setupvalue(get_client, id_index, 1)
  local ok, e = pcall(function()
    local b = vim.api.nvim_create_buf(true, false)
    vim.api.nvim_set_current_buf(b)
    vim.bo[b].filetype = 'python'
    vim.api.nvim_buf_set_lines(b, 0, -1, false, { 'x = ' })
    vim.api.nvim_win_set_cursor(0, { 1, 4 })
    local function plant(id, text)
      local cur = vim.api.nvim_win_get_cursor(0)
      show({ bufnr = b, row = cur[1] - 1, col = cur[2], text = text, insert = text, start_col = cur[2], end_col = cur[2],
             id = id, accepted = 0, language = 'python' })
    end
    plant(7, 'foo(bar) + 1')
    gl.accept('word')
    gl.accept('word')
    gl.accept('all')
    plant(8, 'baz')
    gl.dismiss()
    eq(sent, {
      { 'ghostline/completionOutcome', { id = 7, outcome = 'acceptedPartially', acceptedChars = 3, languageId = 'python' } },
      { 'ghostline/completionOutcome', { id = 7, outcome = 'acceptedPartially', acceptedChars = 4, languageId = 'python' } },
      { 'ghostline/completionOutcome', { id = 7, outcome = 'accepted', acceptedChars = 0, languageId = 'python' } },
      { 'ghostline/completionOutcome', { id = 8, outcome = 'dismissed', acceptedChars = 0, languageId = 'python' } },
    })
    eq(gl.stats().client.outcomesReported, { acceptedPartially = 2, accepted = 1, dismissed = 1 })
  end)
  vim.lsp.get_client_by_id = real_get
  debug.setupvalue(get_client, id_index, nil)
  if not ok then error(e, 0) end
end)

io.stdout:write(('%d tests, %d failed\n'):format(count, failures))
vim.cmd(failures == 0 and 'qall!' or 'cquit!')
