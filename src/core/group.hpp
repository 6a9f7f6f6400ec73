// mlbs — the processes one runtime runs with: the ranks of an MPI communicator,
// or this process alone. The engine and the tiers see only this interface, so
// nothing outside src/mpi/ and src/tiers/mpiio/ includes <mpi.h>.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mlbs::core {

/// A tier capacity that the processes of one node share as one budget (a
/// burst buffer or node-local NVMe holding the records of every rank there).
/// Each process keeps its own `used` count and calls acquire/release as it
/// does; the budget itself is never exceeded, whatever the processes' timing.
class SharedQuota {
 public:
  virtual ~SharedQuota() = default;
  /// Bytes of the node's budget this process may hold now: its fair share of
  /// what the node's processes demand (max-min fair; what one does not demand
  /// is lent to the others), never below min(demand, budget / processes).
  virtual std::uint64_t limit() const = 0;
  /// Bytes still free in the whole node's budget.
  virtual std::uint64_t node_free() const = 0;
  /// Announces how many bytes this process would like to hold on the tier.
  virtual void publish_demand(std::uint64_t bytes) = 0;
  /// Takes `bytes` of the node budget when both the node budget and limit()
  /// allow it; false (nothing taken) otherwise.
  virtual bool acquire(std::uint64_t bytes) = 0;
  virtual void release(std::uint64_t bytes) = 0;
  /// Changes whenever any process of the node publishes a new demand: the
  /// engine replans when it sees a new value.
  virtual std::uint64_t version() const = 0;
  /// Processes sharing the budget.
  virtual int processes() const = 0;
  /// Calls `on_change` (from a thread of the quota's own) whenever another
  /// process's demand changes, so an idle engine gives lent bytes back
  /// without waiting for an event of its own. Stops when the quota is destroyed.
  virtual void watch(std::function<void()> on_change) = 0;
};

class Group {
 public:
  virtual ~Group() = default;
  /// This process's rank and the number of ranks (0 and 1 when alone).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// A tag every rank of the group agrees on, unique to this group of
  /// runtimes (names the shared scratch files of one job).
  virtual const std::string& job_tag() const = 0;
  /// Collective over the ranks of this node: shares `node_bytes` among them.
  virtual std::unique_ptr<SharedQuota> share(int tier, std::uint64_t node_bytes) = 0;
};

}  // namespace mlbs::core
