// mlbs — base of tier wrappers (throttle, fault injection, tracing): forwards
// every operation to an inner backend; a wrapper overrides what it intercepts.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// A wait that Backend::cancel() cuts short: a wrapper's pacing and injected
/// delays must not hold a runtime's shutdown past its time-out.
class CancellableWait {
 public:
  using Clock = std::chrono::steady_clock;
  /// Waits until `t`; false if cancel() came first (every later wait then returns false at once).
  bool until(Clock::time_point t) {
    std::unique_lock lock(mu_);
    return !cv_.wait_until(lock, t, [&] { return cancelled_; });
  }
  void cancel() noexcept {
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

/// Budgets (reserve, release, room) are not forwarded: a tier's budget is its
/// outermost layer (the quota wrapper), whose Usage is the tier's.
class WrappedBackend : public Backend {
 public:
  explicit WrappedBackend(std::unique_ptr<Backend> inner)
      : Backend(inner->index(), inner->desc()), inner_(std::move(inner)) {}
  Backend& inner() noexcept { return *inner_; }

 protected:
  void do_probe() override { inner_->probe(durability()); }
  void do_create_space(const std::string& space) override { inner_->create_space(space); }
  void do_remove_space(const std::string& space) noexcept override { inner_->remove_space(space); }
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override {
    return inner_->create(ref, size);
  }
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override {
    return inner_->open(ref, size);
  }
  void do_remove(const ObjectRef& ref) override { inner_->remove(ref); }
  std::string do_space_path(const std::string& space) const override {
    return inner_->space_path(space);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> do_list(const std::string& space) const override {
    return inner_->list(space);
  }
  IoPath do_io_path() const override { return inner_->io_path(); }
  void do_shutdown() noexcept override { inner_->shutdown(); }
  void do_cancel() noexcept override { inner_->cancel(); }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace mlbs::tiers
