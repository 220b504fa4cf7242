(call_expression
  function: [
    (identifier) @reference.call
    (member_expression
      property: (property_identifier) @reference.call)
  ])

(new_expression
  constructor: [
    (identifier) @reference.call
    (member_expression
      property: (property_identifier) @reference.call)
  ])

; Type names in annotations, type arguments, unions, arrays and heritage clauses (not the
; names that declarations introduce).
(type_annotation
  (type_identifier) @reference.type)

(type_arguments
  (type_identifier) @reference.type)

(generic_type
  name: (type_identifier) @reference.type)

(union_type
  (type_identifier) @reference.type)

(array_type
  (type_identifier) @reference.type)

(extends_clause
  value: (identifier) @reference.type)

(implements_clause
  (type_identifier) @reference.type)

(extends_type_clause
  type: (type_identifier) @reference.type)

(nested_type_identifier
  name: (type_identifier) @reference.type)

(member_expression
  object: (identifier) @reference)

(arguments
  (identifier) @reference)
