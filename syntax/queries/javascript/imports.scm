(import_statement) @import

; CommonJS: `const fs = require("fs")`, `require("./setup")`
((lexical_declaration
  (variable_declarator
    value: (call_expression
      function: (identifier) @_require))) @import
  (#eq? @_require "require"))

((variable_declaration
  (variable_declarator
    value: (call_expression
      function: (identifier) @_require))) @import
  (#eq? @_require "require"))

((expression_statement
  (call_expression
    function: (identifier) @_require)) @import
  (#eq? @_require "require"))
