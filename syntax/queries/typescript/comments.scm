(comment) @comment

[
  (string)
  (template_string)
  (regex)
] @string

; TSDoc/JSDoc: a block comment that opens with `/**`.
((comment) @docstring
  (#match? @docstring "^/\\*\\*"))
