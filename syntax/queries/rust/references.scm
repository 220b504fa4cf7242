(call_expression
  function: [
    (identifier) @reference.call
    (field_expression
      field: (field_identifier) @reference.call)
    (scoped_identifier
      name: (identifier) @reference.call)
    (generic_function
      function: (identifier) @reference.call)
    (generic_function
      function: (scoped_identifier
        name: (identifier) @reference.call))
  ])

(macro_invocation
  macro: (identifier) @reference.call)

; Type names where signatures, bindings, impls and paths use them.
[
  (parameter
    type: (type_identifier) @reference.type)
  (let_declaration
    type: (type_identifier) @reference.type)
  (field_declaration
    type: (type_identifier) @reference.type)
  (function_item
    return_type: (type_identifier) @reference.type)
  (reference_type
    type: (type_identifier) @reference.type)
  (generic_type
    type: (type_identifier) @reference.type)
  (type_arguments
    (type_identifier) @reference.type)
  (scoped_type_identifier
    name: (type_identifier) @reference.type)
  (impl_item
    trait: (type_identifier) @reference.type)
  (impl_item
    type: (type_identifier) @reference.type)
  (struct_expression
    name: (type_identifier) @reference.type)
]

; Paths and values whose members are used, and arguments.
(scoped_identifier
  path: (identifier) @reference)

(field_expression
  value: (identifier) @reference)

(arguments
  (identifier) @reference)
