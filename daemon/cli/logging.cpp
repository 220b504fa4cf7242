#include "daemon/cli/logging.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "lsp/private_dir.h"

namespace ghostline::daemon {

namespace {

// Appends to a log file opened by lsp::open_log_file: spdlog's own file sink opens by name and
// would follow a symbolic link planted at the log's path. Writes go straight to the descriptor
// (nothing is buffered, so flush has nothing to do).
class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  LogFileSink(std::string path, lsp::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    for (size_t off = 0; off < formatted.size();) {
      const ssize_t n = ::write(fd_.get(), formatted.data() + off, formatted.size() - off);
      if (n < 0 && errno == EINTR) continue;
      // The message names the file: the error handler below recognises a failed write by it.
      if (n <= 0) throw spdlog::spdlog_ex("Failed writing to file " + path_, errno);
      off += static_cast<size_t>(n);
    }
  }
  void flush_() override {}

 private:
  std::string path_;
  lsp::UniqueFd fd_;
};

}  // namespace

void setup_logging(const std::string& level, const std::string& file) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level '" + level +
                                "' (trace, debug, info, warn, error, off)");
  std::shared_ptr<spdlog::logger> logger;
  if (file.empty()) {
    logger = std::make_shared<spdlog::logger>("ghostline",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    // Never through a symbolic link, a new file 0600: see lsp::open_log_file.
    logger = std::make_shared<spdlog::logger>(
        "ghostline", std::make_shared<LogFileSink>(file, lsp::open_log_file(file)));
    // spdlog would report a failing write (a full disk) on stderr once a second for as long as the
    // daemon runs. Say it once and stop logging instead; the handler is owned by the logger, so
    // the raw pointer outlives every call. Its messages for a failed write or flush name the
    // file; any other error (a bad format string) is reported and logging goes on.
    auto reported = std::make_shared<std::atomic_flag>();
    logger->set_error_handler([file, reported, raw = logger.get()](const std::string& error) {
      if (error.find(file) == std::string::npos) {
        std::fprintf(stderr, "ghostline: log error: %s\n", error.c_str());
        return;
      }
      raw->set_level(spdlog::level::off);
      if (!reported->test_and_set())
        std::fprintf(stderr, "ghostline: cannot write the log file '%s' (%s); logging stops here\n",
                     file.c_str(), error.c_str());
    });
  }
  logger->set_level(parsed);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace ghostline::daemon
