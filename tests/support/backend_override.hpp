// Test helper: while alive, tiers of one kind are built by another factory
// (a wrapper that gates or injects); the previous factory comes back after.
#pragma once

#include <string>

#include "tiers/registry.hpp"

namespace mlbs::test {

class BackendOverride {
 public:
  BackendOverride(std::string kind, tiers::Factory factory)
      : kind_(std::move(kind)), previous_(tiers::register_backend(kind_, std::move(factory))) {}
  ~BackendOverride() { tiers::register_backend(kind_, std::move(previous_)); }
  BackendOverride(const BackendOverride&) = delete;
  BackendOverride& operator=(const BackendOverride&) = delete;

 private:
  std::string kind_;
  tiers::Factory previous_;
};

}  // namespace mlbs::test
