; inherits: typescript
; TSX is TypeScript with JSX: the same node names, plus the JSX elements below.

(jsx_opening_element
  name: (identifier) @reference)

(jsx_self_closing_element
  name: (identifier) @reference)
