; Brace bodies, struct fields and interface methods. gofmt keeps `case` at the level of its
; `switch`/`select`, so each case clause is a block of its own. Composite literals are data.
[
  (block)
  (field_declaration_list)
  (interface_type)
  (expression_case)
  (default_case)
  (type_case)
  (communication_case)
] @block
