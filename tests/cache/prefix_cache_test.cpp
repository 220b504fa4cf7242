// The prefix cache alone, with a fake block pool, against a reference model of what it holds:
// randomized operation sequences check that matches are the longest, budgets hold, locked paths
// survive eviction, and every block reference is returned exactly once.
#include "cache/prefix_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace ghostline::cache {
namespace {

constexpr int kB = 4;  // small blocks make partial and diverging blocks common

class FakePool : public BlockRefcounts {
 public:
  BlockId allocate() {
    BlockId id = next_++;
    refs_[id] = 1;
    return id;
  }
  void retain(BlockId id) override {
    ASSERT_GT(refs_[id], 0) << "retain of a free block " << id;
    ++refs_[id];
  }
  void release(BlockId id) override {
    ASSERT_GT(refs_[id], 0) << "double free of block " << id;
    --refs_[id];
  }
  int refs(BlockId id) const { return refs_.count(id) ? refs_.at(id) : 0; }
  int live() const {
    int n = 0;
    for (auto& [id, r] : refs_) n += r > 0;
    return n;
  }

 private:
  BlockId next_ = 0;
  std::map<BlockId, int> refs_;
};

// A request's sequence: the blocks it computed for `tokens`, as the engine would.
std::vector<BlockId> compute_blocks(FakePool& pool, const PrefixCache::Match& m, size_t n_tokens) {
  std::vector<BlockId> blocks;
  size_t full_reused = static_cast<size_t>(m.tokens) / kB;  // a partly matched block is copied
  for (size_t i = 0; i < full_reused; ++i) {
    pool.retain(m.blocks[i]);
    blocks.push_back(m.blocks[i]);
  }
  while (blocks.size() * kB < n_tokens) blocks.push_back(pool.allocate());
  return blocks;
}

size_t lcp(const std::vector<int32_t>& a, std::span<const int32_t> b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::vector<int32_t> random_tokens(std::mt19937& rng,
                                   const std::vector<std::vector<int32_t>>& known) {
  std::vector<int32_t> t;
  if (!known.empty() && rng() % 3 != 0) {  // usually extend or edit a known sequence
    t = known[rng() % known.size()];
    t.resize(rng() % (t.size() + 1));
  }
  int extra = rng() % 12;
  for (int i = 0; i < extra; ++i) t.push_back(static_cast<int32_t>(rng() % 3));
  return t;
}

TEST(PrefixCache, MatchIsAlwaysTheLongestCachedPrefix) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    FakePool pool;
    {
      PrefixCache cache(pool, kB, 1 << 20);  // no eviction: the reference is every insert
      std::vector<std::vector<int32_t>> inserted;
      for (int op = 0; op < 150; ++op) {
        auto tokens = random_tokens(rng, inserted);
        auto m = cache.match(tokens);
        size_t expect = 0;
        for (const auto& s : inserted) expect = std::max(expect, lcp(s, tokens));
        ASSERT_EQ(static_cast<size_t>(m.tokens), expect) << "seed " << seed << " op " << op;
        ASSERT_EQ(m.blocks.size(), (static_cast<size_t>(m.tokens) + kB - 1) / kB);
        if (tokens.empty()) continue;
        auto blocks = compute_blocks(pool, m, tokens.size());
        cache.insert(tokens, blocks);
        for (BlockId b : blocks) pool.release(b);  // the request ends
        inserted.push_back(tokens);
      }
      EXPECT_EQ(cache.stats().blocks, static_cast<size_t>(pool.live()));
    }
    EXPECT_EQ(pool.live(), 0) << "blocks leaked, seed " << seed;
  }
}

TEST(PrefixCache, BudgetHoldsLockedPathsSurviveAndNothingLeaks) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    FakePool pool;
    {
      const size_t budget = 12;
      PrefixCache cache(pool, kB, budget);
      std::vector<std::vector<int32_t>> known;
      std::vector<std::pair<PrefixCache::Lock, std::vector<int32_t>>> locked;
      for (int op = 0; op < 300; ++op) {
        auto tokens = random_tokens(rng, known);
        auto m = cache.match(tokens);
        // Matched blocks hold exactly the tokens asked for: they were inserted with them.
        ASSERT_LE(static_cast<size_t>(m.tokens), tokens.size());
        if (rng() % 4 == 0 && m.node) {
          locked.emplace_back(cache.lock(m),
                              std::vector<int32_t>(tokens.begin(), tokens.begin() + m.tokens));
        }
        if (!locked.empty() && rng() % 5 == 0) locked.erase(locked.begin() + rng() % locked.size());
        if (tokens.empty()) continue;
        auto blocks = compute_blocks(pool, m, tokens.size());
        cache.insert(tokens, blocks);
        for (BlockId b : blocks) pool.release(b);
        known.push_back(tokens);
        if (rng() % 7 == 0) cache.evict(rng() % 8);
        // The budget holds unless locked paths alone exceed it.
        size_t locked_blocks = 0;
        for (auto& [l, t] : locked) locked_blocks += (t.size() + kB - 1) / kB;
        ASSERT_LE(cache.stats().blocks, std::max(budget, locked_blocks)) << "seed " << seed;
        for (auto& [l, t] : locked)
          ASSERT_EQ(static_cast<size_t>(cache.match(t).tokens), t.size())
              << "locked path evicted, seed " << seed;
      }
      locked.clear();
      cache.clear();
      EXPECT_EQ(cache.stats().blocks, 0u);
      EXPECT_EQ(pool.live(), 0);
    }
    EXPECT_EQ(pool.live(), 0);
  }
}

TEST(PrefixCache, DivergingInsideABlockReusesItsLeadingTokens) {
  FakePool pool;
  PrefixCache cache(pool, kB, 100);
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto blocks = compute_blocks(pool, cache.match(a), a.size());
  cache.insert(a, blocks);
  std::vector<int32_t> b = {1, 2, 3, 4, 5, 6, 0, 0};
  auto m = cache.match(b);
  EXPECT_EQ(m.tokens, 6);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[0], blocks[0]);
  EXPECT_EQ(m.blocks[1], blocks[1]);
  for (BlockId id : blocks) pool.release(id);
  auto stats = cache.stats();
  EXPECT_EQ(stats.lookups, 2u);
  EXPECT_EQ(stats.matched_tokens, 6u);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedFirst) {
  FakePool pool;
  PrefixCache cache(pool, kB, 100);
  std::vector<int32_t> old_seq = {1, 1, 1, 1}, new_seq = {2, 2, 2, 2};
  for (auto* s : {&old_seq, &new_seq}) {
    auto blocks = compute_blocks(pool, cache.match(*s), s->size());
    cache.insert(*s, blocks);
    for (BlockId id : blocks) pool.release(id);
  }
  cache.match(new_seq);
  EXPECT_EQ(cache.evict(1), 1u);
  EXPECT_EQ(cache.match(old_seq).tokens, 0);
  EXPECT_EQ(cache.match(new_seq).tokens, 4);
}

}  // namespace
}  // namespace ghostline::cache
