; inherits: typescript
; TSX is TypeScript with JSX: the same node names, plus the JSX elements below.
