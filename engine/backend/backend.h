// The interface the forward pass runs on. The Generator does the bookkeeping (block tables,
// chunking, cancellation, logits buffers); a backend computes one batch of tokens through all
// layers. The CPU backend keeps weights in the mapped file and KV in the host KvBlockPool; a
// device backend (CUDA) keeps weights and KV blocks on the GPU, addressed by the same BlockIds,
// so block tables and the prefix cache work unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "engine/kv/kv_block_pool.h"

namespace ghostline::engine {

class Model;

// n tokens at consecutive positions start_pos.. of one sequence. `blocks` covers positions
// [0, start_pos + tokens.size()); the blocks written by this batch are not shared.
struct ForwardBatch {
  std::span<const int32_t> tokens;
  int start_pos = 0;
  std::span<const BlockId> blocks;
  // Logits are wanted for the last `n_logits` tokens of the batch (0..tokens.size()).
  int n_logits = 1;
};

enum class ForwardPath {
  Fast,       // SIMD kernels, quantized activations, thread pool
  Reference,  // the plain math with dequantized weights, one thread: the test oracle
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual int threads() const = 0;
  // Writes K/V of the batch into its blocks and n_logits x n_vocab floats into `logits`.
  virtual void forward(const ForwardBatch& batch, std::span<float> logits) = 0;
};

struct BackendOptions {
  int threads = 1;
  ForwardPath path = ForwardPath::Fast;
  int max_batch_tokens = 64;  // scratch is sized for batches up to this many tokens
};

// The CPU backend over `model` and `pool` (both must outlive it).
std::unique_ptr<Backend> make_cpu_backend(const Model& model, KvBlockPool& pool,
                                          const BackendOptions& options);

}  // namespace ghostline::engine
