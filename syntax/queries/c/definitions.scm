(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

; A function returning a pointer: `char *name(...) {...}`
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.function

; Prototypes at file scope.
(translation_unit
  (declaration
    declarator: [
      (function_declarator
        declarator: (identifier) @name)
      (pointer_declarator
        declarator: (function_declarator
          declarator: (identifier) @name))
    ]) @definition.function)

[
  (struct_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
  (union_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
  (enum_specifier
    name: (type_identifier) @name
    body: (enumerator_list))
] @definition.type

(type_definition
  declarator: (type_identifier) @name) @definition.type

(preproc_def
  name: (identifier) @name) @definition.constant

(preproc_function_def
  name: (identifier) @name) @definition.function

(enumerator
  name: (identifier) @name) @definition.constant

; File-scope variables.
(translation_unit
  (declaration
    declarator: [
      (identifier) @name
      (init_declarator
        declarator: (identifier) @name)
      (init_declarator
        declarator: (pointer_declarator
          declarator: (identifier) @name))
      (init_declarator
        declarator: (array_declarator
          declarator: (identifier) @name))
      (init_declarator
        declarator: (pointer_declarator
          declarator: (array_declarator
            declarator: (identifier) @name)))
    ]) @definition.variable)
