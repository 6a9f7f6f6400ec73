// mlbs — bandwidth cap as a wrapper around any tier backend, so one disk can
// emulate a slower burst buffer or parallel file system (Tier::bandwidth_bytes_per_s).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

#include "tiers/wrappers/wrapped.hpp"

namespace mlbs::tiers {

/// Paces the bytes through one tier, reads and writes together, to a rate,
/// as a device shares its bandwidth among the streams it serves: each stream
/// with bytes outstanding (a flow) moves at rate / flows, and a flow is done
/// when its bytes have moved (generalised processor sharing, the simulator's
/// rule for one tier, sim/sim.hpp). A transfer completes when both its real
/// I/O and its flow are done: max(real, capped), never their sum, so a cap
/// below the disk's speed yields the cap. An idle device banks nothing.
///
/// Why not first come, first served: a small read queued behind another
/// helper's whole-record write would wait for all of it, and the slower tier
/// it feeds would idle meanwhile; a device interleaves them.
class Pacer {
 public:
  using Clock = std::chrono::steady_clock;
  /// A stream's bytes on the device; 0 = none.
  using Flow = std::uint64_t;

  explicit Pacer(std::uint64_t bytes_per_s) : bytes_per_s_(double(bytes_per_s)) {}
  /// Puts `bytes` on the device from now: behind flow `onto`'s own bytes
  /// when it is still moving (one stream, one share), else as a new flow.
  Flow start(std::size_t bytes, Flow onto = 0);
  /// Blocks the calling helper until flow `f` has moved its bytes but the
  /// last `keep` (0: all of them), or until cancel().
  void wait(Flow f, std::size_t keep = 0);
  /// start + wait: a transfer that took no real time.
  void pass(std::size_t bytes) { wait(start(bytes)); }
  /// Pacing stops: waits end now and later ones do not wait (the runtime is giving up).
  void cancel() noexcept;

 private:
  /// Moves every flow on to `now`.
  void advance(Clock::time_point now);
  /// When a flow would have moved `bytes` more if no other came.
  Clock::time_point done_at(double bytes) const;

  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  double bytes_per_s_;
  Clock::time_point at_ = Clock::now();  ///< moving_ is as of then
  std::map<Flow, double> moving_;        ///< flow -> bytes still to move
  Flow next_ = 1;
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
