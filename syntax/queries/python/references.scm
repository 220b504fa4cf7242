(call
  function: [
    (identifier) @reference.call
    (attribute
      attribute: (identifier) @reference.call)
  ])

; Names used as types: annotations, base classes, exception types.
(type
  (identifier) @reference.type)

(type
  (generic_type
    (identifier) @reference.type))

(class_definition
  superclasses: (argument_list
    (identifier) @reference.type))

(except_clause
  (identifier) @reference.type)

; Modules and objects whose members are used (`os.path`, `self.cache`), decorators, and names
; passed as arguments.
(attribute
  object: (identifier) @reference)

(decorator
  (identifier) @reference)

(argument_list
  (identifier) @reference)

(keyword_argument
  value: (identifier) @reference)
