[
  (class_declaration
    name: (identifier) @name)
  (class
    name: (identifier) @name)
] @definition.class

(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

[
  (function_declaration
    name: (identifier) @name)
  (generator_function_declaration
    name: (identifier) @name)
  (function_expression
    name: (identifier) @name)
] @definition.function

; `const f = () => ...`, `let g = function () {...}`
(variable_declarator
  name: (identifier) @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

(assignment_expression
  left: (member_expression
    property: (property_identifier) @name)
  right: [
    (arrow_function)
    (function_expression)
  ]) @definition.function

; Top-level constants and variables that are not functions.
(program
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (string)
        (template_string)
        (number)
        (true)
        (false)
        (null)
        (regex)
        (object)
        (array)
        (new_expression)
        (call_expression)
        (binary_expression)
        (member_expression)
        (identifier)
      ]) @definition.constant))

(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (string)
          (template_string)
          (number)
          (true)
          (false)
          (null)
          (object)
          (array)
          (new_expression)
          (call_expression)
        ]) @definition.constant)))

(program
  (variable_declaration
    (variable_declarator
      name: (identifier) @name) @definition.variable))
