// mlbs — names mlbs's own threads for the operating system, so that top -H,
// perf, gdb and /proc/PID/task/TID/comm tell them from the application's:
// "mlbs-helper-0", "mlbs-prefault", ... (docs/architecture.md, "Threads").
#pragma once

#include <pthread.h>

#include <string_view>

namespace mlbs::detail {

/// Names `thread` (Linux keeps 15 bytes; the rest is cut). Best effort:
/// the name is for people, so a refusal changes nothing else. Named by the
/// thread that creates it, the name is there once the creator goes on.
inline void name_os_thread(pthread_t thread, std::string_view name) noexcept {
  char buf[16] = {};
  name.copy(buf, sizeof buf - 1);
  (void)pthread_setname_np(thread, buf);
}

}  // namespace mlbs::detail
