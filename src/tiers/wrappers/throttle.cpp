#include "tiers/wrappers/throttle.hpp"

#include <algorithm>
#include <utility>

namespace mlbs::tiers {

Pacer::Clock::time_point Pacer::reserve(std::size_t bytes) {
  const auto cost = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(double(bytes) / double(bytes_per_s_)));
  std::lock_guard lock(mu_);
  // An idle device does not bank bandwidth for later bursts.
  next_ = std::max(next_, Clock::now()) + cost;
  return next_;
}

namespace {

class PacedWriter final : public ObjectWriter {
 public:
  PacedWriter(std::unique_ptr<ObjectWriter> inner, Pacer& pacer)
      : inner_(std::move(inner)), pacer_(pacer) {}
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    const auto done = pacer_.reserve(bytes);
    inner_->write(offset, data, bytes);
    pacer_.wait_until(done);  // as the capped device would complete it
  }
  void write_held(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    // The capped device is still busy with these bytes when the call
    // returns: the caller's work overlaps it, as on a real slow device.
    held_until_ = std::max(held_until_, pacer_.reserve(bytes));
    inner_->write_held(offset, data, bytes);
  }
  void commit(bool durable) override {
    if (held_until_ != Pacer::Clock::time_point{}) pacer_.wait_until(std::exchange(held_until_, {}));
    inner_->commit(durable);
  }

 private:
  std::unique_ptr<ObjectWriter> inner_;
  Pacer& pacer_;
  Pacer::Clock::time_point held_until_{};
};

class PacedReader final : public ObjectReader {
 public:
  PacedReader(std::unique_ptr<ObjectReader> inner, Pacer& pacer)
      : inner_(std::move(inner)), pacer_(pacer) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    const auto done = pacer_.reserve(bytes);
    inner_->read(offset, data, bytes);
    pacer_.wait_until(done);
  }

 private:
  std::unique_ptr<ObjectReader> inner_;
  Pacer& pacer_;
};

}  // namespace

std::unique_ptr<ObjectWriter> ThrottledBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  return std::make_unique<PacedWriter>(WrappedBackend::do_create(ref, size), pacer_);
}

std::unique_ptr<ObjectReader> ThrottledBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  return std::make_unique<PacedReader>(WrappedBackend::do_open(ref, size), pacer_);
}

}  // namespace mlbs::tiers
