// One model with its own KV pool, generator and radix tree: the target and the draft each have
// one. Runs on the engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cache/prefix_cache.h"
#include "engine/generator.h"

namespace ghostline::daemon {

class ModelSlot {
 public:
  // Loads the model, sizes its pool to `kv_bytes`, measures prefill speed and sizes prefill
  // chunks from it. Throws what Model::load throws.
  // `share_threads_with`: the slot whose compute threads this one's generator runs on (a draft
  // beside its target; see GeneratorOptions).
  ModelSlot(const std::string& path, size_t kv_bytes, int threads,
            engine::BackendKind backend = engine::BackendKind::Cpu,
            const ModelSlot* share_threads_with = nullptr);
  ~ModelSlot();
  ModelSlot(const ModelSlot&) = delete;
  ModelSlot& operator=(const ModelSlot&) = delete;

  const engine::Model& model() const { return *model_; }
  engine::Generator& generator() { return *generator_; }
  engine::KvBlockPool& pool() { return *pool_; }
  cache::PrefixCache& cache() { return *cache_; }

  // The longest cached prefix of the prompt but its last token (whose logits are needed);
  // nothing when `use_cache` is false.
  cache::PrefixCache::Match match(std::span<const int32_t> prompt, bool use_cache);

  // The longest sequence (prompt and completion) this slot can hold: the model's context or the
  // KV pool, whichever is smaller.
  int max_sequence_tokens() const;

  // Prompt tokens per millisecond: measured at load, then a running average of real requests.
  double prefill_tokens_per_ms() const { return prefill_tokens_per_ms_; }
  void update_prefill_rate(const engine::GenerateResult& r);

 private:
  class PoolRefcounts;
  double measure_prefill();

  static constexpr double kLayerMs = 4.0;
  static constexpr int kMinChunk = 16;
  static constexpr int kMaxChunk = 128;

  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<engine::KvBlockPool> pool_;
  std::unique_ptr<engine::Generator> generator_;
  std::unique_ptr<PoolRefcounts> refs_;
  std::unique_ptr<cache::PrefixCache> cache_;
  double prefill_tokens_per_ms_ = 0;
};

// A KV sequence of one slot, started from a cached prefix: it holds its own references to the
// matched blocks and a lock on the matched tree nodes (so that eviction cannot take them), and
// gives both back when it ends, whatever ended the request.
class KvLease {
 public:
  KvLease() = default;  // holds nothing
  KvLease(ModelSlot& slot, const cache::PrefixCache::Match& match);
  ~KvLease();
  KvLease(KvLease&& other) noexcept;
  KvLease& operator=(KvLease&& other) noexcept;

  engine::KvSequence& seq() { return seq_; }
  // Gives the KV computed for prompt + generated (what the sequence holds of it, which is
  // valid whatever stopped the request, even a cancel: the next keystroke starts from it) to
  // the slot's radix tree, or drops it when `use_cache` is false; then releases the lease.
  void keep(std::span<const int32_t> prompt, std::span<const int32_t> generated, bool use_cache);

 private:
  void release();

  ModelSlot* slot_ = nullptr;
  engine::KvSequence seq_;
  cache::PrefixCache::Lock lock_;
};

}  // namespace ghostline::daemon
