// mlbs — an MPI communicator as the engine's process group (core::Group).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "core/group.hpp"

namespace mlbs::mpi {

/// Throws MpiError naming `call` when `rc` is not MPI_SUCCESS.
void check(int rc, const char* call);
/// True between MPI_Init and MPI_Finalize.
bool active();

/// The ranks of a communicator. Construction is collective over it (it
/// duplicates it, splits off the node's ranks and agrees on a job tag);
/// destruction frees the duplicates unless MPI has been finalized.
class MpiGroup final : public core::Group {
 public:
  explicit MpiGroup(MPI_Comm comm);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& job_tag() const override { return job_tag_; }
  std::unique_ptr<core::SharedQuota> share(int tier, std::uint64_t node_bytes) override;

  /// The communicator the user gave (Store<T>'s collectives default to it).
  MPI_Comm user_comm() const noexcept { return user_; }
  /// mlbs's own duplicate of it: the library's traffic never matches the
  /// application's messages. Errors on it return (MPI_ERRORS_RETURN).
  MPI_Comm comm() const noexcept { return comm_; }
  /// The ranks of this node (MPI_COMM_TYPE_SHARED), a duplicate as well.
  MPI_Comm node_comm() const noexcept { return node_; }
  int node_rank() const noexcept { return node_rank_; }
  int node_size() const noexcept { return node_size_; }
  /// MPI_Query_thread: tiers whose helpers call MPI need MPI_THREAD_MULTIPLE.
  int thread_level() const noexcept { return thread_level_; }

 private:
  MPI_Comm user_ = MPI_COMM_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  std::string job_tag_;
};

}  // namespace mlbs::mpi
