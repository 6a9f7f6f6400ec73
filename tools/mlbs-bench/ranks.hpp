// mlbs-bench — the processes of a run: the ranks of MPI_COMM_WORLD when
// built with MPI (mpirun / srun start N of them), else this process alone.
//
// Every rank runs every workload on its own data; rank 0 gathers the
// figures and reports (docs/benchmarking.md, "Under MPI").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlbs_bench {

class Ranks {
 public:
  /// Built with MPI and started by a launcher (or MLBS_BENCH_MPI=1):
  /// MPI_Init_thread with MPI_THREAD_MULTIPLE (the library's helpers may call
  /// MPI). Otherwise rank 0 of 1 without MPI.
  Ranks();
  /// MPI_Finalize (every mlbs::Runtime must be gone by then).
  ~Ranks();
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  /// The lowest rank on this node (MPI_COMM_TYPE_SHARED): the one that
  /// creates and removes folders every rank of the node uses.
  bool node_leader() const { return node_leader_; }
  /// MPI_THREAD_* granted (MPI_THREAD_MULTIPLE asked); 3 without MPI.
  int thread_level() const { return thread_level_; }
  bool mpi() const { return mpi_; }

  void barrier() const;
  /// True on every rank when `ok` on every rank. A synchronisation point as
  /// well: no rank returns before every rank has called it.
  bool all(bool ok) const;
  /// Rank 0's value, on every rank.
  std::uint64_t broadcast(std::uint64_t value) const;
  /// Every rank's text in rank order, on rank 0; empty on the others.
  std::vector<std::string> gather(const std::string& text) const;
  /// Ends every rank (MPI_Abort): for an error one rank hits alone while the
  /// others wait in a collective. Without MPI, std::exit.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1, thread_level_ = 3;
  bool node_leader_ = true, mpi_ = false;
};

}  // namespace mlbs_bench
