// mlbs-bench — bandwidth cap for the baselines, the same rule as the
// library's throttle wrapper (src/tiers/wrappers/throttle): a virtual clock
// advances by bytes/rate per transfer, starting no earlier than now (an idle
// device banks no bandwidth). A synchronous transfer reserves its time when
// it starts and completes when both the real I/O and the clock are done
// (max of the two, never the sum); asynchronous ones (page-cache write-back
// and read-ahead) reserve and let the application wait only when it needs
// the result. One pacer per emulated device; not thread-safe (each baseline
// drives its device from the application thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace mlbs_bench {

class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Pacer(std::uint64_t bytes_per_s = 0) : bytes_per_s_(bytes_per_s) {}

  bool capped() const { return bytes_per_s_ != 0; }
  std::uint64_t bytes_per_s() const { return bytes_per_s_; }

  /// Seconds the device needs for `bytes` at the cap; 0 when uncapped.
  double cost_s(std::uint64_t bytes) const {
    return capped() ? double(bytes) / double(bytes_per_s_) : 0.0;
  }

  /// Schedules a transfer of `bytes` issued at `now`: returns when it completes.
  Clock::time_point reserve(std::uint64_t bytes, Clock::time_point now) {
    if (!capped()) return now;
    next_ = std::max(next_, now) +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cost_s(bytes)));
    return next_;
  }
  Clock::time_point reserve(std::uint64_t bytes) { return reserve(bytes, Clock::now()); }

  /// Sleeps until `t` (no-op when `t` has passed).
  static void wait_until(Clock::time_point t) {
    if (t > Clock::now()) std::this_thread::sleep_until(t);
  }

 private:
  std::uint64_t bytes_per_s_;
  Clock::time_point next_{};
};

}  // namespace mlbs_bench
