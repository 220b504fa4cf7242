// Small helpers shared by the generation loops (generator.cpp, speculative.cpp): elapsed time
// and the cancel flag.
#pragma once

#include <atomic>
#include <chrono>

namespace ghostline::engine::loop {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline bool is_set(const std::atomic<bool>* flag) {
  return flag && flag->load(std::memory_order_relaxed);
}

}  // namespace ghostline::engine::loop
