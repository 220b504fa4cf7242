#include "daemon/cli/logging.h"

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
  }
  logger->set_level(parsed);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace ghostline::daemon
