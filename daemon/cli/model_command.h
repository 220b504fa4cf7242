// Formatting shared by the engine commands (model-info, bench, logits, generate).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::engine {
class KvBlockPool;
class Model;
}

namespace ghostline::daemon {

// Loads a model for a command (a file, or a pulled model's name) and prints its load warnings
// (e.g. weights not locked) to stderr; throws what Model::load throws.
std::unique_ptr<engine::Model> load_model_for_command(const std::string& path);

// A KV pool holding exactly `tokens` tokens of the model (whole blocks).
std::unique_ptr<engine::KvBlockPool> kv_pool_for(const engine::Model& model, int tokens);

// Runs a command's body: an exception it throws is printed as "ghostline COMMAND: what" and the
// command exits with 1.
int report_errors(const char* command, const std::function<int()>& body);

std::string format_bytes(uint64_t bytes);  // "35.86 MiB"
std::string format_count(int64_t count);   // "494.03 M"
std::string quote(std::string_view text);  // JSON-quoted, so whitespace is visible
// Parses "1,2,3" (spaces allowed); false on anything else.
bool parse_ids(std::string_view text, std::vector<int32_t>& ids);

}  // namespace ghostline::daemon
