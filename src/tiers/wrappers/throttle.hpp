// mlbs — bandwidth cap as a wrapper around any tier backend, so one disk can
// emulate a slower burst buffer or parallel file system (Tier::bandwidth_bytes_per_s).
#pragma once

#include <chrono>
#include <mutex>

#include "tiers/wrappers/wrapped.hpp"

namespace mlbs::tiers {

/// Paces the bytes through one tier, reads and writes together, to a rate:
/// a shared virtual clock advances by bytes/rate per transfer and each
/// transfer waits until the clock has caught up. Concurrent helpers share
/// the cap, as they share a real device's bandwidth.
class Pacer {
 public:
  explicit Pacer(std::uint64_t bytes_per_s) : bytes_per_s_(bytes_per_s) {}
  /// Blocks the calling helper until `bytes` may pass.
  void pass(std::size_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mu_;
  std::uint64_t bytes_per_s_;
  Clock::time_point next_ = Clock::now();
};

class ThrottledBackend final : public WrappedBackend {
 public:
  ThrottledBackend(std::unique_ptr<Backend> inner, std::uint64_t bytes_per_s)
      : WrappedBackend(std::move(inner)), pacer_(bytes_per_s) {}

 private:
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;

  Pacer pacer_;
};

}  // namespace mlbs::tiers
