#include "tiers/wrappers/throttle.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

namespace mlbs::tiers {

namespace {
constexpr double kByte = 0.5;  // what rounding may leave of a finished flow
}  // namespace

Pacer::Flow Pacer::start(std::size_t bytes, Flow onto) {
  std::lock_guard lock(mu_);
  advance(Clock::now());
  if (auto it = moving_.find(onto); onto && it != moving_.end()) {
    it->second += double(bytes);
    return onto;
  }
  const Flow f = next_++;
  if (bytes) moving_.emplace(f, double(bytes));
  return f;
}

void Pacer::wait(Flow f, std::size_t keep) {
  std::unique_lock lock(mu_);
  while (!cancelled_) {
    advance(Clock::now());
    const auto it = moving_.find(f);
    if (it == moving_.end() || it->second <= double(keep) + kByte) return;
    // Woken at the prediction; a flow that came since moves it later, so
    // look again rather than trust it.
    cv_.wait_until(lock, done_at(it->second - double(keep)));
  }
}

void Pacer::cancel() noexcept {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

void Pacer::advance(Clock::time_point now) {
  double dt = std::chrono::duration<double>(now - at_).count();
  if (dt <= 0) return;
  at_ = now;
  // Each flow moves at rate / flows until the smallest is done, then the
  // rest share the rate among fewer.
  while (dt > 0 && !moving_.empty()) {
    const double share = bytes_per_s_ / double(moving_.size());
    double least = std::numeric_limits<double>::max();
    for (const auto& [f, left] : moving_) least = std::min(least, left);
    const double step = std::min(dt, least / share);
    for (auto it = moving_.begin(); it != moving_.end();) {
      it->second -= share * step;
      it = it->second <= kByte ? moving_.erase(it) : std::next(it);
    }
    dt -= step;
  }
}

Pacer::Clock::time_point Pacer::done_at(double bytes) const {
  // Every flow moves alike until one is done: these bytes move along with
  // min(theirs, these) of each other flow.
  double all = 0;
  for (const auto& [f, other] : moving_) all += std::min(other, bytes);
  return at_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(all / bytes_per_s_));
}

namespace {

class PacedWriter final : public ObjectWriter {
 public:
  PacedWriter(std::unique_ptr<ObjectWriter> inner, Pacer& pacer)
      : inner_(std::move(inner)), pacer_(pacer) {}
  // A writer is one stream: its bytes take one share of the device.
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    flow_ = pacer_.start(bytes, flow_);
    inner_->write(offset, data, bytes);
    pacer_.wait(flow_);  // as the capped device would complete it
  }
  void write_held(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    // The capped device is still busy with these bytes when the call
    // returns: the caller's work overlaps it, as on a real slow device. They
    // queue behind the bytes held before, so the device goes on from those
    // to these without a gap, and the call returns once those are done
    // (ObjectWriter::write_held): a caller writing piece after piece keeps
    // the cap's pace rather than run ahead and wait for all of it at commit().
    flow_ = pacer_.start(bytes, flow_);
    pacer_.wait(flow_, bytes);
    inner_->write_held(offset, data, bytes);
  }
  void commit(bool durable) override {
    pacer_.wait(flow_);
    inner_->commit(durable);
  }

 private:
  std::unique_ptr<ObjectWriter> inner_;
  Pacer& pacer_;
  Pacer::Flow flow_ = 0;
};

class PacedReader final : public ObjectReader {
 public:
  PacedReader(std::unique_ptr<ObjectReader> inner, Pacer& pacer)
      : inner_(std::move(inner)), pacer_(pacer) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    read_held(offset, data, bytes);
    wait_held();
  }
  // The capped device reads these bytes while the caller works; they are
  // there when it would have moved them, and the inner read is done. They
  // queue behind the bytes held before, as a held write's do, and the call
  // returns once those are in: a caller reading piece after piece keeps the
  // cap's pace, with no gap for its own wake-up between two pieces.
  void read_held(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    flow_ = pacer_.start(bytes, held_ ? flow_ : 0);
    held_ = true;
    inner_->read_held(offset, data, bytes);
    pacer_.wait(flow_, bytes);
  }
  void wait_held() override {
    if (!std::exchange(held_, false)) return;
    inner_->wait_held();
    pacer_.wait(flow_);
  }

 private:
  std::unique_ptr<ObjectReader> inner_;
  Pacer& pacer_;
  Pacer::Flow flow_ = 0;
  bool held_ = false;  ///< a read_held() is not waited for yet
};

}  // namespace

std::unique_ptr<ObjectWriter> ThrottledBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  return std::make_unique<PacedWriter>(WrappedBackend::do_create(ref, size), pacer_);
}

std::unique_ptr<ObjectReader> ThrottledBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  return std::make_unique<PacedReader>(WrappedBackend::do_open(ref, size), pacer_);
}

}  // namespace mlbs::tiers
