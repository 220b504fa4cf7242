#include "daemon/pipeline/model_slot.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/clock.h"

namespace ghostline::daemon {

// The prefix cache holds its block references through the engine's pool.
class ModelSlot::PoolRefcounts : public cache::BlockRefcounts {
 public:
  explicit PoolRefcounts(engine::KvBlockPool& pool) : pool_(pool) {}
  void retain(cache::BlockId id) override { pool_.retain(id); }
  void release(cache::BlockId id) override { pool_.release(id); }

 private:
  engine::KvBlockPool& pool_;
};

ModelSlot::ModelSlot(const std::string& path, size_t kv_bytes, int threads,
                     engine::BackendKind backend, const ModelSlot* share_threads_with) {
  model_ = engine::Model::load(path);
  for (const auto& w : model_->warnings()) spdlog::warn("{}", w);
  const auto& cfg = model_->config();
  pool_ =
      std::make_unique<engine::KvBlockPool>(cfg.n_layer, cfg.n_head_kv * cfg.head_dim, kv_bytes);
  const engine::Generator* share =
      share_threads_with ? share_threads_with->generator_.get() : nullptr;
  generator_ = std::make_unique<engine::Generator>(
      *model_, *pool_,
      engine::GeneratorOptions{.threads = threads,
                               .backend = backend,
                               .chunk_tokens = kMaxChunk,
                               .share_threads_with = share});
  spdlog::info("{}: {} backend", path, generator_->backend_name());
  // Measure prefill speed once, then size prefill chunks so that one layer of a chunk costs a
  // few milliseconds: cancellation is checked between layers, the deadline between chunks. On
  // a large model a chunk of a few tokens would read all the weights for little work.
  prefill_tokens_per_ms_ = measure_prefill();
  const double per_layer_tokens = prefill_tokens_per_ms_ * kLayerMs * model_->config().n_layer;
  generator_->set_chunk_tokens(
      std::clamp(static_cast<int>(per_layer_tokens), kMinChunk, kMaxChunk));
  // The tree may fill the whole pool: a request that needs blocks takes them back from it (the
  // reclaim hook evicts unlocked nodes, least recently used first). Reserving room for a
  // request of the model's declared context (16k-32k tokens for real models) would leave the
  // tree nothing under any sensible budget.
  refs_ = std::make_unique<PoolRefcounts>(*pool_);
  cache_ = std::make_unique<cache::PrefixCache>(*refs_, engine::KvBlockPool::kBlockTokens,
                                                static_cast<size_t>(pool_->capacity()));
  pool_->set_reclaim_hook(
      [this](int wanted) { return cache_->evict(static_cast<size_t>(wanted)) > 0; });
}

// The tree goes first: it gives its block references back to the pool.
ModelSlot::~ModelSlot() {
  cache_.reset();
}

int ModelSlot::max_sequence_tokens() const {
  return std::min(model_->n_ctx(), pool_->capacity() * engine::KvBlockPool::kBlockTokens);
}

// Tokens per millisecond of one prefill chunk of kMaxChunk tokens (which also pages the weights
// in).
double ModelSlot::measure_prefill() {
  // A small KV budget bounds the measuring prompt too.
  const int n = std::min({kMaxChunk, model_->n_ctx() / 2, max_sequence_tokens()});
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 97 + 7) % model_->config().n_vocab;
  engine::KvSequence seq;
  const auto start = Clock::now();
  generator_->forward(seq, ids, engine::LogitsRequest::greedy_last_n_of(1));
  const double ms = std::max(0.01, ms_since(start));
  pool_->release(seq);
  return n / ms;
}

void ModelSlot::update_prefill_rate(const engine::GenerateResult& r) {
  if (r.prefilled_tokens < 16 || r.prefill_ms <= 0) return;
  prefill_tokens_per_ms_ = 0.7 * prefill_tokens_per_ms_ + 0.3 * (r.prefilled_tokens / r.prefill_ms);
}

cache::PrefixCache::Match ModelSlot::match(std::span<const int32_t> prompt, bool use_cache) {
  return use_cache ? cache_->match(prompt.first(prompt.size() - 1)) : cache::PrefixCache::Match{};
}

KvLease::KvLease(ModelSlot& slot, const cache::PrefixCache::Match& match)
    : slot_(&slot), lock_(slot.cache().lock(match)) {
  for (cache::BlockId b : match.blocks) {
    slot.pool().retain(b);
    seq_.blocks.push_back(b);
  }
  seq_.n_tokens = match.tokens;
}

KvLease::~KvLease() {
  release();
}

KvLease::KvLease(KvLease&& other) noexcept
    : slot_(std::exchange(other.slot_, nullptr)),
      seq_(std::move(other.seq_)),
      lock_(std::move(other.lock_)) {}

KvLease& KvLease::operator=(KvLease&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = std::exchange(other.slot_, nullptr);
    seq_ = std::move(other.seq_);
    lock_ = std::move(other.lock_);
  }
  return *this;
}

void KvLease::keep(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                   bool use_cache) {
  if (!slot_) return;
  if (use_cache) {
    std::vector<int32_t> computed(prompt.begin(), prompt.end());
    computed.insert(computed.end(), generated.begin(), generated.end());
    computed.resize(std::min<size_t>(computed.size(), size_t(seq_.n_tokens)));
    slot_->cache().insert(computed, seq_.blocks);
  }
  release();
}

void KvLease::release() {
  if (!slot_) return;
  slot_->pool().release(seq_);
  lock_.reset();
  slot_ = nullptr;
}

}  // namespace ghostline::daemon
