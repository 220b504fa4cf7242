// The interface the forward pass runs on. The Generator does the bookkeeping (block tables,
// chunking, cancellation, logits buffers); a backend computes one batch of tokens through all
// layers. The CPU backend keeps weights in the mapped file and KV in the host KvBlockPool; a
// device backend (CUDA) keeps weights and KV blocks on the GPU, addressed by the same BlockIds,
// so block tables and the prefix cache work unchanged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv/kv_block_pool.h"

namespace ghostline::engine {

class Model;
namespace cpu {
class ThreadPool;
}

// n tokens at consecutive positions start_pos.. of one sequence. `blocks` covers positions
// [0, start_pos + tokens.size()); the blocks written by this batch are not shared.
struct ForwardBatch {
  std::span<const int32_t> tokens;
  int start_pos = 0;
  std::span<const BlockId> blocks;
  // Logits are wanted for the last `n_logits` tokens of the batch (0..tokens.size()). Logits of
  // more than one token are those single steps would give, bit for bit, up to
  // VerifyCost::max_tokens tokens; a batch that wants at most one may be computed otherwise
  // (a prompt's tokens together, which is faster).
  int n_logits = 1;
  // Checked between layers, so that a large prefill batch stops soon after a cancel.
  const std::atomic<bool>* cancel = nullptr;
};

enum class BackendKind {
  Cpu,        // SIMD kernels chosen at run time, quantized activations, thread pool
  Reference,  // the plain math with dequantized weights, one thread: the test oracle
  Cuda,       // weights and KV on the GPU (built when the CUDA toolkit is found)
  Auto,       // Cuda when it can run this model here, else Cpu
};

// What verifying several tokens in one forward costs on a backend; speculative decoding sizes
// its proposals from it.
struct VerifyCost {
  // The most tokens one forward computes with the logits of single steps, bit for bit (the
  // last accepted token and up to max_tokens - 1 proposals).
  int max_tokens = 1;
  // Each token beside the first adds this share of a single decode step.
  double per_token = 1.0;
};

// What a draft model's forwards are expected to cost beside a target on a backend, in the
// target's decode steps, until speculative decoding has timed them (SpeculationCosts).
struct DraftCost {
  double step = 1.0;                // one decode step of the draft
  double catch_up_per_token = 1.0;  // each token of the prefill that catches the draft up
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual int threads() const = 0;
  virtual VerifyCost verify_cost() const = 0;
  virtual DraftCost draft_cost() const = 0;
  // Writes K/V of the batch into its blocks and n_logits x n_vocab floats into `logits`.
  // Returns false when batch.cancel was set between two layers: the batch's KV is then
  // incomplete and no logits were written.
  virtual bool forward(const ForwardBatch& batch, std::span<float> logits) = 0;
  // As forward, but writes only the greedy token of each of the n_logits rows into `tokens`
  // (the argmax of the logits, ties to the lowest id, as engine::argmax picks it). A device
  // backend searches the logits where they are and hands over n_logits ids instead of
  // n_logits x n_vocab floats; the host backends compute the logits and search them
  // (forward_greedy_on_host).
  virtual bool forward_greedy(const ForwardBatch& batch, std::span<int32_t> tokens) = 0;
  // The CPU compute threads this backend runs its kernels on (null: none, a device backend).
  virtual std::shared_ptr<cpu::ThreadPool> cpu_threads() const { return nullptr; }
};

// forward_greedy for a backend whose logits are on the host: forward into `scratch` (resized to
// n_logits x n_vocab), then the argmax of each row.
bool forward_greedy_on_host(Backend& backend, int n_vocab, const ForwardBatch& batch,
                            std::span<int32_t> tokens, std::vector<float>& scratch);

struct BackendOptions {
  BackendKind kind = BackendKind::Cpu;
  int threads = 1;
  int max_batch_tokens = 64;  // scratch is sized for batches up to this many tokens
  // A CPU backend's compute threads, shared with another backend that never runs at the same
  // time (a draft beside its target): used when it has `threads` threads, else the backend makes
  // its own. Two sets on the same cores would each spin for a while after its work, beside the
  // other's.
  std::shared_ptr<cpu::ThreadPool> cpu_threads = nullptr;
};

// The backend of options.kind over `model` and `pool` (both must outlive it).
std::unique_ptr<Backend> make_backend(const Model& model, KvBlockPool& pool,
                                      const BackendOptions& options);

std::unique_ptr<Backend> make_cpu_backend(const Model& model, KvBlockPool& pool,
                                          const BackendOptions& options);
std::unique_ptr<Backend> make_reference_backend(const Model& model, KvBlockPool& pool);

// A backend that cannot run here or cannot run this model (no device, a build without CUDA, an
// architecture it does not implement); the message says which. Auto falls back to the CPU.
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether the CUDA backend can run on this machine: `description` names the device, or says
// why not ("built without CUDA", "no CUDA device (...)").
struct CudaStatus {
  bool available = false;
  std::string description;
};
CudaStatus cuda_status();

// What cuda_kernel_check found: the cases it ran and one line per case that went wrong.
struct KernelCheck {
  int cases = 0;
  std::vector<std::string> failures;
};

// Runs each CUDA kernel alone on fresh random inputs against the host's arithmetic (the mat-vec
// kernel for every type it reads at 1 to 8 tokens and odd shapes, the Q/K/V and gate/up
// launches, the greedy-token search), outputs poisoned before each run: where a model's output
// is wrong on a GPU, this says which kernel is. Throws BackendUnavailable where cuda_status()
// is not available.
KernelCheck cuda_kernel_check();

// Throws BackendUnavailable when cuda_status() is not available or the model is not supported.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, KvBlockPool& pool,
                                           const BackendOptions& options);

}  // namespace ghostline::engine
