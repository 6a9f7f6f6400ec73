// mlbs-bench — in-transit analysis (--workload insitu, mode reader): the rtm
// forward phase writes its snapshots through mlbs while a second process,
// this binary started with --insitu-reader, reads every one as it becomes
// readable (mlbs::Reader) and computes its mean. The writer's wall and kernel
// time are compared with the same run without the reader (mode mlbs), and the
// reader's lag behind the writer is measured per snapshot.
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "modes.hpp"
#include "report.hpp"

namespace mlbs_bench {

/// Mode "reader": mlbs as mode "mlbs" runs it, plus the reader process.
/// Its stats() waits for the reader (outside the writer's wall time) and
/// adds "reader" to ModeStats::extra: reads, errors, lag percentiles.
std::unique_ptr<Mode> make_reader_mode(const Plan& plan, const Options& o, const RunDirs& dirs);

/// The reader process: `argv` = {exe, "--insitu-reader", tier spec,
/// durability, store, snapshots, report fd}. Returns its exit status.
int insitu_reader_main(int argc, char** argv);

/// Per (io_ratio, repeat): the reader run against the mlbs run beside it:
/// writer wall and kernel time with / without the reader, the reader's lag.
void print_insitu(std::FILE* out, const std::vector<RunResult>& results);

}  // namespace mlbs_bench
