#include "lsp/recorder.h"
#include "base/clock.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace ghostline::lsp {

Recorder::Recorder(const std::string& path)
    : path_(path), file_(std::fopen(path.c_str(), "a")), start_(std::chrono::steady_clock::now()) {
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
    // An auth token never reaches the disk.
    nlohmann::json& stored = line["message"];
    auto params = stored.find("params");
    if (params != stored.end() && params->is_object()) {
      auto options = params->find("initializationOptions");
      if (options != params->end() && options->is_object() && options->contains("authToken"))
        (*options)["authToken"] = "<redacted>";
    }
  } else {
    line["raw"] = std::string(raw);
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  std::lock_guard lock(mutex_);
  if (!file_) return;
  if (std::fwrite(text.data(), 1, text.size(), file_) == text.size() && std::fflush(file_) == 0)
    return;
  // Retrying every message would only repeat the error: say it once and stop recording.
  int error = errno;
  spdlog::error("cannot write the record file '{}': {}; recording stops here", path_,
                std::strerror(error));
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace ghostline::lsp
