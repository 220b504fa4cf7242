#include "engine/kv/kv_block_pool.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

namespace ghostline::engine {
namespace {

constexpr int kLayers = 2, kDim = 8;

KvBlockPool small_pool(int blocks) {
  KvBlockPool probe(kLayers, kDim, 1);
  return KvBlockPool(kLayers, kDim, probe.block_bytes() * size_t(blocks));
}

TEST(KvBlockPool, SizesBlocksFromTheBudget) {
  KvBlockPool pool = small_pool(5);
  EXPECT_EQ(pool.block_bytes(), size_t(kLayers) * 2 * 16 * kDim * 2);
  EXPECT_EQ(pool.capacity(), 5);
  const auto s = pool.stats();
  EXPECT_EQ(s.blocks_total, 5);
  EXPECT_EQ(s.blocks_free, 5);
  EXPECT_EQ(s.bytes_total, 5 * pool.block_bytes());
}

TEST(KvBlockPool, AllocatesUntilExhaustedThenThrows) {
  KvBlockPool pool = small_pool(3);
  std::set<BlockId> ids;
  for (int i = 0; i < 3; ++i) ids.insert(pool.allocate());
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_THROW(pool.allocate(), KvPoolExhausted);
  pool.release(*ids.begin());
  EXPECT_EQ(pool.allocate(), *ids.begin());
}

TEST(KvBlockPool, ReclaimHookRunsWhenEmpty) {
  KvBlockPool pool = small_pool(1);
  BlockId held = pool.allocate();
  int calls = 0;
  pool.set_reclaim_hook([&](int wanted) {
    ++calls;
    EXPECT_EQ(wanted, 1);
    pool.release(held);
    return true;
  });
  EXPECT_EQ(pool.allocate(), held);
  EXPECT_EQ(calls, 1);
}

TEST(KvBlockPool, RefcountsAndMisuse) {
  KvBlockPool pool = small_pool(2);
  BlockId b = pool.allocate();
  pool.retain(b);
  EXPECT_EQ(pool.refcount(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.stats().blocks_used, 1);
  pool.release(b);
  EXPECT_EQ(pool.stats().blocks_used, 0);
  EXPECT_THROW(pool.release(b), std::logic_error);
  EXPECT_THROW(pool.retain(b), std::logic_error);
  EXPECT_THROW(pool.refcount(7), std::out_of_range);
}

TEST(KvBlockPool, BlocksDoNotOverlap) {
  KvBlockPool pool = small_pool(3);
  BlockId a = pool.allocate(), b = pool.allocate();
  for (int l = 0; l < kLayers; ++l) {
    std::fill_n(pool.keys(a, l), 16 * kDim, uint16_t(1 + l));
    std::fill_n(pool.values(a, l), 16 * kDim, uint16_t(10 + l));
    std::fill_n(pool.keys(b, l), 16 * kDim, uint16_t(20 + l));
    std::fill_n(pool.values(b, l), 16 * kDim, uint16_t(30 + l));
  }
  for (int l = 0; l < kLayers; ++l)
    for (int i = 0; i < 16 * kDim; ++i) {
      ASSERT_EQ(pool.keys(a, l)[i], 1 + l);
      ASSERT_EQ(pool.values(a, l)[i], 10 + l);
      ASSERT_EQ(pool.keys(b, l)[i], 20 + l);
      ASSERT_EQ(pool.values(b, l)[i], 30 + l);
    }
}

TEST(KvBlockPool, PrepareAppendAllocatesCoveringBlocks) {
  KvBlockPool pool = small_pool(8);
  KvSequence seq;
  pool.prepare_append(seq, 17);
  EXPECT_EQ(seq.blocks.size(), 2u);
  seq.n_tokens = 17;
  pool.prepare_append(seq, 15);  // 32 tokens: still two blocks
  EXPECT_EQ(seq.blocks.size(), 2u);
  pool.prepare_append(seq, 16);
  EXPECT_EQ(seq.blocks.size(), 3u);
  pool.release(seq);
  EXPECT_EQ(pool.stats().blocks_used, 0);
}

TEST(KvBlockPool, SharedPartialBlockIsCopiedBeforeExtending) {
  KvBlockPool pool = small_pool(8);
  KvSequence a;
  pool.prepare_append(a, 20);
  a.n_tokens = 20;
  std::fill_n(pool.keys(a.blocks[1], 0), 16 * kDim, uint16_t(42));

  KvSequence b = pool.share(a, 20);
  EXPECT_EQ(b.blocks, a.blocks);
  EXPECT_EQ(pool.refcount(a.blocks[0]), 2);
  pool.prepare_append(b, 1);
  // The full first block stays shared; the partial second one was copied for b.
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_NE(b.blocks[1], a.blocks[1]);
  const BlockId b_block = b.blocks[1];
  pool.prepare_append(b, 1);  // b's own block now: no copy
  EXPECT_EQ(b.blocks[1], b_block);
  EXPECT_EQ(pool.refcount(a.blocks[1]), 1);
  EXPECT_EQ(pool.keys(b.blocks[1], 0)[5], 42);
  pool.keys(b.blocks[1], 0)[5] = 7;
  EXPECT_EQ(pool.keys(a.blocks[1], 0)[5], 42);

  // A prefix ending on a block boundary shares only full blocks: nothing to copy.
  KvSequence c = pool.share(a, 16);
  EXPECT_EQ(c.blocks.size(), 1u);
  pool.prepare_append(c, 3);
  EXPECT_EQ(c.blocks[0], a.blocks[0]);
  EXPECT_EQ(c.blocks.size(), 2u);

  pool.release(a);
  pool.release(b);
  pool.release(c);
  EXPECT_EQ(pool.stats().blocks_used, 0);
}

// A device backend keeps the blocks' contents itself: the pool keeps only the blocks' accounts,
// and its copy-on-extend asks the backend to copy.
TEST(KvBlockPool, BlocksKeptOnADeviceHaveNoHostArena) {
  KvBlockPool pool = small_pool(8);
  ASSERT_TRUE(pool.on_host());
  std::vector<std::pair<BlockId, BlockId>> copies;
  pool.keep_on_device([&](BlockId from, BlockId to) { copies.emplace_back(from, to); });
  EXPECT_FALSE(pool.on_host());

  KvSequence a;
  pool.prepare_append(a, 20);
  a.n_tokens = 20;
  EXPECT_THROW(pool.keys(a.blocks[0], 0), std::logic_error);
  EXPECT_THROW(pool.values(a.blocks[1], 1), std::logic_error);
  KvSequence b = pool.share(a, 20);
  pool.prepare_append(b, 1);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0], std::make_pair(a.blocks[1], b.blocks[1]));
  pool.prepare_append(b, 1);  // b's own block now: no copy
  EXPECT_EQ(copies.size(), 1u);
  EXPECT_EQ(pool.stats().blocks_used, 3);

  // Without the device, a fresh arena: every block reads as zeros and takes writes.
  pool.keep_on_device(nullptr);
  ASSERT_TRUE(pool.on_host());
  EXPECT_EQ(pool.keys(a.blocks[1], 1)[5], 0);
  pool.values(b.blocks[1], 1)[5] = 9;
  KvSequence c = pool.share(a, 20);
  pool.prepare_append(c, 1);
  EXPECT_EQ(copies.size(), 1u);
  pool.release(a);
  pool.release(b);
  pool.release(c);
  EXPECT_EQ(pool.stats().blocks_used, 0);
}

TEST(KvBlockPool, TruncateReleasesUncoveredBlocks) {
  KvBlockPool pool = small_pool(8);
  KvSequence seq;
  pool.prepare_append(seq, 40);
  seq.n_tokens = 40;
  pool.truncate(seq, 17);
  EXPECT_EQ(seq.blocks.size(), 2u);
  EXPECT_EQ(seq.n_tokens, 17);
  EXPECT_EQ(pool.stats().blocks_used, 2);
  pool.truncate(seq, 0);
  EXPECT_TRUE(seq.blocks.empty());
  EXPECT_EQ(pool.stats().blocks_used, 0);
  EXPECT_THROW(pool.truncate(seq, 1), std::out_of_range);
}

// Random share / extend / truncate / release against a count of references per block.
TEST(KvBlockPool, RandomOperationsNeverLeakOrDoubleFree) {
  KvBlockPool pool = small_pool(64);
  std::mt19937 rng(7);
  std::vector<KvSequence> seqs(6);
  for (int step = 0; step < 3000; ++step) {
    KvSequence& s = seqs[rng() % seqs.size()];
    switch (rng() % 4) {
      case 0: {
        const int n = 1 + int(rng() % 20);
        try {
          pool.prepare_append(s, n);
          s.n_tokens += n;
        } catch (const KvPoolExhausted&) {
        }
        break;
      }
      case 1:
        if (s.n_tokens > 0) pool.truncate(s, int(rng() % s.n_tokens));
        break;
      case 2: {
        KvSequence& from = seqs[rng() % seqs.size()];
        if (&from != &s) {
          KvSequence shared = pool.share(from, from.n_tokens ? int(rng() % from.n_tokens) : 0);
          pool.release(s);
          s = std::move(shared);
        }
        break;
      }
      case 3:
        pool.release(s);
        break;
    }
    std::vector<int> refs(size_t(pool.capacity()), 0);
    for (const auto& q : seqs) {
      ASSERT_EQ(q.blocks.size() >= size_t((q.n_tokens + 15) / 16), true);
      for (BlockId b : q.blocks) ++refs[size_t(b)];
    }
    int used = 0;
    for (BlockId b = 0; b < pool.capacity(); ++b) {
      if (refs[size_t(b)] > 0) {
        ++used;
        ASSERT_EQ(pool.refcount(b), refs[size_t(b)]);
      } else {
        ASSERT_EQ(pool.refcount(b), 0);
      }
    }
    ASSERT_EQ(pool.stats().blocks_used, used);
  }
}

}  // namespace
}  // namespace ghostline::engine
