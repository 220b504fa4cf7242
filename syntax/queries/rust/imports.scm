[
  (use_declaration)
  (extern_crate_declaration)
] @import
