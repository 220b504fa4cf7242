(comment) @comment

(string) @string

; LuaDoc/EmmyLua annotations: comments that open with `---`.
((comment) @docstring
  (#match? @docstring "^---"))
