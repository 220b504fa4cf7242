; Brace bodies: function and statement bodies, class/struct/union members, enum constants,
; namespace and `extern "C"` bodies, lambda bodies. Initializer lists (`{1, 2}`) are data.
[
  (compound_statement)
  (field_declaration_list)
  (enumerator_list)
  (declaration_list)
  (requirement_seq)
] @block
