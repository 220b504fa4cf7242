[
  (class_declaration
    name: (type_identifier) @name)
  (abstract_class_declaration
    name: (type_identifier) @name)
  (class
    name: (type_identifier) @name)
] @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.interface

[
  (type_alias_declaration
    name: (type_identifier) @name)
  (enum_declaration
    name: (identifier) @name)
] @definition.type

(internal_module
  name: [
    (identifier)
    (string)
    (nested_identifier)
  ] @name) @definition.module

[
  (method_definition
    name: [
      (property_identifier)
      (private_property_identifier)
    ] @name)
  (method_signature
    name: (property_identifier) @name)
  (abstract_method_signature
    name: (property_identifier) @name)
] @definition.method

[
  (function_declaration
    name: (identifier) @name)
  (generator_function_declaration
    name: (identifier) @name)
  (function_expression
    name: (identifier) @name)
  (function_signature
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
        (as_expression)
        (satisfies_expression)
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
          (as_expression)
          (satisfies_expression)
        ]) @definition.constant)))

(program
  (variable_declaration
    (variable_declarator
      name: (identifier) @name) @definition.variable))
