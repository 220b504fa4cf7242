(call_expression
  function: [
    (identifier) @reference.call
    (field_expression
      field: (field_identifier) @reference.call)
    (qualified_identifier
      name: (identifier) @reference.call)
    (template_function
      name: (identifier) @reference.call)
    (qualified_identifier
      name: (template_function
        name: (identifier) @reference.call))
  ])

(new_expression
  type: (type_identifier) @reference.call)

; Type names where declarations and expressions use them.
[
  (declaration
    type: (type_identifier) @reference.type)
  (parameter_declaration
    type: (type_identifier) @reference.type)
  (optional_parameter_declaration
    type: (type_identifier) @reference.type)
  (field_declaration
    type: (type_identifier) @reference.type)
  (function_definition
    type: (type_identifier) @reference.type)
  (type_descriptor
    type: (type_identifier) @reference.type)
  (template_type
    name: (type_identifier) @reference.type)
  (qualified_identifier
    name: (type_identifier) @reference.type)
  (base_class_clause
    (type_identifier) @reference.type)
]

(argument_list
  (identifier) @reference)

(field_expression
  argument: (identifier) @reference)

(qualified_identifier
  scope: (namespace_identifier) @reference)
