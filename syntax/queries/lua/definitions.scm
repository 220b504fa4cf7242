; `function name()`, `local function name()`, `function M.name()`
(function_declaration
  name: [
    (identifier) @name
    (dot_index_expression
      field: (identifier) @name)
  ]) @definition.function

; `function M:name()`
(function_declaration
  name: (method_index_expression
    method: (identifier) @name)) @definition.method

; `M.name = function() ... end`, `local name = function() ... end`
(assignment_statement
  (variable_list
    .
    name: [
      (identifier) @name
      (dot_index_expression
        field: (identifier) @name)
    ])
  (expression_list
    .
    value: (function_definition))) @definition.function

; `local M = {}`: a module table.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list
        .
        name: (identifier) @name)
      (expression_list
        .
        value: (table_constructor)))) @definition.module)

; Other file-level locals.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list
        .
        name: (identifier) @name)
      (expression_list
        .
        value: [
          (string)
          (number)
          (true)
          (false)
          (nil)
          (function_call)
          (identifier)
          (dot_index_expression)
          (binary_expression)
        ]))) @definition.variable)
