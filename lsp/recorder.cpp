#include "lsp/recorder.h"
#include "base/clock.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {

Recorder::Recorder(const std::string& path)
    : file_(std::fopen(path.c_str(), "a")), start_(std::chrono::steady_clock::now()) {
  if (!file_)
    throw std::runtime_error("cannot open record file '" + path + "': " + std::strerror(errno));
}

Recorder::~Recorder() {
  if (file_) std::fclose(file_);
}

void Recorder::record(int session, const nlohmann::json* message, std::string_view raw) {
  double t_ms = ms_since(start_);
  nlohmann::json line = {{"t_ms", t_ms}, {"session", session}};
  if (message) {
    line["message"] = *message;
  } else {
    line["raw"] = std::string(raw);
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard lock(mutex_);
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

}  // namespace ghostline::lsp
