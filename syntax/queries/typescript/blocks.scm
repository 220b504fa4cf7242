; Bodies whose lines sit one level deeper than their header. Object literals, object types and
; arrays are not blocks.
[
  (statement_block)
  (class_body)
  (switch_body)
  (interface_body)
  (enum_body)
] @block

; `namespace N { ... }`, `declare module "m" { ... }`
(internal_module
  body: (statement_block) @block)
