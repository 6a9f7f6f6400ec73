// mlbs — the runtime: owns the tiers, the catalog and the helper engine.
#pragma once

#include <memory>

#include "mlbs/config.hpp"
#include "mlbs/export.h"
#include "mlbs/features.hpp"
#include "mlbs/stats.hpp"

#if MLBS_HAVE_MPI
#include <mpi.h>
// A program compiled against another MPI than mlbs's would fail at link or
// run time; say so now.
#if MLBS_MPI_OPEN_MPI && !defined(OPEN_MPI)
#error "mlbs was built with Open MPI, but this program is compiled against another MPI: build mlbs with yours"
#elif MLBS_MPI_MPICH && !defined(MPICH_VERSION)
#error "mlbs was built with MPICH, but this program is compiled against another MPI: build mlbs with yours"
#endif
#endif

namespace mlbs {
namespace engine { class Engine; }
namespace detail { class StoreCore; }

/// Starts the helper engine on construction; on destruction drains what the
/// durability mode owes (persistent: everything reaches the last tier, bounded
/// by Config::shutdown_timeout_ms) and stops the helpers. Never hangs.
///
/// Under MPI (docs/mpi.md) a runtime belongs to the ranks of a communicator:
/// construction and destruction are collective over it, on-tier names carry
/// the rank, shared tiers are one budget per node, and an mpiio tier keeps
/// every rank's records in one shared file. Destroy it before MPI_Finalize.
class MLBS_API Runtime {
 public:
  /// Built with MPI and called between MPI_Init and MPI_Finalize: the ranks
  /// of MPI_COMM_WORLD (collective over it). Otherwise this process alone.
  explicit Runtime(Config cfg = Config{});
#if MLBS_HAVE_MPI
  /// The ranks of `comm` (collective over it; mlbs works on a duplicate).
  Runtime(Config cfg, MPI_Comm comm);
  /// The communicator given (or MPI_COMM_WORLD); MPI_COMM_NULL when this
  /// runtime runs without MPI.
  MPI_Comm comm() const;
#endif
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A snapshot of the catalog's counters, per tier.
  Stats stats() const;
  /// The read order the planner assumes from now on: fifo, lifo (with or
  /// without a record count) or unknown, for an application whose order
  /// changes between phases, or that is learnt as it runs (mlbs-run's
  /// --schedule auto). An explicit order is given at construction only
  /// (InvalidArgumentError here). Any thread.
  void set_schedule(const Schedule& schedule);
  const Config& config() const;
  /// This process's rank and the number of ranks (0 and 1 without MPI).
  int rank() const;
  int ranks() const;

 private:
  friend class detail::StoreCore;
  std::shared_ptr<engine::Engine> engine_;
};

}  // namespace mlbs
