; Brace bodies: blocks, impl/trait/mod bodies, struct fields, enum variants, match arms.
; Struct expressions and arrays are data.
[
  (block)
  (declaration_list)
  (field_declaration_list)
  (enum_variant_list)
  (match_block)
] @block
