#include "engine/backend/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ghostline::engine::cpu {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int64_t begin, int64_t end, int thread) {
        EXPECT_LT(begin, end);
        EXPECT_GE(thread, 0);
        EXPECT_LT(thread, threads);
        for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, PartitionIsDeterministicAndBalanced) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> seen(3, {-1, -1});
    pool.parallel_for(10, [&](int64_t begin, int64_t end, int thread) {
      std::lock_guard lock(mu);
      seen[thread] = {begin, end};
    });
    EXPECT_EQ(seen[0], (std::pair<int64_t, int64_t>{0, 4}));
    EXPECT_EQ(seen[1], (std::pair<int64_t, int64_t>{4, 7}));
    EXPECT_EQ(seen[2], (std::pair<int64_t, int64_t>{7, 10}));
  }
  EXPECT_EQ(ThreadPool::partition(2, 4, 0), (std::pair<int64_t, int64_t>{0, 1}));
  EXPECT_EQ(ThreadPool::partition(2, 4, 3), (std::pair<int64_t, int64_t>{2, 2}));
}

TEST(ThreadPool, CallerTakesPartOfTheWork) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> caller_ran{false}, other_ran{false};
  pool.parallel_for(2, [&](int64_t, int64_t, int thread) {
    if (std::this_thread::get_id() == caller) {
      EXPECT_EQ(thread, 0);
      caller_ran = true;
    } else {
      other_ran = true;
    }
  });
  EXPECT_TRUE(caller_ran);
  EXPECT_TRUE(other_ran);
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
  EXPECT_THROW(pool.parallel_for(2,
                                 [](int64_t, int64_t, int thread) {
                                   if (thread == 1) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  std::atomic<int> count{0};
  std::function<void(int64_t, int64_t, int)> f = [&](int64_t b, int64_t e, int) {
    count += static_cast<int>(e - b);
  };
  pool.parallel_for(5, f);
  EXPECT_EQ(count.load(), 5);
}

}  // namespace
}  // namespace ghostline::engine::cpu
