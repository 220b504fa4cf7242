(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  name: (field_identifier) @name) @definition.method

(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.class

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: [
    (type_identifier)
    (qualified_type)
    (generic_type)
    (pointer_type)
    (slice_type)
    (array_type)
    (map_type)
    (channel_type)
    (function_type)
  ]) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

(package_clause
  (package_identifier) @name) @definition.module

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name) @definition.constant))

(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name) @definition.variable))
