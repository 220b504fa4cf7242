(comment) @comment

[
  (string)
  (template_string)
  (regex)
] @string

; TSDoc/JSDoc: a block comment that opens with `/**`.
((comment) @docstring
  (#match? @docstring "^/\\*\\*"))

; Code inside a template string (`${...}`): completed as code, not as the string around it.
(template_substitution) @code
