; Comments, string literals and docstrings. A docstring is also captured as @string: it is a
; string literal too.
(comment) @comment

(string) @string

; A string that is the first statement of a module, class or function body.
(module
  .
  (expression_statement
    (string) @docstring))

(class_definition
  body: (block
    .
    (expression_statement
      (string) @docstring)))

(function_definition
  body: (block
    .
    (expression_statement
      (string) @docstring)))

; Code inside an f-string (`{...}`): completed as code, not as the string around it.
(interpolation) @code
