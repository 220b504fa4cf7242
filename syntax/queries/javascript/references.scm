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

(class_heritage
  (identifier) @reference.type)

(member_expression
  object: (identifier) @reference)

(arguments
  (identifier) @reference)

(jsx_opening_element
  name: (identifier) @reference)

(jsx_self_closing_element
  name: (identifier) @reference)
