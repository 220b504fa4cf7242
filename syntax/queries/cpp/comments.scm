(comment) @comment

[
  (string_literal)
  (raw_string_literal)
  (char_literal)
  (system_lib_string)
] @string

; Doxygen: `/** ... */`, `/*! ... */`, `/// ...`, `//! ...`
((comment) @docstring
  (#match? @docstring "^(/\\*\\*[^/]|/\\*!|///[^/]|///$|//!)"))
