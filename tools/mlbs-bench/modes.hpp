// mlbs-bench — the modes: how a workload's snapshots are stored.
//
//   mlbs         the library: DRAM (--dram), optional fast tier (--fast), slow
//                tier (--slow), schedule = the workload's read order
//   sync         write + fdatasync to the slow dir, pages dropped
//                (POSIX_FADV_DONTNEED), read back cold: the reference
//   sync-fast    the same on the fast dir
//   writebehind  the library with Schedule::unknown() and only [DRAM, slow]:
//                asynchronous write-behind with the same memory budget, LRU,
//                reads on demand (no prefetching)
//   pagecache    buffered write/read emulating a page cache of --dram bytes:
//                snapshots beyond the budget are fdatasync'ed + dropped
//                (oldest first); WILLNEED read-ahead of the next snapshot
//   odirect      plain O_DIRECT sequential writer/reader of the slow dir on
//                the application thread: the data-path figures' baseline
//   adios2       ADIOS2 BP5 with AsyncWrite, one step per snapshot (built
//                when ADIOS2's CMake package is found; else reported as not built)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mlbs/config.hpp>

#include "options.hpp"
#include "workloads.hpp"

namespace mlbs_bench {

/// One tier's counters for the report (mlbs: from Runtime::stats(); baselines:
/// measured by the bench).
struct TierReport {
  std::string name;          ///< "mem", "fast", "slow"
  std::string kind;          ///< "memory", "directory", "pagecache"
  std::string path;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t bandwidth_cap_bytes_per_s = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t stalls = 0;
  double busy_s = 0;
  std::string io_backend;    ///< how its bytes move: "io_uring+O_DIRECT", "pread", "page cache", ...
  /// mlbs with a codec: the records' own bytes behind bytes_in/out (0: not known, or equal).
  std::uint64_t raw_bytes_in = 0;
  std::uint64_t raw_bytes_out = 0;
};

struct ModeStats {
  double write_block_s = 0;   ///< application time blocked in write
  double read_block_s = 0;    ///< application time blocked in read
  double copy_s = 0;          ///< application time copying into buffers (mlbs: into DRAM slots)
  double copy_hash_s = 0;     ///< of copy_s, mlbs hashing what it copied (Stats::copy_hash_ns)
  std::vector<TierReport> tiers;
  nlohmann::json extra = nlohmann::json::object();   ///< mode-specific counters
};

class Mode : public SnapshotIo {
 public:
  virtual ModeStats stats() const = 0;
};

/// The modes mlbs-bench knows, in their canonical order.
const std::vector<std::string>& known_modes();
/// One line describing a mode (for --help).
std::string describe_mode(const std::string& mode);
/// Empty if `mode` can run with these options, else why not.
std::string mode_unavailable(const std::string& mode, const Options& o);

/// Where a run keeps its files: one folder per tier it uses.
/// The store modes mlbs, writebehind and reader write their snapshots to.
inline constexpr const char* kSnapshotStore = "snapshots";

struct RunDirs {
  std::filesystem::path fast;   ///< empty without --fast
  std::filesystem::path slow;
};

/// The library's configuration of the mlbs modes: [DRAM, fast (mlbs only,
/// with --fast), slow of kind --slow-kind], schedule = the read order
/// (writebehind: unknown).
mlbs::Config mlbs_config(const Plan& plan, const Options& o, const RunDirs& dirs, bool writebehind);

/// Builds a mode for one run (mlbs: starts the runtime).
std::unique_ptr<Mode> make_mode(const std::string& mode, const Plan& plan, const Options& o,
                                const RunDirs& dirs);

}  // namespace mlbs_bench
