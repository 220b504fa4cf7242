[
  (struct_item
    name: (type_identifier) @name)
  (enum_item
    name: (type_identifier) @name)
  (union_item
    name: (type_identifier) @name)
] @definition.class

(trait_item
  name: (type_identifier) @name) @definition.interface

(type_item
  name: (type_identifier) @name) @definition.type

(mod_item
  name: (identifier) @name) @definition.module

; Functions in impl and trait bodies are methods; elsewhere functions.
(impl_item
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.method))

(trait_item
  body: (declaration_list
    [
      (function_item
        name: (identifier) @name)
      (function_signature_item
        name: (identifier) @name)
    ] @definition.method))

(source_file
  (function_item
    name: (identifier) @name) @definition.function)

(mod_item
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.function))

(block
  (function_item
    name: (identifier) @name) @definition.function)

(macro_definition
  name: (identifier) @name) @definition.function

[
  (const_item
    name: (identifier) @name)
  (static_item
    name: (identifier) @name)
] @definition.constant
