// A loaded llama-family model: its config, tokenizer and weights bound to the mapped GGUF file.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_config.h"

namespace ghostline::engine {

class GgufFile;
class Tokenizer;
struct ModelWeights;

// A file that cannot be served: missing or misshapen tensor, unsupported architecture or
// tensor type. The message names the file, the tensor or key, and what would be accepted.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One reason a file cannot be served. Problems of the same `kind` (a tensor type, a missing
// tensor, a shape mismatch) are reported together, since a file usually repeats one problem
// on every layer.
struct ModelProblem {
  std::string kind;     // the same for every tensor with this problem, e.g. "tensor type IQ2_XXS"
  std::string subject;  // the tensor or metadata key it was found on ("" for the file)
  std::string message;  // the whole problem for this subject
  std::string remedy;   // what would make the file servable
};

// Problems grouped by kind, in order of first appearance: one line each for a user.
struct ModelProblemGroup {
  std::string kind;
  int count = 0;
  ModelProblem example;  // the first one found
};
std::vector<ModelProblemGroup> group_problems(const std::vector<ModelProblem>& problems);

// One line per group: "MESSAGE" for a single problem, "KIND on N tensors (e.g. SUBJECT):
// MESSAGE" for more; the remedy follows.
std::string describe(const ModelProblemGroup& group);

struct LoadOptions {
  // Keep the weights resident (mlock); the machines reclaim idle file pages otherwise.
  bool lock_resident = true;
  // Context length to serve; 0 means the training context of the model.
  int n_ctx = 0;
};

class Model {
 public:
  // Opens and checks the file; throws GgufError (corrupt file) or ModelError (valid GGUF that
  // this engine cannot run).
  static std::unique_ptr<Model> load(const std::filesystem::path& path,
                                     const LoadOptions& options = {});

  // Problems that prevent serving `file` (empty when it can be served), for `model-info`.
  static std::vector<ModelProblem> check(const GgufFile& file);

  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GgufFile& file() const { return *file_; }
  const ModelWeights& weights() const { return *weights_; }
  int n_ctx() const { return n_ctx_; }
  // Warnings a user should see (e.g. the weights could not be locked in memory).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Parameters (elements of all weight tensors) and their bytes in the file.
  int64_t n_params() const { return n_params_; }
  size_t weight_bytes() const { return weight_bytes_; }

 private:
  Model() = default;

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ModelWeights> weights_;
  ModelConfig config_;
  int n_ctx_ = 0;
  int64_t n_params_ = 0;
  size_t weight_bytes_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace ghostline::engine
