// mlbs — bandwidth cap as a wrapper around any tier backend, so one disk can
// emulate a slower burst buffer or parallel file system (Tier::bandwidth_bytes_per_s).
#pragma once

#include <chrono>
#include <mutex>

#include "tiers/wrappers/wrapped.hpp"

namespace mlbs::tiers {

/// Paces the bytes through one tier, reads and writes together, to a rate:
/// a shared virtual clock advances by bytes/rate per transfer, reserved when
/// the transfer starts, and the transfer completes when both the real I/O
/// and the clock are done — max(real, capped), never their sum, so a cap
/// below the disk's speed yields the cap. Concurrent helpers share the cap,
/// as they share a real device's bandwidth.
class Pacer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Pacer(std::uint64_t bytes_per_s) : bytes_per_s_(bytes_per_s) {}
  /// Books `bytes` on the device from now (or from when it frees up):
  /// returns when the capped device would have moved them.
  Clock::time_point reserve(std::size_t bytes);
  /// Blocks the calling helper until `t`, or until cancel().
  void wait_until(Clock::time_point t) { wait_.until(t); }
  /// reserve + wait: a transfer that took no real time.
  void pass(std::size_t bytes) { wait_until(reserve(bytes)); }
  /// Pacing stops: waits end now and later ones do not wait (the runtime is giving up).
  void cancel() noexcept { wait_.cancel(); }

 private:
  std::mutex mu_;
  std::uint64_t bytes_per_s_;
  Clock::time_point next_ = Clock::now();
  CancellableWait wait_;
};

class ThrottledBackend final : public WrappedBackend {
 public:
  ThrottledBackend(std::unique_ptr<Backend> inner, std::uint64_t bytes_per_s)
      : WrappedBackend(std::move(inner)), pacer_(bytes_per_s) {}

 private:
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  void do_cancel() noexcept override {
    pacer_.cancel();
    WrappedBackend::do_cancel();
  }

  Pacer pacer_;
};

}  // namespace mlbs::tiers
