; Every indented body: functions, classes, if/elif/else, for, while, try/except/finally, with,
; match and case arms all hold their statements in a `block`.
(block) @block
