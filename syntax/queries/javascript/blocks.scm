; Bodies whose lines sit one level deeper than their header. Object and array literals are not
; blocks.
[
  (statement_block)
  (class_body)
  (switch_body)
] @block
