#include "daemon/cli/logging.h"

#include <atomic>
#include <cstdio>
#include <stdexcept>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace ghostline::daemon {

void setup_logging(const std::string& level, const std::string& file) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level '" + level + "' (trace, debug, info, warn, error, off)");
  std::shared_ptr<spdlog::logger> logger;
  if (file.empty()) {
    logger = std::make_shared<spdlog::logger>("ghostline", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    try {
      logger = std::make_shared<spdlog::logger>(
          "ghostline", std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false));
    } catch (const spdlog::spdlog_ex& e) {
      throw std::runtime_error("cannot open log file '" + file + "': " + e.what());
    }
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
