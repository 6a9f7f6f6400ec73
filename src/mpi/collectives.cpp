// Store<T>::reduce / all_reduce: in-place reductions of working buffers.
#include <climits>
#include <cstdint>

#include <fmt/format.h>

#include "mlbs/detail/mpi.hpp"
#include "mlbs/errors.hpp"
#include "mpi/group.hpp"

namespace mlbs::detail {

void reduce_elements(void* data, std::size_t count, std::size_t elem_bytes, MPI_Datatype type, MPI_Op op,
                     int root, bool all, MPI_Comm comm, const std::string& store) {
  const char* what = all ? "all_reduce" : "reduce";
  if (!mpi::active())
    throw MpiError(EINVAL, fmt::format("{} needs MPI to be initialized", what), {store, {}, {}});
  if (comm == MPI_COMM_NULL)
    throw InvalidArgumentError(EINVAL, fmt::format("{}: the store has no communicator (set_comm)", what),
                               {store, {}, {}});
  int rank = 0, size = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  // Bad arguments must fail on every rank alike, or the ranks that passed
  // would wait in the reduction for the ones that threw: agree first.
  std::uint64_t mine[3] = {count, ~std::uint64_t(count), std::uint64_t(all || (root >= 0 && root < size))};
  std::uint64_t agreed[3] = {};
  mpi::check(MPI_Allreduce(mine, agreed, 3, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
  const std::uint64_t largest = agreed[0], smallest = ~agreed[1];
  if (largest != smallest)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("{}: the ranks' working buffers differ in size ({} to {} elements; "
                                           "this rank has {})", what, smallest, largest, count),
                               {store, {}, {}});
  if (!all && !(root >= 0 && root < size))
    throw InvalidArgumentError(EINVAL, fmt::format("reduce: root {} is not a rank of the communicator (size {})",
                                                   root, size), {store, {}, {}});
  // MPI counts are int: reduce at most INT_MAX elements at a time.
  auto* bytes = static_cast<unsigned char*>(data);
  for (std::size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min<std::size_t>(count - done, INT_MAX));
    void* at = bytes + done * elem_bytes;
    int rc;
    if (all)
      rc = MPI_Allreduce(MPI_IN_PLACE, at, n, type, op, comm);
    else if (rank == root)
      rc = MPI_Reduce(MPI_IN_PLACE, at, n, type, op, root, comm);
    else
      rc = MPI_Reduce(at, nullptr, n, type, op, root, comm);
    mpi::check(rc, all ? "MPI_Allreduce" : "MPI_Reduce");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace mlbs::detail
