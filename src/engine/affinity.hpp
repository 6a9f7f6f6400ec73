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
/// after them, last first; with none free, all share the last core, where
/// the OS puts the application's threads last. Pure; empty `allowed` gives
/// -1 (not pinned) for each helper.
std::vector<int> auto_helper_cores(const std::vector<int>& allowed, unsigned app_threads, unsigned helpers);

}  // namespace mlbs::engine
