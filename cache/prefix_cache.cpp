#include "cache/prefix_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <queue>

namespace ghostline::cache {

struct PrefixCache::Node {
  Node* parent = nullptr;
  std::vector<int32_t> tokens;  // the block's tokens; empty for the root
  BlockId block = -1;
  uint64_t hash = 0;            // chained hash of the path (full blocks only)
  std::unordered_map<uint64_t, std::unique_ptr<Node>> full_children;
  std::vector<std::unique_ptr<Node>> partial_children;
  uint64_t last_use = 0;
  int locks = 0;
  bool leaf() const { return full_children.empty() && partial_children.empty(); }
};

namespace {

uint64_t chain_hash(uint64_t parent, std::span<const int32_t> chunk) {
  return XXH3_64bits_withSeed(chunk.data(), chunk.size_bytes(), parent);
}

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

PrefixCache::Lock& PrefixCache::Lock::operator=(Lock&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = other.cache_;
    node_ = other.node_;
    other.node_ = nullptr;
  }
  return *this;
}

void PrefixCache::Lock::reset() {
  for (Node* n = node_; n; n = n->parent) --n->locks;
  node_ = nullptr;
}

PrefixCache::PrefixCache(BlockRefcounts& refs, int block_tokens, size_t max_blocks)
    : refs_(refs),
      block_tokens_(block_tokens),
      max_blocks_(max_blocks),
      root_(std::make_unique<Node>()) {
  stats_.max_blocks = max_blocks;
}

PrefixCache::~PrefixCache() { clear(); }

void PrefixCache::touch(Node* node) {
  ++clock_;
  for (Node* n = node; n; n = n->parent) n->last_use = clock_;
}

PrefixCache::Match PrefixCache::match(std::span<const int32_t> tokens) {
  Match m;
  Node* node = root_.get();
  size_t pos = 0;
  const size_t B = static_cast<size_t>(block_tokens_);
  // Whole blocks by hash.
  while (tokens.size() - pos >= B) {
    auto chunk = tokens.subspan(pos, B);
    auto it = node->full_children.find(chain_hash(node->hash, chunk));
    if (it == node->full_children.end() ||
        !std::equal(chunk.begin(), chunk.end(), it->second->tokens.begin()))
      break;
    node = it->second.get();
    m.blocks.push_back(node->block);
    pos += B;
  }
  // Then the child sharing the most leading tokens with the rest: a partial block, or a full
  // block whose tokens diverge inside it. Its first tokens' KV is valid for this prompt.
  auto rest = tokens.subspan(pos, std::min(B, tokens.size() - pos));
  Node* best = nullptr;
  size_t best_len = 0;
  auto consider = [&](Node* child) {
    size_t n = common_prefix(rest, child->tokens);
    if (n > best_len) best = child, best_len = n;
  };
  if (!rest.empty()) {
    for (auto& [h, child] : node->full_children) consider(child.get());
    for (auto& child : node->partial_children) consider(child.get());
  }
  if (best) {
    node = best;
    m.blocks.push_back(best->block);
    pos += best_len;
  }
  m.tokens = static_cast<int>(pos);
  m.node = node == root_.get() ? nullptr : node;
  if (m.node) touch(m.node);
  ++stats_.lookups;
  stats_.lookup_tokens += tokens.size();
  stats_.matched_tokens += pos;
  return m;
}

PrefixCache::Lock PrefixCache::lock(const Match& match) {
  for (Node* n = match.node; n; n = n->parent) ++n->locks;
  return Lock(this, match.node);
}

PrefixCache::Node* PrefixCache::child_for(Node* parent, std::span<const int32_t> chunk) {
  if (chunk.size() == static_cast<size_t>(block_tokens_)) {
    auto it = parent->full_children.find(chain_hash(parent->hash, chunk));
    if (it != parent->full_children.end() &&
        std::equal(chunk.begin(), chunk.end(), it->second->tokens.begin()))
      return it->second.get();
    return nullptr;
  }
  for (auto& c : parent->partial_children)
    if (std::equal(chunk.begin(), chunk.end(), c->tokens.begin(), c->tokens.end())) return c.get();
  return nullptr;
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const BlockId> blocks) {
  const size_t B = static_cast<size_t>(block_tokens_);
  Node* node = root_.get();
  for (size_t i = 0, pos = 0; pos < tokens.size() && i < blocks.size(); ++i, pos += B) {
    auto chunk = tokens.subspan(pos, std::min(B, tokens.size() - pos));
    Node* child = child_for(node, chunk);
    if (!child) {
      auto fresh = std::make_unique<Node>();
      fresh->parent = node;
      fresh->tokens.assign(chunk.begin(), chunk.end());
      fresh->block = blocks[i];
      child = fresh.get();
      if (chunk.size() == B) {
        fresh->hash = chain_hash(node->hash, chunk);
        // A different block with the same 64-bit hash holds the slot: keep it, stop here.
        if (!node->full_children.emplace(fresh->hash, std::move(fresh)).second) break;
      } else {
        node->partial_children.push_back(std::move(fresh));
      }
      refs_.retain(blocks[i]);
      ++blocks_;
      ++stats_.inserted_blocks;
      // A partial leaf that is a prefix of the new block says nothing the new one does not.
      auto& partials = node->partial_children;
      for (size_t k = 0; k < partials.size();) {
        Node* p = partials[k].get();
        if (p != child && p->leaf() && p->locks == 0 && p->tokens.size() < chunk.size() &&
            std::equal(p->tokens.begin(), p->tokens.end(), chunk.begin())) {
          remove_leaf(p);
        } else {
          ++k;
        }
      }
    }
    node = child;
  }
  touch(node);
  if (blocks_ > max_blocks_) evict(blocks_ - max_blocks_);
}

void PrefixCache::remove_leaf(Node* node) {
  Node* parent = node->parent;
  refs_.release(node->block);
  --blocks_;
  ++stats_.evicted_blocks;
  if (node->tokens.size() == static_cast<size_t>(block_tokens_)) {
    parent->full_children.erase(node->hash);
  } else {
    auto& v = parent->partial_children;
    v.erase(std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.get() == node; }));
  }
}

size_t PrefixCache::evict(size_t wanted) {
  // Least recently used unlocked leaves first; a parent whose last child goes becomes a leaf.
  auto older = [](Node* a, Node* b) { return a->last_use > b->last_use; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(older)> leaves(older);
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n != root_.get() && n->leaf() && n->locks == 0) leaves.push(n);
    for (auto& [h, c] : n->full_children) stack.push_back(c.get());
    for (auto& c : n->partial_children) stack.push_back(c.get());
  }
  size_t freed = 0;
  while (freed < wanted && !leaves.empty()) {
    Node* n = leaves.top();
    leaves.pop();
    Node* parent = n->parent;
    remove_leaf(n);
    ++freed;
    if (parent != root_.get() && parent->leaf() && parent->locks == 0) leaves.push(parent);
  }
  return freed;
}

void PrefixCache::clear() { evict(blocks_); }

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s = stats_;
  s.blocks = blocks_;
  return s;
}

}  // namespace ghostline::cache
