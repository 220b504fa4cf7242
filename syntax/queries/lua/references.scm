(function_call
  name: [
    (identifier) @reference.call
    (dot_index_expression
      field: (identifier) @reference.call)
    (method_index_expression
      method: (identifier) @reference.call)
  ])

; Tables whose fields and methods are used (`string.format`, `self:push`), and arguments.
(dot_index_expression
  table: (identifier) @reference)

(method_index_expression
  table: (identifier) @reference)

(arguments
  (identifier) @reference)
