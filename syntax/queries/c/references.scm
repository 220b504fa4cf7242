(call_expression
  function: [
    (identifier) @reference.call
    (field_expression
      field: (field_identifier) @reference.call)
  ])

; Type names where a declaration uses them.
[
  (declaration
    type: (type_identifier) @reference.type)
  (parameter_declaration
    type: (type_identifier) @reference.type)
  (field_declaration
    type: (type_identifier) @reference.type)
  (function_definition
    type: (type_identifier) @reference.type)
  (type_descriptor
    type: (type_identifier) @reference.type)
  (type_definition
    type: (type_identifier) @reference.type)
]

; `struct point *p;`: a struct named without its body.
(struct_specifier
  name: (type_identifier) @reference.type
  !body)

(argument_list
  (identifier) @reference)

(field_expression
  argument: (identifier) @reference)
