// A radix tree over token sequences whose nodes own KV blocks, as SGLang's RadixAttention:
// a request looks up the longest prefix of its prompt whose KV is already computed, and
// inserts the KV of its prompt and output when it ends. Every edge is one KV block: a node holds
// the tokens of one block (16; fewer only for a sequence's partial last block) and that block's
// id. Children with full blocks are found by the xxHash of their tokens chained with the parent's
// hash. The tree knows nothing of models; blocks are reference-counted by the owner of the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace ghostline::cache {

using BlockId = int32_t;

// The tree takes one reference to each block it holds and gives it back when it evicts.
class BlockRefcounts {
 public:
  virtual ~BlockRefcounts() = default;
  virtual void retain(BlockId id) = 0;
  virtual void release(BlockId id) = 0;
};

struct PrefixCacheStats {
  uint64_t lookups = 0;
  uint64_t lookup_tokens = 0;   // tokens asked for
  uint64_t matched_tokens = 0;  // tokens found
  uint64_t inserted_blocks = 0;
  uint64_t evicted_blocks = 0;
  size_t blocks = 0;            // held now
  size_t max_blocks = 0;
  double hit_rate() const {
    return lookup_tokens ? double(matched_tokens) / double(lookup_tokens) : 0;
  }
};

class PrefixCache {
 public:
  struct Node;

  // A path pinned by a running request: its nodes are not evicted until it is unlocked.
  class Lock {
   public:
    Lock() = default;
    Lock(Lock&& other) noexcept : cache_(other.cache_), node_(other.node_) {
      other.node_ = nullptr;
    }
    Lock& operator=(Lock&& other) noexcept;
    ~Lock() { reset(); }
    void reset();

   private:
    friend class PrefixCache;
    Lock(PrefixCache* cache, Node* node) : cache_(cache), node_(node) {}
    PrefixCache* cache_ = nullptr;
    Node* node_ = nullptr;
  };

  struct Match {
    std::vector<BlockId> blocks;  // one per matched block; the last may be used in part
    int tokens = 0;               // matched prefix length (may end inside the last block)
    Node* node = nullptr;         // deepest matched node, for lock()
  };

  // block_tokens is the KV block size; max_blocks the budget of blocks the tree may hold.
  PrefixCache(BlockRefcounts& refs, int block_tokens, size_t max_blocks);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest cached prefix of `tokens`. The caller takes its own references to the blocks
  // it keeps (retain) and locks the path while it computes.
  Match match(std::span<const int32_t> tokens);
  Lock lock(const Match& match);

  // Adds the KV of a sequence: blocks[i] holds tokens [i * block_tokens, (i + 1) * block_tokens).
  // Blocks of prefixes already cached are kept as they are; new ones are retained. Then evicts
  // down to the budget.
  void insert(std::span<const int32_t> tokens, std::span<const BlockId> blocks);

  // Evicts least recently used unlocked leaves until `blocks` blocks are freed or nothing more
  // can go; returns how many were freed.
  size_t evict(size_t blocks);
  // Releases every unlocked block.
  void clear();

  PrefixCacheStats stats() const;
  int block_tokens() const { return block_tokens_; }

 private:
  Node* child_for(Node* parent, std::span<const int32_t> chunk);
  void remove_leaf(Node* node);
  void touch(Node* node);

  BlockRefcounts& refs_;
  int block_tokens_;
  size_t max_blocks_;
  std::unique_ptr<Node> root_;
  size_t blocks_ = 0;
  uint64_t clock_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace ghostline::cache
