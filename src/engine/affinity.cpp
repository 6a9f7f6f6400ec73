#include "engine/affinity.hpp"

#include <sched.h>

#include <algorithm>

// The application's OpenMP runtime, if it has one (libgomp and libomp both
// export this): weak, so the library links no OpenMP of its own.
extern "C" int omp_get_max_threads() __attribute__((weak));

namespace mlbs::engine {

std::vector<int> allowed_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

unsigned application_threads(const std::vector<int>& allowed) {
  if (omp_get_max_threads) return static_cast<unsigned>(std::max(1, omp_get_max_threads()));
  return static_cast<unsigned>(allowed.size());
}

std::vector<int> auto_helper_cores(const std::vector<int>& allowed, unsigned app_threads, unsigned helpers) {
  std::vector<int> cores(helpers, -1);
  const std::size_t busy = std::min<std::size_t>(app_threads, allowed.size());
  const std::size_t free = allowed.size() - busy;
  if (free == 0) return cores;  // every core computes: the OS places them (see the header)
  for (unsigned i = 0; i < helpers; ++i) cores[i] = allowed[allowed.size() - 1 - (i % free)];
  return cores;
}

}  // namespace mlbs::engine
