// Bounds how many requests one client may make per second: a token bucket that refills at
// `per_second` and holds at most one second's worth, so short bursts (a paste, a fast typist)
// pass and a client in a loop is refused.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace ghostline::lsp {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // per_second <= 0: no limit.
  explicit RateLimiter(double per_second)
      : per_second_(per_second), tokens_(std::max(per_second, 1.0)) {}

  // Whether one more request may run at `now` (which must not go backwards); takes a token.
  bool admit(Clock::time_point now) {
    if (per_second_ <= 0) return true;
    if (last_) {
      double elapsed = std::chrono::duration<double>(now - *last_).count();
      tokens_ = std::min(std::max(per_second_, 1.0), tokens_ + elapsed * per_second_);
    }
    last_ = now;
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

  double per_second() const { return per_second_; }

 private:
  double per_second_;
  double tokens_;
  std::optional<Clock::time_point> last_;
};

}  // namespace ghostline::lsp
