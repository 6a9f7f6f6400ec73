// mlbs — which I/O backend a directory tier gets (Tier::io_backend), and the
// test hooks that steer the choice.
#pragma once

#include <memory>
#include <optional>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// The "directory" kind's factory: io_uring + O_DIRECT or pread, following
/// desc.io_backend and desc.page_cache. `auto` settles for pread (and says
/// why in io_path().fallback) when this build has no io_uring, the tier uses
/// the page cache, io_uring cannot be set up, or the file system refuses
/// O_DIRECT (found out by probe()). An explicit io_uring that cannot be had
/// is a TierError, from here or from probe().
std::unique_ptr<Backend> make_directory_backend(int index, const Tier& desc);

/// True when this build has the io_uring backend (MLBS_ENABLE_IO_URING and liburing).
bool io_uring_compiled() noexcept;

/// 0 when an io_uring ring can be set up in this process, else the errno
/// (also the simulated one, see below). Runs no I/O.
int io_uring_setup_error() noexcept;

namespace hooks {
/// Test hooks, read from the environment each time a backend is built:
///  * MLBS_TEST_URING_FAIL: simulate a failing io_uring_queue_init. "1" (or
///    "ENOSYS") gives ENOSYS, "EPERM" EPERM, "ENOMEM" ENOMEM; unset/empty/"0": no.
///  * MLBS_TEST_ODIRECT_FAIL=1: probe() finds O_DIRECT refused (EINVAL), as on
///    file systems without it.
///  * MLBS_TEST_IO_BACKEND=pread|io_uring: what io_backend = auto means, so a
///    whole test suite runs against one backend (tiers that use the page
///    cache keep pread). Explicit io_backend values are left alone.
///  * MLBS_TEST_LAYOUT=file-per-record|log: the layout of every directory
///    tier whose Tier::layout is unset, in place of Config::layout, so a whole
///    suite runs against one layout. Explicit Tier::layout values are left alone.
int simulated_uring_failure() noexcept;
std::optional<Layout> test_layout();
bool simulated_odirect_failure() noexcept;
}  // namespace hooks

}  // namespace mlbs::tiers
