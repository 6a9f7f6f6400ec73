// mlbs_crash: the two roles of the crash harness (docs/crash-testing.md).
#pragma once

#include "options.hpp"

namespace mlbs::crash {

/// Writes, erases and flushes records until killed; reports through o.report_fd.
int run_child(const Options& o);

/// Kills a child o.kills times, recovering and checking the store after each.
/// Returns 0 when every check held, 1 otherwise.
int run_parent(const Options& o);

}  // namespace mlbs::crash
