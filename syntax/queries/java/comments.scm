[
  (line_comment)
  (block_comment)
] @comment

[
  (string_literal)
  (character_literal)
] @string

; Javadoc: a block comment that opens with `/**`.
((block_comment) @docstring
  (#match? @docstring "^/\\*\\*"))
