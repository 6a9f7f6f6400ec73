// mlbs — base of tier wrappers (throttle, fault injection, tracing): forwards
// every operation to an inner backend; a wrapper overrides what it intercepts.
#pragma once

#include <memory>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

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

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace mlbs::tiers
