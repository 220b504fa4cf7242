// Mirrors every incoming message to a JSON-lines file with a monotonic timestamp, so that a
// real editing session can be replayed later. A write that fails (a full disk) is reported once
// in the log and ends the recording; serving goes on.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ghostline::lsp {

class Recorder {
 public:
  // Throws std::runtime_error when the file cannot be opened.
  explicit Recorder(const std::string& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // `message` is the parsed body; `raw` is used when the body was not valid JSON. An auth token
  // (initialize's initializationOptions.authToken) is stored as "<redacted>".
  void record(int session, const nlohmann::json* message, std::string_view raw);

 private:
  std::string path_;
  std::FILE* file_;  // null once a write has failed
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ghostline::lsp
