(import_statement) @import

; `import fs = require("fs")`
(import_alias) @import

; CommonJS: `const fs = require("fs")`
((lexical_declaration
  (variable_declarator
    value: (call_expression
      function: (identifier) @_require))) @import
  (#eq? @_require "require"))
