(call_expression
  function: [
    (identifier) @reference.call
    (selector_expression
      field: (field_identifier) @reference.call)
  ])

; Type names where declarations, conversions and literals use them.
[
  (parameter_declaration
    type: (type_identifier) @reference.type)
  (field_declaration
    type: (type_identifier) @reference.type)
  (var_spec
    type: (type_identifier) @reference.type)
  (pointer_type
    (type_identifier) @reference.type)
  (slice_type
    element: (type_identifier) @reference.type)
  (map_type
    value: (type_identifier) @reference.type)
  (composite_literal
    type: (type_identifier) @reference.type)
  (generic_type
    type: (type_identifier) @reference.type)
  (qualified_type
    name: (type_identifier) @reference.type)
  (method_declaration
    result: (type_identifier) @reference.type)
  (function_declaration
    result: (type_identifier) @reference.type)
]

; Packages and values whose members are used (`strings.Split`, `cfg.Limit`), and arguments.
(selector_expression
  operand: (identifier) @reference)

(argument_list
  (identifier) @reference)
