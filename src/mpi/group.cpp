#include "mpi/group.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "mlbs/errors.hpp"
#include "mpi/node_quota.hpp"

namespace mlbs::mpi {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw MpiError(EIO, fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(len))));
}

bool active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

namespace {
std::atomic<std::uint64_t> g_group_serial{0};
}

MpiGroup::MpiGroup(MPI_Comm comm) : user_(comm) {
  if (!active()) throw MpiError(EINVAL, "MPI is not initialized (call MPI_Init_thread before creating the Runtime)");
  if (comm == MPI_COMM_NULL) throw MpiError(EINVAL, "the Runtime's communicator is MPI_COMM_NULL");
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_),
        "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(node_, &node_rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(node_, &node_size_), "MPI_Comm_size");
  check(MPI_Query_thread(&thread_level_), "MPI_Query_thread");
  // Rank 0's pid, a clock reading and a per-process serial: unique to this
  // group of runtimes among all jobs sharing the tier paths.
  std::uint64_t tag[3] = {static_cast<std::uint64_t>(::getpid()),
                          static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()),
                          g_group_serial.fetch_add(1)};
  check(MPI_Bcast(tag, 3, MPI_UINT64_T, 0, comm_), "MPI_Bcast");
  job_tag_ = fmt::format("{}-{:x}-{}", tag[0], tag[1] & 0xffffffffffull, tag[2]);
}

MpiGroup::~MpiGroup() {
  if (!active()) return;  // the application finalized MPI first: nothing left to free
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<core::SharedQuota> MpiGroup::share(int tier, std::uint64_t node_bytes) {
  return std::make_unique<NodeQuota>(node_, tier, node_bytes);
}

}  // namespace mlbs::mpi
