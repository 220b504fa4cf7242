// Paged KV storage: fixed-size blocks of keys and values for all layers, allocated from one
// arena sized by a byte budget and shared between sequences by reference counts.
//
// K and V are stored as F16: half the memory and bandwidth of F32, the same precision
// llama.cpp keeps its KV cache in (its reference logits include that rounding), and exact
// enough for the F16 tolerance of the reference tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

namespace ghostline::engine {

using BlockId = int32_t;

// Thrown when a block is needed, none is free, and the reclaim hook freed none.
class KvPoolExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The block table of one sequence: blocks[i] holds the KV of positions [16 i, 16 i + 16).
// The sequence owns one reference to each of its blocks. Blocks other sequences share are
// read-only; the Generator copies a shared partial last block before extending it.
struct KvSequence {
  std::vector<BlockId> blocks;
  int n_tokens = 0;
};

struct KvPoolStats {
  int blocks_total = 0;
  int blocks_used = 0;
  int blocks_free = 0;
  size_t block_bytes = 0;
  size_t bytes_used = 0;
  size_t bytes_total = 0;
};

// Not thread-safe; owned by the engine thread with the Generator and the prefix cache.
class KvBlockPool {
 public:
  static constexpr int kBlockTokens = 16;

  // kv_dim = n_head_kv * head_dim of the model. The arena holds budget / block_bytes() blocks
  // (at least one); it is mapped here (see keep_on_device()).
  KvBlockPool(int n_layer, int kv_dim, size_t byte_budget);
  ~KvBlockPool();
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  int n_layer() const { return n_layer_; }
  int kv_dim() const { return kv_dim_; }
  size_t block_bytes() const { return block_bytes_for(n_layer_, kv_dim_); }
  // Bytes of one block for a model shape, to size a budget in tokens.
  static size_t block_bytes_for(int n_layer, int kv_dim) {
    return static_cast<size_t>(n_layer) * 2 * kBlockTokens * static_cast<size_t>(kv_dim) * 2;
  }
  int capacity() const { return static_cast<int>(refcount_.size()); }

  // A free block with reference count 1. When none is free, calls the reclaim hook (the
  // prefix cache evicts there) and retries; throws KvPoolExhausted if still none.
  BlockId allocate();
  void retain(BlockId id);
  void release(BlockId id);  // the block returns to the free list at count 0
  int refcount(BlockId id) const;

  // Called with the number of blocks wanted when the free list is empty; returns whether it
  // released any.
  void set_reclaim_hook(std::function<bool(int blocks_wanted)> hook) { reclaim_ = std::move(hook); }

  // For a backend that keeps the blocks' contents in memory of its own (the CUDA backend):
  // the host arena is unmapped, so that keys() and values() throw, and prepare_append's
  // copy-on-extend calls `copy` (the backend copies its block) instead of copying on the host.
  // Blocks, references and sequences stay as they are. An empty function maps a fresh arena
  // again, whose blocks read as zeros.
  void keep_on_device(std::function<void(BlockId from, BlockId to)> copy);
  // Whether the blocks' contents are in this pool's arena.
  bool on_host() const { return arena_ != nullptr; }

  // Keys / values of `layer` in `block`: kBlockTokens * kv_dim F16 values each, arranged as the
  // backend that writes and reads them chooses (the reference backend: a row of kv_dim per
  // position).
  uint16_t* keys(BlockId id, int layer);
  uint16_t* values(BlockId id, int layer);
  const uint16_t* keys(BlockId id, int layer) const;
  const uint16_t* values(BlockId id, int layer) const;
  // Keys and values of `layer` in `block` as one run of 2 * kBlockTokens * kv_dim F16 values
  // (keys() then values()), for a backend that arranges them as a whole (the CPU backend: per
  // KV head, its keys and then its values).
  uint16_t* layer_kv(BlockId id, int layer) { return keys(id, layer); }
  const uint16_t* layer_kv(BlockId id, int layer) const { return keys(id, layer); }

  // Sequence helpers. `share` returns a sequence holding the first n_tokens of `seq` with
  // references to the same blocks (the radix cache's handoff); `truncate` drops positions from
  // n_tokens on (speculative rejection) and releases blocks no longer covered; `release` empties.
  KvSequence share(const KvSequence& seq, int n_tokens);
  void truncate(KvSequence& seq, int n_tokens);
  void release(KvSequence& seq);
  // Makes the block holding position `seq.n_tokens` writable: allocates it when missing and
  // copies it when shared (copy-on-extend). Used by the forward pass before appending.
  void prepare_append(KvSequence& seq, int n_new_tokens);

  KvPoolStats stats() const;

 private:
  void check(BlockId id) const;
  void map_arena();
  void unmap_arena();
  // Values of one layer of one block: its keys and then its values.
  size_t layer_values() const { return static_cast<size_t>(2 * kBlockTokens) * kv_dim_; }

  int n_layer_;
  int kv_dim_;
  uint16_t* arena_ = nullptr;  // within the mapping below, at a 2 MiB boundary
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::vector<int32_t> refcount_;
  std::vector<BlockId> free_;
  std::function<bool(int)> reclaim_;
  std::function<void(BlockId, BlockId)> copy_;
};

}  // namespace ghostline::engine
