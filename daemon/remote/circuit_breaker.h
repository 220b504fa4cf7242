// Stops sending requests to a server that keeps failing, and tries it again after a cool-down:
// a server that is down costs each keystroke a connect timeout otherwise.
//   closed:    requests go to the server; `failures_to_open` consecutive failures open it
//   open:      requests skip the server until the cool-down has passed
//   half-open: one request tries the server; success closes, failure opens again
#pragma once

#include <chrono>

namespace ghostline::daemon::remote {

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { Closed, Open, HalfOpen };

  CircuitBreaker(int failures_to_open, std::chrono::milliseconds cool_down)
      : failures_to_open_(failures_to_open < 1 ? 1 : failures_to_open), cool_down_(cool_down) {}

  // Whether a request may go to the server now (an open breaker past its cool-down lets one
  // trial request through).
  bool allow(Clock::time_point now);
  void record_success();
  // Returns true when this failure opened the breaker (it was closed or half-open).
  bool record_failure(Clock::time_point now);

  State state() const { return state_; }
  int consecutive_failures() const { return failures_; }

 private:
  int failures_to_open_;
  std::chrono::milliseconds cool_down_;
  State state_ = State::Closed;
  int failures_ = 0;
  Clock::time_point opened_at_{};
};

const char* breaker_state_name(CircuitBreaker::State state);

}  // namespace ghostline::daemon::remote
