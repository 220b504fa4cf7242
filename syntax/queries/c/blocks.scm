; Brace bodies: function and statement bodies, struct/union fields, enum constants.
; Initializer lists (`{1, 2}`) are data, not blocks.
[
  (compound_statement)
  (field_declaration_list)
  (enumerator_list)
] @block
