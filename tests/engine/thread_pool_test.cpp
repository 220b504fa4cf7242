#include "engine/backend/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ghostline::engine::cpu {
namespace {

// Runs `parallel_for` (one of the pool's, bound to it) over n items and checks that every index
// came exactly once, in non-empty ranges, on one of the pool's threads.
template <typename ParallelFor>
void expect_each_index_once(ParallelFor parallel_for, int threads, int64_t n) {
  std::vector<std::atomic<int>> hits(n);
  parallel_for(n, [&](int64_t begin, int64_t end, int thread) {
    EXPECT_LT(begin, end);
    EXPECT_GE(thread, 0);
    EXPECT_LT(thread, threads);
    for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      expect_each_index_once([&](int64_t m, auto&& f) { pool.parallel_for(m, f); }, threads, n);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(ThreadPool, RangesDependOnlyOnNAndChunkCount) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    std::mutex mu;
    std::set<std::pair<int64_t, int64_t>> seen;
    pool.parallel_for_chunks(10, 4, [&](int64_t begin, int64_t end, int) {
      std::lock_guard lock(mu);
      seen.insert({begin, end});
    });
    const std::set<std::pair<int64_t, int64_t>> expected = {{0, 3}, {3, 6}, {6, 8}, {8, 10}};
    EXPECT_EQ(seen, expected);
  }
  EXPECT_EQ(ThreadPool::partition(10, 3, 0), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(ThreadPool::partition(10, 3, 2), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(ThreadPool::partition(2, 4, 3), (std::pair<int64_t, int64_t>{2, 2}));
}

TEST(ThreadPool, CallerDoesNotWaitForAThreadThatIsHeldUp) {
  // A worker stuck in its first range (as if descheduled) leaves the other ranges to the
  // caller instead of holding them.
  ThreadPool pool(2);
  std::atomic<int> by_caller{0}, by_worker{0};
  std::atomic<bool> release{false};
  std::thread unblock;
  pool.parallel_for_chunks(16, 16, [&](int64_t, int64_t, int thread) {
    if (thread == 0) {
      ++by_caller;
      if (by_caller == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } else {
      ++by_worker;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (by_caller + by_worker == 16) release = true;
  });
  EXPECT_EQ(by_caller + by_worker, 16);
  EXPECT_GE(by_caller.load(), 14);
}

TEST(ThreadPool, CallerAndWorkersShareTheRanges) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0}, by_worker{0};
  pool.parallel_for_chunks(2, 2, [&](int64_t, int64_t, int thread) {
    if (std::this_thread::get_id() == caller) {
      EXPECT_EQ(thread, 0);
      ++by_caller;
    } else {
      EXPECT_EQ(thread, 1);
      ++by_worker;
    }
    // Hold the first range until another thread shows up (bounded, for a busy machine).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (by_caller + by_worker < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  });
  EXPECT_EQ(by_caller.load(), 1);
  EXPECT_EQ(by_worker.load(), 1);
}

TEST(ThreadPool, ManyQuickDispatchesAndDispatchAfterSleeping) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int i = 0; i < 20000; ++i)
    pool.parallel_for(4, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 80000);
  // Long enough for the workers to stop spinning and block.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 80004);
}

TEST(ThreadPool, RethrowsAnExceptionFromAWorkerAndStaysUsable) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(pool.parallel_for_chunks(8, 8,
                                          [](int64_t begin, int64_t, int) {
                                            if (begin == 5) throw std::runtime_error("boom");
                                          }),
                 std::runtime_error);
  }
  std::atomic<int> count{0};
  std::function<void(int64_t, int64_t, int)> f = [&](int64_t b, int64_t e, int) {
    count += static_cast<int>(e - b);
  };
  pool.parallel_for(5, f);
  EXPECT_EQ(count.load(), 5);
}

TEST(ThreadPool, BalancedCoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 50; ++round) {
      for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
        expect_each_index_once([&](int64_t m, auto&& f) { pool.parallel_for_balanced(m, f); },
                               threads, n);
        if (HasFatalFailure()) return;
        // A job cut by chunks right after: the shares of the balanced one are all used up.
        std::atomic<int64_t> covered{0};
        pool.parallel_for(n, [&](int64_t b, int64_t e, int) { covered.fetch_add(e - b); });
        ASSERT_EQ(covered.load(), n);
      }
    }
  }
}

TEST(ThreadPool, BalancedThreadsStartAtTheFrontOfTheirShare) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> first(2, {-1, -1});
    pool.parallel_for_balanced(1000, [&](int64_t begin, int64_t end, int thread) {
      std::lock_guard lock(mu);
      if (first[size_t(thread)].first < 0) first[size_t(thread)] = {begin, end};
    });
    // A thread that got any of its own share began with its front; one that found its share
    // taken began with a piece from the back of the other's.
    EXPECT_TRUE(first[0].first <= 0 || first[0].second == 1000) << first[0].first;
    EXPECT_TRUE(first[1].first < 0 || first[1].first == 500 || first[1].second == 500)
        << first[1].first << " " << first[1].second;
  }
}

TEST(ThreadPool, BalancedCallerTakesOverTheShareOfAThreadThatIsHeldUp) {
  // A worker stuck in its first piece (as if descheduled) keeps only that piece: the caller
  // does its own share and the rest of the worker's.
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    const int64_t n = 64;
    std::atomic<int64_t> by_caller{0}, held{0};
    std::atomic<int> worker_ranges{0};
    pool.parallel_for_balanced(n, [&](int64_t begin, int64_t end, int thread) {
      if (thread == 0) {
        by_caller += end - begin;
        return;
      }
      ++worker_ranges;
      if (worker_ranges > 1) return;
      held = end - begin;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (by_caller + held < n && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    if (worker_ranges == 0) {  // the worker never woke up: the caller did everything
      EXPECT_EQ(by_caller.load(), n);
      continue;
    }
    EXPECT_EQ(worker_ranges.load(), 1);
    EXPECT_EQ(by_caller + held, n);
    EXPECT_LE(held.load(), n / 2);
  }
}

TEST(ThreadPool, BalancedRethrowsAnExceptionAndStaysUsable) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(pool.parallel_for_balanced(64,
                                            [](int64_t begin, int64_t end, int) {
                                              if (begin <= 40 && 40 < end)
                                                throw std::runtime_error("boom");
                                            }),
                 std::runtime_error);
  }
  std::atomic<int64_t> count{0};
  pool.parallel_for_balanced(100, [&](int64_t b, int64_t e, int) { count += e - b; });
  EXPECT_EQ(count.load(), 100);
}

}  // namespace
}  // namespace ghostline::engine::cpu
