(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

(function_definition
  declarator: [
    (pointer_declarator
      declarator: (function_declarator
        declarator: (identifier) @name))
    (reference_declarator
      (function_declarator
        declarator: (identifier) @name))
  ]) @definition.function

; Methods defined in the class body...
(field_declaration_list
  (function_definition
    declarator: (function_declarator
      declarator: [
        (field_identifier)
        (operator_name)
        (destructor_name)
        (identifier)
      ] @name)) @definition.method)

(field_declaration_list
  (template_declaration
    (function_definition
      declarator: (function_declarator
        declarator: (field_identifier) @name)) @definition.method))

; ... declared there ...
(field_declaration_list
  (field_declaration
    declarator: (function_declarator
      declarator: (field_identifier) @name)) @definition.method)

; ... and defined outside it: `void Parser::reset() {...}`
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: [
        (identifier)
        (operator_name)
        (destructor_name)
      ] @name))) @definition.method

(function_definition
  declarator: (reference_declarator
    (function_declarator
      declarator: (qualified_identifier
        name: (identifier) @name)))) @definition.method

[
  (class_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
  (struct_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
  (union_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
] @definition.class

[
  (enum_specifier
    name: (type_identifier) @name
    body: (enumerator_list))
  (type_definition
    declarator: (type_identifier) @name)
  (alias_declaration
    name: (type_identifier) @name)
  (concept_definition
    name: (identifier) @name)
] @definition.type

(namespace_definition
  name: [
    (namespace_identifier)
    (nested_namespace_specifier)
  ] @name) @definition.module

(preproc_def
  name: (identifier) @name) @definition.constant

(preproc_function_def
  name: (identifier) @name) @definition.function

(enumerator
  name: (identifier) @name) @definition.constant

; Namespace-scope variables; `constexpr`/`const` ones are still variables to the grammar.
[
  (translation_unit
    (declaration
      declarator: (init_declarator
        declarator: (identifier) @name)) @definition.variable)
  (declaration_list
    (declaration
      declarator: (init_declarator
        declarator: (identifier) @name)) @definition.variable)
]
