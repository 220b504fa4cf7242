(comment) @comment

(html_comment) @comment

[
  (string)
  (template_string)
  (regex)
] @string

; JSDoc: a block comment that opens with `/**`.
((comment) @docstring
  (#match? @docstring "^/\\*\\*"))
