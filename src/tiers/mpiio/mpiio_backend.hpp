// mlbs — mpiio tier: the records of all ranks of a runtime in one shared file
// per tier, moved by collective MPI-IO (docs/mpiio.md).
#pragma once

#include <memory>

#include "core/group.hpp"
#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// The "mpiio" kind. `group` must be an MPI group (mpi::MpiGroup) with
/// MPI_THREAD_MULTIPLE; probe() says so otherwise. probe() and shutdown()
/// are collective over the group's ranks.
std::unique_ptr<Backend> make_mpiio_backend(int index, const Tier& desc, const core::Group* group);

}  // namespace mlbs::tiers
