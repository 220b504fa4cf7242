#include "daemon/remote/remote_options.h"

namespace ghostline::daemon::remote {

std::optional<RemoteApi> parse_remote_api(std::string_view word) {
  if (word == "openai") return RemoteApi::OpenAi;
  if (word == "infill") return RemoteApi::Infill;
  return std::nullopt;
}

const char* remote_api_name(RemoteApi api) {
  return api == RemoteApi::Infill ? "infill" : "openai";
}

}  // namespace ghostline::daemon::remote
