// mlbs-bench — results: the model applied per group, the table, the JSON
// document and its checker (mlbs-bench --check-json).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "modes.hpp"

namespace mlbs_bench {

/// One (workload, mode, io_ratio) run.
struct RunResult {
  std::string workload;
  std::string mode;
  unsigned io_ratio = 0;
  unsigned repeat = 0;              ///< --repeat: which run of this (workload, mode, io_ratio), from 0
  std::uint64_t grid_bytes = 0;     ///< bytes of one snapshot (the grid actually used)
  std::string grid_dims;            ///< "nx x ny x nz"
  unsigned steps = 0;
  unsigned snapshots = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  double wall_s = 0;
  double kernel_s = 0;              ///< application compute, checksums included
  double hash_s = 0;                ///< of which snapshot checksums
  double copy_s = 0;
  /// Of copy_s, the library's hashing of what it copied: the physical bound
  /// counts the copy alone (plain_copy_s)
  double copy_hash_s = 0;
  double plain_copy_s() const { return copy_s - copy_hash_s; }
  double write_block_s = 0;
  double read_block_s = 0;
  double finish_s = 0;              ///< draining at the end (inside wall_s)
  double setup_s = 0;               ///< from the clock's start to the first step: the mode's set-up (inside wall_s)
  double read_phase_s = 0;          ///< micro, rtm: wall time of the read-back phase (inside wall_s)
  double io_s_model = 0;
  /// Of kernel_s, the compute no I/O can overlap: before the first write, and
  /// after the last read when every snapshot had been read back (else 0).
  double lead_compute_s = 0;
  double tail_compute_s = 0;
  /// Of kernel_s, the compute between the last write and the first read when
  /// every write came first (else 0): the turn (model::io_span_s).
  double turn_compute_s = 0;
  double least_io_s = 0;            ///< physical bound's I/O part: what capacity forces through the tiers
  /// least_io_s after the group's least lead compute and before its least tail
  /// compute (model::io_span_s): the least time the run's I/O side spans
  double io_span_s = 0;
  /// max(min(sync's kernel_s, its own) + plain_copy_s(), io_span_s); 0 without mlbs tiers
  double physical_bound_s = 0;
  /// mlbs with a codec that stored frames: raw / stored bytes on the file
  /// tiers, and the physical bound over the stored bytes at that ratio (0: no codec).
  double codec_ratio = 0;
  double physical_bound_stored_s = 0;
  double expected_speedup = 0;
  double actual_speedup = 0;
  std::vector<TierReport> tiers;
  std::uint64_t result_checksum = 0;
  std::optional<std::uint64_t> image_checksum;
  bool verified = false;
  unsigned mismatches = 0;
  /// A lossy codec (--codec zfp:...): snapshots come back close, not equal
  /// (`inexact` of them); checksums are not compared with other modes', and
  /// rtm's image is measured against an exact mode's instead.
  bool lossy = false;
  unsigned inexact = 0;
  std::optional<double> image_rel_l2_error;  ///< rtm, lossy: ||image - exact image|| / ||exact image||
  std::vector<float> image;                  ///< rtm: kept until the error is computed (not reported)
  bool reference_only = false;      ///< sync run as the reference although not in --modes
  std::string error;                ///< non-empty: the run failed
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object();
  /// Under MPI: how many ranks ran it, and (ranks > 1) each rank's own
  /// figures in rank order; the fields above are then the aggregate
  /// (aggregate_ranks). In a per-rank entry, `rank` says whose.
  unsigned ranks = 1;
  unsigned rank = 0;
  std::vector<RunResult> per_rank;
};

/// One run's figures over its ranks (docs/benchmarking.md, "Under MPI"):
/// times (wall, kernel, hash, copy, blocked, finish, read phase) the max over
/// ranks, since every rank started together and the run lasts until the
/// last one is done; bytes, snapshots, mismatches and tier traffic the sum;
/// a tier's busy time the max, so that its observed bandwidth is the
/// ranks' bytes over the time the tier was busy for any of them; capacities
/// and caps the sum (each rank has its own); verified only when every rank
/// verified; errors prefixed with their rank; checksums a hash of the
/// ranks' checksums in rank order (equal across modes when every rank's
/// is); integer mode counters summed. One rank: that rank's run unchanged.
RunResult aggregate_ranks(std::vector<RunResult> per_rank);

/// A run back from to_json (the measured fields; per-rank entries and the
/// model's fields are not read): how rank 0 receives the other ranks' runs.
RunResult from_json(const nlohmann::json& j);

/// min, mean and max over the ranks of one figure of a run.
struct Spread {
  double min = 0, mean = 0, max = 0;
  unsigned slowest = 0;   ///< rank with the max
};
Spread rank_spread(const RunResult& r, const std::function<double(const RunResult&)>& figure);

/// 16 lowercase hex digits.
std::string hex64(std::uint64_t v);

/// Fills io_s_model from the tiers, and expected/actual speedup against the
/// group's `sync` run (same workload and io_ratio). Without a successful sync
/// run the speedups stay 0. The physical bound comes from the hierarchy the
/// group's mlbs-style run reports (its memory tier's capacity, each file
/// tier's capacity and bandwidth cap, or its observed bandwidth where it has
/// no cap) with sync's kernel time or the run's own where less (the group's
/// least without a sync run) and the group's least compute edges;
/// `persistent`: the last tier owes a copy of every record.
void apply_model(std::vector<RunResult>& group, bool persistent = false);

nlohmann::json to_json(const RunResult& r);
/// One line per run; a `rep` column when some run has repeat > 0.
void print_table(std::FILE* out, const std::vector<RunResult>& results);
/// Runs with ranks > 1: per run the spread of wall, kernel and blocked time
/// over the ranks (min / mean / max, the slowest rank). Nothing otherwise.
void print_rank_spread(std::FILE* out, const std::vector<RunResult>& results);

/// The project's targets for one (workload, io_ratio) group with an mlbs run
/// (docs/benchmarking.md, "Targets"): how mlbs fared against the model and
/// against every other mode of the group.
struct TargetCheck {
  std::string workload;
  unsigned io_ratio = 0;
  /// Compute (sync's kernel time + mlbs's copy time) covers the least I/O
  /// time: the I/O can hide entirely, so blocking must be all but none.
  bool io_covered = false;
  double blocking_frac = 0;       ///< (write_block_s + read_block_s) / wall_s of mlbs
  double physical_ratio = 0;      ///< mlbs wall_s / physical_bound_s (0: no bound)
  /// physical_ratio of each of the group's mlbs runs (its repeats): the
  /// smallest and largest, the noise the median run is read against.
  double physical_lo = 0, physical_hi = 0;
  double bound_ratio = 0;         ///< mlbs wall_s / max(kernel_s + copy_s, io_s_model): the old, forgiving bound
  std::string best_other;         ///< fastest other mode (sync included)
  double margin = 0;              ///< best_other wall_s / mlbs wall_s (> 1: mlbs is faster)
  bool blocking_ok() const { return !io_covered || blocking_frac <= 0.02; }
  bool bound_ok() const { return physical_ratio > 0 && physical_ratio <= 1.05; }
  bool faster_ok() const { return margin > 1.0; }
  bool met() const { return blocking_ok() && bound_ok() && faster_ok(); }
};

/// The lower median of `v` (0 when empty): with --repeat N, the run figures
/// are the medians over the N runs, robust to the VM's noise.
double median(std::vector<double> v);

/// One run per (workload, mode, io_ratio), in first-seen order: the
/// successful run with the median wall_s among its repeats (the first run
/// when none succeeded). With one repeat, `results` itself.
std::vector<RunResult> median_runs(const std::vector<RunResult>& results);

/// One TargetCheck per (workload, io_ratio) group whose mlbs run succeeded
/// (pass median_runs() of repeated runs, and every run as `repeats` for the
/// per-repeat range of wall over the bound; without it the range is the
/// median run's own ratio).
std::vector<TargetCheck> evaluate_targets(const std::vector<RunResult>& results,
                                          const std::vector<RunResult>& repeats = {});
void print_targets(std::FILE* out, const std::vector<TargetCheck>& checks);

// --- the data path (issue 4): mlbs's helpers against a plain O_DIRECT writer/reader ---

/// Bytes per second an mlbs run drained through its persistent (last) tier:
/// that tier's bytes_in over the run's wall_s (start-up and the final flush
/// included). 0 when undefined.
double drain_bytes_per_s(const RunResult& mlbs);
/// Bytes per second an mlbs run read back from its last tier: that tier's
/// bytes_out over the wall time of the read-back phase (read_phase_s).
double prefetch_bytes_per_s(const RunResult& mlbs);
/// A baseline's own transfer rates: the bytes its tier took in / gave out
/// over the application's time in its writes / reads (write_block_s,
/// read_block_s: the transfers themselves, nothing else).
double direct_write_bytes_per_s(const RunResult& odirect);
double direct_read_bytes_per_s(const RunResult& odirect);

/// One data-path figure of a (workload, io_ratio) group (docs/benchmarking.md,
/// "The data path"):
///   drain          writeonly, --compute none: drain_bytes_per_s(mlbs) over
///                  direct_write_bytes_per_s(odirect); target >= 0.90
///   prefetch       micro or rtm, --compute none: prefetch_bytes_per_s(mlbs)
///                  over direct_read_bytes_per_s(odirect); target >= 0.90
///   kernel impact  any workload with compute: kernel_s(mlbs) / kernel_s(sync)
///                  - 1 (the helpers' cost to the kernels); target <= 0.03
/// Each side is the median over the group's repeats.
struct DataPathFigure {
  enum class Kind { drain, prefetch, kernel_impact };
  Kind kind = Kind::drain;
  std::string workload;
  unsigned io_ratio = 0;
  std::string baseline;    ///< "odirect" (drain, prefetch) or "sync" (kernel impact)
  double mlbs = 0;         ///< median bytes/s (drain, prefetch) or kernel_s (kernel impact)
  double base = 0;         ///< the same for the baseline
  unsigned runs = 0;       ///< repeats behind the smaller of the two medians
  /// The figure per repeat (mlbs and baseline of the same repeat, which ran
  /// next to each other): its smallest and largest value, the noise the
  /// median has to be read against. Equal to value() with one repeat.
  double lo = 0, hi = 0;
  /// drain, prefetch: mlbs / base (share of the baseline's rate);
  /// kernel impact: mlbs / base - 1 (slowdown). 0 when base is 0.
  double value() const;
  /// The figure of one (mlbs, base) pair: mlbs / base, or mlbs / base - 1.
  static double figure(Kind kind, double mlbs, double base);
  bool met() const;        ///< value() >= 0.90, or <= 0.03 for kernel impact
  std::string name() const;
};

/// Every data-path figure the runs allow, grouped as they ran.
std::vector<DataPathFigure> evaluate_data_path(const std::vector<RunResult>& results);
void print_data_path(std::FILE* out, const std::vector<DataPathFigure>& figures);

/// Problems with a results document (empty = valid): the schema of every
/// object, verified == true, no errors, byte counts consistent, sync present
/// per (workload, io_ratio) with actual_speedup 1, image_checksum and
/// result_checksum identical across modes, and every expected workload x mode
/// present (empty lists: no expectation). Under MPI (ranks > 1): the same
/// rank count in every result, a per_rank entry per rank that verified, the
/// aggregates consistent with them (wall_s the max, bytes the sums), and
/// every rank's checksums identical across modes.
std::vector<std::string> check_results(const nlohmann::json& doc,
                                       const std::vector<std::string>& expect_workloads = {},
                                       const std::vector<std::string>& expect_modes = {});

}  // namespace mlbs_bench
