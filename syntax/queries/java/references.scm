(method_invocation
  name: (identifier) @reference.call)

(object_creation_expression
  type: [
    (type_identifier) @reference.call
    (generic_type
      (type_identifier) @reference.call)
  ])

; Java's grammar gives declarations `identifier` names, so every type_identifier is a use.
(type_identifier) @reference.type

; Objects and classes whose members are used, and arguments.
(method_invocation
  object: (identifier) @reference)

(field_access
  object: (identifier) @reference)

(argument_list
  (identifier) @reference)
