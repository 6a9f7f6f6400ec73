// mlbs — the engine's clock helpers, shared by its source files.
#pragma once

#include <chrono>
#include <cstdint>

namespace mlbs::engine {

using Clock = std::chrono::steady_clock;

inline std::uint64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

inline std::uint64_t elapsed_ns(Clock::time_point since) { return ns_between(since, Clock::now()); }

/// A time point as trace::now_ns() counts (the steady clock since its epoch),
/// so spans reuse the clock reads the counters already make.
inline std::uint64_t trace_ns(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace mlbs::engine
