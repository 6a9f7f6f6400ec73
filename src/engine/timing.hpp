// mlbs — the engine's clock helpers, shared by its source files.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>

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

/// CPU time the calling thread has used (its own clock, not wall time): what
/// a helper takes from the application's cores (Stats::helper_cpu_ns).
inline std::uint64_t thread_cpu_ns() {
  timespec t{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

/// Adds the calling thread's CPU time to `total` as it goes, each count()
/// what was used since the last: an engine thread's work, not its waits.
/// The caller holds whatever guards `total`.
class CpuMeter {
 public:
  explicit CpuMeter(std::uint64_t& total) : total_(total), counted_(thread_cpu_ns()) {}
  void count() {
    const std::uint64_t cpu = thread_cpu_ns();
    total_ += cpu - std::min(cpu, counted_);
    counted_ = cpu;
  }

 private:
  std::uint64_t& total_;
  std::uint64_t counted_;
};

}  // namespace mlbs::engine
