; Brace bodies of classes, interfaces, enums, records, annotations, methods, constructors and
; statements, switch bodies, and the statements under each `case x:` label. Array initializers
; are data.
[
  (block)
  (class_body)
  (interface_body)
  (enum_body)
  (annotation_type_body)
  (constructor_body)
  (switch_block)
  (switch_block_statement_group)
] @block
