; The statements of function, if/elseif/else, for, while, repeat and do bodies are each a
; `block` (an empty body has none). Table constructors are data.
(block) @block
