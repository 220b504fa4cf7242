#include "engine/kv/kv_block_pool.h"
#include "base/platform.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ghostline::engine {

KvBlockPool::KvBlockPool(int n_layer, int kv_dim, size_t byte_budget)
    : n_layer_(n_layer), kv_dim_(kv_dim) {
  if (n_layer <= 0 || kv_dim <= 0)
    throw std::invalid_argument("KvBlockPool: n_layer and kv_dim must be positive");
  const size_t n_blocks = std::max<size_t>(1, byte_budget / block_bytes());
  if (n_blocks > static_cast<size_t>(INT32_MAX))
    throw std::invalid_argument("KvBlockPool: byte budget too large");
  refcount_.assign(n_blocks, 0);
  free_.reserve(n_blocks);
  // Lowest ids are handed out first, which keeps a fresh sequence's blocks contiguous.
  for (size_t i = n_blocks; i-- > 0;) free_.push_back(static_cast<BlockId>(i));
  map_arena();
}

void KvBlockPool::map_arena() {
  // The arena is mapped, not filled: pages become resident as blocks are first written, and
  // fresh ones read as zeros. Attention reads one layer of every block of a sequence, runs of
  // a few KiB apart where blocks were reused: in 2 MiB pages (transparent huge pages, where the
  // kernel allows them) they take a few TLB entries instead of one per block and layer.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t arena_bytes = refcount_.size() * block_bytes();
  void* mapping =
      ::mmap(nullptr, arena_bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
  if (mapping == MAP_FAILED)
    throw std::runtime_error("KvBlockPool: cannot map " + std::to_string(arena_bytes >> 20) +
                             " MiB for the KV cache: " + std::strerror(errno));
  mapping_ = mapping;
  mapping_bytes_ = arena_bytes + kHugePage;
  const auto start = (reinterpret_cast<uintptr_t>(mapping_) + kHugePage - 1) & ~(kHugePage - 1);
  arena_ = reinterpret_cast<uint16_t*>(start);
  platform::advise_huge_pages(arena_, arena_bytes);
}

void KvBlockPool::unmap_arena() {
  if (mapping_) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  arena_ = nullptr;
}

void KvBlockPool::keep_on_device(std::function<void(BlockId from, BlockId to)> copy) {
  if (copy) {
    unmap_arena();
  } else if (!arena_) {
    map_arena();
  }
  copy_ = std::move(copy);
}

KvBlockPool::~KvBlockPool() {
  unmap_arena();
}

void KvBlockPool::check(BlockId id) const {
  if (id < 0 || id >= capacity())
    throw std::out_of_range("KvBlockPool: block id " + std::to_string(id) + " out of range");
}

BlockId KvBlockPool::allocate() {
  // An evicted block may still be shared with a live sequence: evict until one is free.
  while (free_.empty() && reclaim_ && reclaim_(1)) {
  }
  if (free_.empty())
    throw KvPoolExhausted("KV block pool exhausted: all " + std::to_string(capacity()) +
                          " blocks of " + std::to_string(block_bytes()) +
                          " bytes are in use; raise the KV budget or shorten the context");
  BlockId id = free_.back();
  free_.pop_back();
  refcount_[id] = 1;
  return id;
}

void KvBlockPool::retain(BlockId id) {
  check(id);
  if (refcount_[id] <= 0)
    throw std::logic_error("KvBlockPool: retain of free block " + std::to_string(id));
  ++refcount_[id];
}

void KvBlockPool::release(BlockId id) {
  check(id);
  if (refcount_[id] <= 0)
    throw std::logic_error("KvBlockPool: release of free block " + std::to_string(id));
  if (--refcount_[id] == 0) free_.push_back(id);
}

int KvBlockPool::refcount(BlockId id) const {
  check(id);
  return refcount_[id];
}

// Layer-major: layer l of every block, then layer l + 1; within a layer's part of a block, keys
// then values, each kBlockTokens * kv_dim values. A fresh sequence's blocks are consecutive,
// so attention's reads of one layer over them run on through memory, which the hardware
// prefetchers follow.
uint16_t* KvBlockPool::keys(BlockId id, int layer) {
  check(id);
  if (!arena_)
    throw std::logic_error("KvBlockPool: the blocks' contents are kept on a device");
  return arena_ + (static_cast<size_t>(layer) * refcount_.size() + static_cast<size_t>(id)) *
                      layer_values();
}
uint16_t* KvBlockPool::values(BlockId id, int layer) {
  return keys(id, layer) + static_cast<size_t>(kBlockTokens) * kv_dim_;
}
const uint16_t* KvBlockPool::keys(BlockId id, int layer) const {
  return const_cast<KvBlockPool*>(this)->keys(id, layer);
}
const uint16_t* KvBlockPool::values(BlockId id, int layer) const {
  return const_cast<KvBlockPool*>(this)->values(id, layer);
}

KvSequence KvBlockPool::share(const KvSequence& seq, int n_tokens) {
  if (n_tokens < 0 || n_tokens > seq.n_tokens)
    throw std::out_of_range("KvBlockPool::share: n_tokens outside the sequence");
  KvSequence out;
  const int n_blocks = (n_tokens + kBlockTokens - 1) / kBlockTokens;
  out.blocks.assign(seq.blocks.begin(), seq.blocks.begin() + n_blocks);
  for (BlockId id : out.blocks) retain(id);
  out.n_tokens = n_tokens;
  return out;
}

void KvBlockPool::truncate(KvSequence& seq, int n_tokens) {
  if (n_tokens < 0 || n_tokens > seq.n_tokens)
    throw std::out_of_range("KvBlockPool::truncate: n_tokens outside the sequence");
  const size_t n_blocks = static_cast<size_t>((n_tokens + kBlockTokens - 1) / kBlockTokens);
  while (seq.blocks.size() > n_blocks) {
    release(seq.blocks.back());
    seq.blocks.pop_back();
  }
  seq.n_tokens = n_tokens;
}

void KvBlockPool::release(KvSequence& seq) {
  for (BlockId id : seq.blocks) release(id);
  seq.blocks.clear();
  seq.n_tokens = 0;
}

void KvBlockPool::prepare_append(KvSequence& seq, int n_new_tokens) {
  if (n_new_tokens <= 0) return;
  const size_t needed =
      static_cast<size_t>((seq.n_tokens + n_new_tokens + kBlockTokens - 1) / kBlockTokens);
  if (seq.blocks.size() < static_cast<size_t>((seq.n_tokens + kBlockTokens - 1) / kBlockTokens))
    throw std::logic_error("KvBlockPool: block table shorter than its sequence");
  // A partial last block that another sequence shares is copied before we write into it.
  if (seq.n_tokens % kBlockTokens != 0) {
    BlockId& last = seq.blocks[static_cast<size_t>(seq.n_tokens / kBlockTokens)];
    if (refcount(last) > 1) {
      BlockId copy = allocate();
      if (copy_)
        copy_(last, copy);
      else
        for (int l = 0; l < n_layer_; ++l)
          std::memcpy(keys(copy, l), keys(last, l), layer_values() * sizeof(uint16_t));
      release(last);
      last = copy;
    }
  }
  seq.blocks.reserve(needed);
  while (seq.blocks.size() < needed) seq.blocks.push_back(allocate());
}

KvPoolStats KvBlockPool::stats() const {
  KvPoolStats s;
  s.blocks_total = capacity();
  s.blocks_free = static_cast<int>(free_.size());
  s.blocks_used = s.blocks_total - s.blocks_free;
  s.block_bytes = block_bytes();
  s.bytes_used = static_cast<size_t>(s.blocks_used) * s.block_bytes;
  s.bytes_total = static_cast<size_t>(s.blocks_total) * s.block_bytes;
  return s;
}

}  // namespace ghostline::engine
