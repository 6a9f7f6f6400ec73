// mlbs-bench — results: the model applied per group, the table, the JSON
// document and its checker (mlbs-bench --check-json).
#pragma once

#include <cstdint>
#include <cstdio>
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
  double write_block_s = 0;
  double read_block_s = 0;
  double finish_s = 0;              ///< draining at the end (inside wall_s)
  double io_s_model = 0;
  double expected_speedup = 0;
  double actual_speedup = 0;
  std::vector<TierReport> tiers;
  std::uint64_t result_checksum = 0;
  std::optional<std::uint64_t> image_checksum;
  bool verified = false;
  unsigned mismatches = 0;
  bool reference_only = false;      ///< sync run as the reference although not in --modes
  std::string error;                ///< non-empty: the run failed
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object();
};

/// 16 lowercase hex digits.
std::string hex64(std::uint64_t v);

/// Fills io_s_model from the tiers, and expected/actual speedup against the
/// group's `sync` run (same workload and io_ratio). Without a successful sync
/// run the speedups stay 0.
void apply_model(std::vector<RunResult>& group);

nlohmann::json to_json(const RunResult& r);
void print_table(std::FILE* out, const std::vector<RunResult>& results);

/// The project's targets for one (workload, io_ratio) group with an mlbs run
/// (docs/benchmarking.md, "Targets"): how mlbs fared against the model and
/// against every other mode of the group.
struct TargetCheck {
  std::string workload;
  unsigned io_ratio = 0;
  bool compute_bound = false;     ///< mlbs kernel_s + copy_s >= its io_s_model
  double blocking_frac = 0;       ///< (write_block_s + read_block_s) / wall_s of mlbs
  double bound_ratio = 0;         ///< mlbs wall_s / max(kernel_s + copy_s, io_s_model)
  std::string best_other;         ///< fastest other mode (sync included)
  double margin = 0;              ///< best_other wall_s / mlbs wall_s (> 1: mlbs is faster)
  bool blocking_ok() const { return blocking_frac <= 0.05; }
  bool bound_ok() const { return bound_ratio <= 1.10; }
  bool faster_ok() const { return margin > 1.0; }
};

/// One TargetCheck per (workload, io_ratio) group whose mlbs run succeeded.
std::vector<TargetCheck> evaluate_targets(const std::vector<RunResult>& results);
void print_targets(std::FILE* out, const std::vector<TargetCheck>& checks);

/// Problems with a results document (empty = valid): the schema of every
/// object, verified == true, no errors, byte counts consistent, sync present
/// per (workload, io_ratio) with actual_speedup 1, image_checksum and
/// result_checksum identical across modes, and every expected workload x mode
/// present (empty lists: no expectation).
std::vector<std::string> check_results(const nlohmann::json& doc,
                                       const std::vector<std::string>& expect_workloads = {},
                                       const std::vector<std::string>& expect_modes = {});

}  // namespace mlbs_bench
