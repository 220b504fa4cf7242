[
  (line_comment)
  (block_comment)
] @comment

[
  (string_literal)
  (raw_string_literal)
  (char_literal)
] @string

; `///`, `//!`, `/** */` and `/*! */`: the grammar marks them with a doc field.
(line_comment
  doc: (doc_comment)) @docstring

(block_comment
  doc: (doc_comment)) @docstring
