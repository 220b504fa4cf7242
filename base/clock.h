// Elapsed time in milliseconds, the unit every stat and deadline in Ghostline is given in.
#pragma once

#include <chrono>

namespace ghostline {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

inline double ms_since(Clock::time_point start) {
  return ms_between(start, Clock::now());
}

}  // namespace ghostline
