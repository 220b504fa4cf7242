(import_statement) @import

(import_from_statement) @import

(future_import_statement) @import
