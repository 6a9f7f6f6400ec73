// mlbs — one tier budget shared by the ranks of a node (core::SharedQuota) in
// an MPI shared-memory window: every rank reads the others' demands and takes
// bytes from the node's count with lock-free atomics, no messages.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "core/group.hpp"

namespace mlbs::mpi {

class NodeQuota final : public core::SharedQuota {
 public:
  /// Collective over `node` (its ranks share one memory): allocates the
  /// window on the node's rank 0.
  NodeQuota(MPI_Comm node, int tier, std::uint64_t node_bytes);
  /// Collective as well (MPI_Win_free); returns what this rank still holds.
  ~NodeQuota() override;

  std::uint64_t limit() const override;
  std::uint64_t node_free() const override;
  void publish_demand(std::uint64_t bytes) override;
  bool acquire(std::uint64_t bytes) override;
  void release(std::uint64_t bytes) override;
  std::uint64_t version() const override;
  int processes() const override { return size_; }
  void watch(std::function<void()> on_change) override;

  /// Max-min fair share of `budget` for demand `demands[me]` (water filling):
  /// demands at or below the fair level are met in full, the rest split what
  /// is left equally. Exposed for unit tests.
  static std::uint64_t fair_share(const std::uint64_t* demands, int n, int me, std::uint64_t budget);

 private:
  struct Header {
    std::atomic<std::uint64_t> used;     ///< bytes taken by all ranks of the node
    /// Bumped by every demand change; 32 bits because watchers wait on it
    /// with a (process-shared) futex.
    std::atomic<std::uint32_t> version;
  };
  struct Slot {
    std::atomic<std::uint64_t> demand;   ///< bytes this rank would like to hold
    std::atomic<std::uint64_t> held;     ///< bytes this rank holds
  };
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free &&
                    sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
                "shared-memory counters must be lock-free (address-free) atomics");

  MPI_Win win_ = MPI_WIN_NULL;
  Header* header_ = nullptr;
  Slot* slots_ = nullptr;
  int rank_ = 0, size_ = 1;
  std::uint64_t budget_ = 0;
  std::jthread watcher_;  ///< last: stopped before the window goes
};

}  // namespace mlbs::mpi
