#include "daemon/remote/circuit_breaker.h"

#include <gtest/gtest.h>

#include "daemon/remote/http_client.h"

namespace ghostline::daemon::remote {
namespace {

using namespace std::chrono_literals;
using State = CircuitBreaker::State;

TEST(CircuitBreaker, OpensAfterConsecutiveFailuresOnly) {
  CircuitBreaker b(3, 1000ms);
  const auto t0 = CircuitBreaker::Clock::now();
  EXPECT_FALSE(b.record_failure(t0));
  EXPECT_FALSE(b.record_failure(t0));
  b.record_success();  // the count is of failures in a row
  EXPECT_FALSE(b.record_failure(t0));
  EXPECT_FALSE(b.record_failure(t0));
  EXPECT_TRUE(b.allow(t0));
  EXPECT_TRUE(b.record_failure(t0));
  EXPECT_EQ(b.state(), State::Open);
  EXPECT_FALSE(b.allow(t0 + 999ms));
}

TEST(CircuitBreaker, TriesTheServerAgainAfterTheCoolDown) {
  CircuitBreaker b(1, 1000ms);
  const auto t0 = CircuitBreaker::Clock::now();
  EXPECT_TRUE(b.record_failure(t0));
  EXPECT_FALSE(b.allow(t0 + 500ms));
  EXPECT_TRUE(b.allow(t0 + 1000ms));
  EXPECT_EQ(b.state(), State::HalfOpen);
  // The trial fails: open again, for a whole new cool-down.
  EXPECT_TRUE(b.record_failure(t0 + 1000ms));
  EXPECT_FALSE(b.allow(t0 + 1500ms));
  EXPECT_TRUE(b.allow(t0 + 2000ms));
  b.record_success();
  EXPECT_EQ(b.state(), State::Closed);
  EXPECT_EQ(b.consecutive_failures(), 0);
}

TEST(Url, ParsesSchemeHostPortAndBasePath) {
  auto u = Url::parse("http://gpu-box:8000");
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.host, "gpu-box");
  EXPECT_EQ(u.port, "8000");
  EXPECT_EQ(u.base_path, "");
  u = Url::parse("https://inference.example.com/team/a/");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, "443");
  EXPECT_EQ(u.base_path, "/team/a");
  u = Url::parse("http://[::1]:9000/v");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, "9000");
  EXPECT_EQ(u.origin(), "http://[::1]:9000");
}

TEST(Url, RejectsWhatItCannotUse) {
  EXPECT_THROW(Url::parse("ftp://host"), std::invalid_argument);
  EXPECT_THROW(Url::parse("localhost:8000"), std::invalid_argument);
  EXPECT_THROW(Url::parse("http://:8000"), std::invalid_argument);
  EXPECT_THROW(Url::parse("http://host:80a"), std::invalid_argument);
  EXPECT_THROW(Url::parse("http://user:secret@host"),
               std::invalid_argument);  // keys go in --api-key-env
}

}  // namespace
}  // namespace ghostline::daemon::remote
