#include "daemon/pipeline/scripted_completer.h"

#include <cctype>
#include <chrono>
#include <thread>

namespace ghostline::daemon {

lsp::CompletionResult ScriptedCompleter::complete(const lsp::CompletionRequest& request,
                                                  const lsp::CancelToken& cancel) {
  for (int i = 0; i < steps_; ++i) {
    if (cancel.cancelled()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++steps_taken_;
  }
  size_t begin = request.cursor;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(request.text[begin - 1])) ||
                       request.text[begin - 1] == '_'))
    --begin;
  std::string word = request.text.substr(begin, request.cursor - begin);
  lsp::CompletionResult result;
  // Built by appending: GCC 12 warns (-Wrestrict, falsely) on the chained operator+ form.
  result.insert_text = "<";
  result.insert_text.append(word.empty() ? std::string_view("empty") : std::string_view(word));
  result.insert_text.append(">v").append(std::to_string(request.version));
  result.replace_begin = result.replace_end = request.cursor;
  return result;
}

std::string ScriptedCompleter::describe() const {
  return "scripted completer (" + std::to_string(steps_) + " steps of 1 ms; no model)";
}

}  // namespace ghostline::daemon
