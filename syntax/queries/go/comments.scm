(comment) @comment

[
  (interpreted_string_literal)
  (raw_string_literal)
  (rune_literal)
] @string

; Go's doc comments are the comments directly above a top-level declaration.
(source_file
  (comment) @docstring
  .
  [
    (function_declaration)
    (method_declaration)
    (type_declaration)
    (const_declaration)
    (var_declaration)
  ])
