// The small guards of the LSP surface: token comparison, the request rate limit and the JSON
// nesting bound.
#include <gtest/gtest.h>

#include <string>

#include "lsp/auth_token.h"
#include "lsp/transport.h"
#include "lsp/rate_limiter.h"

namespace ghostline::lsp {
namespace {

using namespace std::chrono_literals;

TEST(TokensEqual, AcceptsOnlyTheExactToken) {
  EXPECT_TRUE(tokens_equal("s3cret", "s3cret"));
  EXPECT_FALSE(tokens_equal("s3cres", "s3cret"));
  EXPECT_FALSE(tokens_equal("s3cre", "s3cret"));      // a prefix
  EXPECT_FALSE(tokens_equal("s3cret!", "s3cret"));    // longer
  EXPECT_FALSE(tokens_equal("", "s3cret"));
  EXPECT_FALSE(tokens_equal(std::string("s3cret\0", 7), "s3cret"));  // NUL padding is not the token
  EXPECT_TRUE(tokens_equal("", ""));
}

TEST(RateLimiter, AllowsABurstOfOneSecondThenTheRate) {
  RateLimiter limit(4);
  auto t = RateLimiter::Clock::time_point{} + 100s;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limit.admit(t)) << i;
  EXPECT_FALSE(limit.admit(t));
  EXPECT_FALSE(limit.admit(t + 200ms));  // 0.8 of a request refilled
  EXPECT_TRUE(limit.admit(t + 260ms));
  EXPECT_FALSE(limit.admit(t + 270ms));
  // A long pause refills no more than one second's worth.
  t += 60s;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limit.admit(t)) << i;
  EXPECT_FALSE(limit.admit(t));
}

TEST(RateLimiter, ZeroMeansUnlimited) {
  RateLimiter limit(0);
  auto t = RateLimiter::Clock::time_point{};
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(limit.admit(t));
}

TEST(RateLimiter, ARateBelowOneStillAdmitsOne) {
  RateLimiter limit(0.5);
  auto t = RateLimiter::Clock::time_point{} + 10s;
  EXPECT_TRUE(limit.admit(t));
  EXPECT_FALSE(limit.admit(t + 1s));
  EXPECT_TRUE(limit.admit(t + 2s));
}

TEST(NestingDepth, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_FALSE(exceeds_nesting_depth(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(exceeds_nesting_depth(R"({"a":[1,{"b":[]}]})", 3));
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_FALSE(exceeds_nesting_depth(R"({"a":"[[[[\"[[[["})", 1));
  EXPECT_TRUE(exceeds_nesting_depth(std::string(65, '[') + std::string(65, ']'), 64));
  EXPECT_FALSE(exceeds_nesting_depth(std::string(64, '[') + std::string(64, ']'), 64));
  // Siblings do not add up.
  std::string siblings = "[";
  for (int i = 0; i < 1000; ++i) siblings += "[[]],";
  siblings += "1]";
  EXPECT_FALSE(exceeds_nesting_depth(siblings, 3));
  // Unbalanced closers never make the depth negative.
  EXPECT_TRUE(exceeds_nesting_depth("]]]]" + std::string(5, '['), 4));
}

}  // namespace
}  // namespace ghostline::lsp
