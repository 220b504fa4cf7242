(class_definition
  name: (identifier) @name) @definition.class

; Functions defined directly in a class body are methods; all others are functions.
(class_definition
  body: (block
    (function_definition
      name: (identifier) @name) @definition.method))

(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition
        name: (identifier) @name) @definition.method)))

(module
  (function_definition
    name: (identifier) @name) @definition.function)

(module
  (decorated_definition
    definition: (function_definition
      name: (identifier) @name) @definition.function))

(function_definition
  body: (block
    (function_definition
      name: (identifier) @name) @definition.function))

; Module-level names: UPPER_CASE ones are constants, the rest variables.
((module
  (expression_statement
    (assignment
      left: (identifier) @name) @definition.constant))
  (#match? @name "^[A-Z][A-Z0-9_]*$"))

((module
  (expression_statement
    (assignment
      left: (identifier) @name) @definition.variable))
  (#not-match? @name "^[A-Z][A-Z0-9_]*$"))

(module
  (type_alias_statement
    (type
      (identifier) @name)) @definition.type)
