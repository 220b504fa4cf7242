; `local json = require("json")`
((variable_declaration
  (assignment_statement
    (expression_list
      .
      value: (function_call
        name: (identifier) @_require)))) @import
  (#eq? @_require "require"))

; A bare `require "setup"` statement.
((chunk
  (function_call
    name: (identifier) @_require) @import)
  (#eq? @_require "require"))

((block
  (function_call
    name: (identifier) @_require) @import)
  (#eq? @_require "require"))
