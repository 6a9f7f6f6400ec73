// mlbs — where the helper threads run (Config::helper_core).
#pragma once

#include <vector>

namespace mlbs::engine {

/// The cores this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cores();

/// How many threads the application computes with: its OpenMP team size when
/// it uses OpenMP, else every allowed core (assume it keeps them all busy).
unsigned application_threads(const std::vector<int>& allowed);

/// Cores for `helpers` helper threads under `helper_core = auto`: the
/// application's threads are assumed on the first `app_threads` allowed
/// cores (OpenMP fills places from the first), so helpers take the cores
/// after them, last first. With none free, -1 (not pinned) for each: the
/// OS then runs a helper on whichever core has a gap (a team thread waiting
/// at a barrier, a core the application left), where pinned to one core all
/// helpers preempted the same team thread while the others waited on it
/// (docs/architecture.md, "Threads and waiting"). Pure; empty `allowed`
/// gives -1 too.
std::vector<int> auto_helper_cores(const std::vector<int>& allowed, unsigned app_threads, unsigned helpers);

}  // namespace mlbs::engine
