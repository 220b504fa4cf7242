[
  (class_declaration
    name: (identifier) @name)
  (record_declaration
    name: (identifier) @name)
] @definition.class

[
  (interface_declaration
    name: (identifier) @name)
  (annotation_type_declaration
    name: (identifier) @name)
] @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.type

[
  (method_declaration
    name: (identifier) @name)
  (constructor_declaration
    name: (identifier) @name)
] @definition.method

; `static final` fields are constants.
(field_declaration
  (modifiers
    "static"
    "final")
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.constant

(package_declaration
  [
    (identifier)
    (scoped_identifier)
  ] @name) @definition.module
