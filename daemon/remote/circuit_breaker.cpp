#include "daemon/remote/circuit_breaker.h"

namespace ghostline::daemon::remote {

bool CircuitBreaker::allow(Clock::time_point now) {
  switch (state_) {
    case State::Closed:
      return true;
    case State::Open:
      if (now - opened_at_ < cool_down_) return false;
      state_ = State::HalfOpen;
      return true;
    case State::HalfOpen:
      // The trial request runs on the same (engine) thread, so a second one comes only after
      // the trial recorded its outcome; until then, try again.
      return true;
  }
  return true;
}

void CircuitBreaker::record_success() {
  state_ = State::Closed;
  failures_ = 0;
}

bool CircuitBreaker::record_failure(Clock::time_point now) {
  ++failures_;
  if (state_ == State::HalfOpen || (state_ == State::Closed && failures_ >= failures_to_open_)) {
    state_ = State::Open;
    opened_at_ = now;
    return true;
  }
  return false;
}

const char* breaker_state_name(CircuitBreaker::State state) {
  switch (state) {
    case CircuitBreaker::State::Closed:
      return "closed";
    case CircuitBreaker::State::Open:
      return "open";
    case CircuitBreaker::State::HalfOpen:
      return "half-open";
  }
  return "?";
}

}  // namespace ghostline::daemon::remote
