// mlbs — a tier's byte budget as a wrapper: its capacity (Tier::capacity_bytes)
// and, for a tier the node's ranks share, the node-wide budget it takes from.
// The engine wraps each bounded tier in one, outermost, and asks room() and
// reserve() instead of doing the arithmetic itself.
#pragma once

#include <cstdint>
#include <memory>

#include "core/group.hpp"
#include "tiers/wrappers/wrapped.hpp"

namespace mlbs::tiers {

class QuotaBackend final : public WrappedBackend {
 public:
  /// `limit`: bytes this runtime may hold here (0 = no limit of its own);
  /// `node`: the node's shared budget, or null.
  QuotaBackend(std::unique_ptr<Backend> inner, std::uint64_t limit, std::unique_ptr<core::SharedQuota> node = nullptr)
      : WrappedBackend(std::move(inner)), limit_(limit), node_(std::move(node)) {}

  std::uint64_t limit() const noexcept { return limit_; }
  /// The node's shared budget (null if the tier has none, or after take_node_budget()).
  core::SharedQuota* node_budget() const noexcept { return node_.get(); }
  /// Hands the node budget to the caller, who destroys it where that is safe
  /// (its watcher thread calls back into the engine). Reservations after it
  /// count against the tier's own limit only.
  std::unique_ptr<core::SharedQuota> take_node_budget() noexcept { return std::move(node_); }

 private:
  bool do_reserve(std::uint64_t bytes) override;
  void do_release(std::uint64_t bytes) override;
  std::uint64_t do_room() const override;

  std::uint64_t limit_;
  std::unique_ptr<core::SharedQuota> node_;
};

}  // namespace mlbs::tiers
