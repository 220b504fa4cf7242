#include "daemon/cli/model_command.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "daemon/cli/model_names.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/model.h"

namespace ghostline::daemon {

std::unique_ptr<engine::Model> load_model_for_command(const std::string& path) {
  auto model = engine::Model::load(resolve_model_argument(path));
  for (const auto& w : model->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return model;
}

std::unique_ptr<engine::KvBlockPool> kv_pool_for(const engine::Model& model, int tokens) {
  using engine::KvBlockPool;
  const auto& c = model.config();
  const size_t blocks =
      size_t(std::max(1, tokens) + KvBlockPool::kBlockTokens - 1) / KvBlockPool::kBlockTokens;
  return std::make_unique<KvBlockPool>(
      c.n_layer, c.kv_dim(), blocks * KvBlockPool::block_bytes_for(c.n_layer, c.kv_dim()));
}

int report_errors(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline %s: %s\n", command, e.what());
    return 1;
  }
}


std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string format_count(int64_t count) {
  char buf[32];
  if (count >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.2f B", count / 1e9);
  else if (count >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.2f M", count / 1e6);
  else if (count >= 1'000)
    std::snprintf(buf, sizeof buf, "%.2f K", count / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(count));
  return buf;
}

std::string quote(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool parse_ids(std::string_view text, std::vector<int32_t>& ids) {
  ids.clear();
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i == text.size()) break;
    int32_t v = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc() || v < 0) return false;
    ids.push_back(v);
    i = static_cast<size_t>(end - text.data());
    if (i < text.size() && text[i] != ',' && text[i] != ' ') return false;
  }
  return !ids.empty();
}

}  // namespace ghostline::daemon
