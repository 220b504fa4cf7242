# Writes OUTPUT, a C++ source holding the text of every QUERIES_DIR/<lang>/<kind>.scm as
# {language, kind, text} rows (run by syntax/CMakeLists.txt at build time).
file(GLOB files RELATIVE ${QUERIES_DIR} ${QUERIES_DIR}/*/*.scm)
list(SORT files)
set(rows "")
foreach(rel IN LISTS files)
  get_filename_component(lang ${rel} DIRECTORY)
  get_filename_component(kind ${rel} NAME_WE)
  file(READ ${QUERIES_DIR}/${rel} text)
  if(text MATCHES "\\)scm\"")
    message(FATAL_ERROR "${rel} contains the raw-string delimiter )scm\"")
  endif()
  string(APPEND rows "    {\"${lang}\", \"${kind}\", R\"scm(${text})scm\"},\n")
endforeach()
list(LENGTH files count)
file(WRITE ${OUTPUT}.tmp "// Generated from syntax/queries by syntax/embed_queries.cmake; do not edit.
#include <cstddef>

namespace ghostline::syntax::detail {
extern const char* const kEmbeddedQueries[][3];
extern const std::size_t kEmbeddedQueryCount;
const char* const kEmbeddedQueries[][3] = {
${rows}    {nullptr, nullptr, nullptr},
};
const std::size_t kEmbeddedQueryCount = ${count};
}  // namespace ghostline::syntax::detail
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
