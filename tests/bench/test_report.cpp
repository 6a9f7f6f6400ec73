// mlbs-bench's results: the model applied per group and the JSON checker.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report.hpp"

using mlbs_bench::RunResult;
using mlbs_bench::TierReport;

namespace {

RunResult result(const std::string& workload, const std::string& mode, double wall, double kernel,
                 double busy_s) {
  RunResult r;
  r.workload = workload;
  r.mode = mode;
  r.io_ratio = 2;
  r.grid_bytes = 1024;
  r.steps = 8;
  r.snapshots = 4;
  r.bytes_written = 4096;
  r.bytes_read = workload == "writeonly" ? 0 : 4096;
  r.wall_s = wall;
  r.kernel_s = kernel;
  r.lead_compute_s = 0.01 * kernel;                              // before the first write
  r.tail_compute_s = workload == "writeonly" ? 0 : 0.01 * kernel;  // after the last read
  r.verified = true;
  TierReport mem{"mem", "memory", "", 4096, 0, 4096, 4096, 0, 0, 0.0};
  TierReport slow{"slow", "directory", "/x", 0, 0, 4096, r.bytes_read, 0, 0, busy_s};
  r.tiers = {mem, slow};
  if (workload == "rtm") r.image_checksum = 0xabcdef;
  return r;
}

nlohmann::json doc(std::vector<RunResult> rs) {
  mlbs_bench::apply_model(rs);
  nlohmann::json d = nlohmann::json::array();
  for (const RunResult& r : rs) d.push_back(mlbs_bench::to_json(r));
  return d;
}

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(what) != std::string::npos; });
}

}  // namespace

// apply_model fills io_s_model from the tiers and both speedups from the sync run.
TEST(BenchReport, ApplyModelUsesTheSyncRunAsReference) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 6.5, 4.0, 5.0)};
  g[1].copy_s = 0.5;
  mlbs_bench::apply_model(g);
  EXPECT_DOUBLE_EQ(g[0].actual_speedup, 1.0);
  EXPECT_DOUBLE_EQ(g[0].io_s_model, 6.0);
  EXPECT_DOUBLE_EQ(g[0].expected_speedup, 10.0 / 6.0);
  EXPECT_DOUBLE_EQ(g[1].io_s_model, 5.0);
  EXPECT_DOUBLE_EQ(g[1].expected_speedup, 10.0 / 5.0);
  EXPECT_DOUBLE_EQ(g[1].actual_speedup, 10.0 / 6.5);
}

// Without a sync run there is no reference: speedups stay 0.
TEST(BenchReport, NoReferenceNoSpeedup) {
  std::vector<RunResult> g = {result("micro", "mlbs", 6.5, 4.0, 5.0)};
  mlbs_bench::apply_model(g);
  EXPECT_EQ(g[0].expected_speedup, 0.0);
  EXPECT_EQ(g[0].actual_speedup, 0.0);
  EXPECT_DOUBLE_EQ(g[0].io_s_model, 5.0);
}

// A complete, consistent document passes, with its expectations.
TEST(BenchReport, ValidDocumentPasses) {
  const auto d = doc({result("rtm", "sync", 10, 4, 6), result("rtm", "mlbs", 6, 4, 5)});
  const auto problems = mlbs_bench::check_results(d, {"rtm"}, {"sync", "mlbs"});
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(d[0]["tier_stats"][1]["bandwidth_bytes_per_s"].get<double>(), 8192.0 / 6.0);
  EXPECT_EQ(d[0]["image_checksum"], "0000000000abcdef");
}

// A missing required field is reported by name.
TEST(BenchReport, MissingFieldIsReported) {
  auto d = doc({result("micro", "sync", 10, 4, 6)});
  d[0].erase("kernel_s");
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "missing 'kernel_s'"));
}

// A run whose snapshots did not verify fails the check.
TEST(BenchReport, UnverifiedRunFails) {
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6), result("micro", "mlbs", 6, 4, 5)};
  rs[1].verified = false;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "did not verify"));
}

// rtm image checksums must agree across modes.
TEST(BenchReport, DifferingImageChecksumsFail) {
  auto rs = std::vector<RunResult>{result("rtm", "sync", 10, 4, 6), result("rtm", "pagecache", 8, 4, 5)};
  rs[1].image_checksum = 0x1234;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "image_checksum differs"));
}

// rtm without an image checksum fails.
TEST(BenchReport, RtmNeedsImageChecksum) {
  auto rs = std::vector<RunResult>{result("rtm", "sync", 10, 4, 6)};
  rs[0].image_checksum.reset();
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "image_checksum"));
}

// Every (workload, io_ratio) needs its sync reference.
TEST(BenchReport, MissingSyncReferenceFails) {
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc({result("micro", "mlbs", 6, 4, 5)})), "no sync reference"));
}

// Byte counts must match snapshots x grid_bytes, and writeonly reads nothing.
TEST(BenchReport, InconsistentByteCountsFail) {
  auto rs = std::vector<RunResult>{result("writeonly", "sync", 10, 4, 6)};
  rs[0].bytes_read = 4096;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "bytes_read"));
  rs[0].bytes_read = 0;
  rs[0].bytes_written = 100;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "bytes_written"));
}

// An expected workload x mode with no result is reported.
TEST(BenchReport, ExpectedModeMissingIsReported) {
  const auto d = doc({result("micro", "sync", 10, 4, 6)});
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d, {"micro"}, {"sync", "pagecache"}), "micro/pagecache"));
}

// Not an array, or a failed run, is rejected.
TEST(BenchReport, ErrorsAndWrongShapesFail) {
  EXPECT_FALSE(mlbs_bench::check_results(nlohmann::json::object()).empty());
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6)};
  rs[0].error = "boom";
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "run failed"));
}

// The bound's edges must be measured parts of kernel_s: a micro run with kernels and no tail, or edges beyond kernel_s, fail.
TEST(BenchReport, ComputeEdgesMustBeMeasuredWithinKernelTime) {
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6)};
  EXPECT_FALSE(mentions(mlbs_bench::check_results(doc(rs)), "tail_compute_s"));
  rs[0].tail_compute_s = 0;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "tail_compute_s is 0"));
  rs[0].tail_compute_s = 3, rs[0].lead_compute_s = 2;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "within kernel_s"));
}

// A tier that held more than its quota (capacity_bytes) fails the check.
TEST(BenchReport, QuotaExceededFails) {
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6), result("micro", "sync-fast", 8, 4, 5)};
  rs[1].tiers[1].capacity_bytes = 2048;
  rs[1].tiers[1].peak_used_bytes = 4096;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "exceeds capacity_bytes"));
  rs[1].tiers[1].peak_used_bytes = 2048;
  EXPECT_FALSE(mentions(mlbs_bench::check_results(doc(rs)), "exceeds capacity_bytes"));
}

// Targets: blocking share, wall over the physical bound (sync's kernel + mlbs's copy here: DRAM holds it all), and the margin over the fastest other mode.
TEST(BenchTargets, ComputeBoundGroupIsEvaluated) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 4.2, 4.1, 3.0),
                              result("micro", "pagecache", 5.0, 4.0, 3.0)};
  g[1].copy_s = 0.1;
  g[1].write_block_s = 0.05;
  g[1].read_block_s = 0.03;
  mlbs_bench::apply_model(g);
  const auto checks = mlbs_bench::evaluate_targets(g);
  ASSERT_EQ(checks.size(), 1u);
  const auto& c = checks[0];
  EXPECT_TRUE(c.io_covered);
  EXPECT_DOUBLE_EQ(g[1].least_io_s, 0.0) << "4096 bytes written fit the 4096-byte DRAM budget";
  EXPECT_DOUBLE_EQ(g[1].physical_bound_s, 4.0 + 0.1) << "sync's kernel time, not mlbs's own";
  EXPECT_DOUBLE_EQ(c.blocking_frac, 0.08 / 4.2);
  EXPECT_DOUBLE_EQ(c.physical_ratio, 4.2 / 4.1);
  EXPECT_EQ(c.best_other, "pagecache");
  EXPECT_DOUBLE_EQ(c.margin, 5.0 / 4.2);
  EXPECT_TRUE(c.met());
}

// The bound's kernel time is sync's, not another mode's faster draw, or the run's own where that was faster;
// without sync, the group's least.
TEST(BenchTargets, TheBoundsKernelTimeIsSyncsOrTheRunsOwn) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 4.2, 4.1, 3.0),
                              result("micro", "pagecache", 5.0, 3.5, 3.0)};
  mlbs_bench::apply_model(g);
  EXPECT_DOUBLE_EQ(g[1].physical_bound_s, 4.0) << "sync's 4.0 s, not pagecache's 3.5 s nor mlbs's own 4.1 s";
  EXPECT_DOUBLE_EQ(g[2].physical_bound_s, 3.5) << "pagecache's own, faster than sync's";
  g[1].kernel_s = 3.8;
  mlbs_bench::apply_model(g);
  EXPECT_DOUBLE_EQ(g[1].physical_bound_s, 3.8) << "mlbs's own kernels beat sync's: a bound it cannot beat";
  g.erase(g.begin());
  mlbs_bench::apply_model(g);
  EXPECT_DOUBLE_EQ(g[0].physical_bound_s, 3.5) << "no sync run: the least of the group";
}

// The bound counts the copy alone: what the library spent hashing inside it (copy_hash_s) is its own work.
TEST(BenchTargets, TheBoundCountsTheCopyWithoutTheLibrarysHash) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 4.2, 4.1, 3.0)};
  g[1].copy_s = 0.1;
  g[1].copy_hash_s = 0.04;
  mlbs_bench::apply_model(g);
  EXPECT_DOUBLE_EQ(g[1].physical_bound_s, 4.0 + 0.06);
  EXPECT_EQ(mlbs_bench::to_json(g[1]).at("copy_hash_s").get<double>(), 0.04);
  g[1].copy_hash_s = 0.2;  // more than the copy took: a broken counter
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(g)), "copy_hash_s must be within copy_s"));
}

// With the repeats given, a target line carries the smallest and largest wall over the bound among the
// group's mlbs runs beside the median run's own; without them, the median run's alone.
TEST(BenchTargets, PerRepeatRangeOfWallOverTheBound) {
  std::vector<RunResult> g;
  for (unsigned rep = 0; rep < 3; ++rep) {
    g.push_back(result("micro", "sync", 10.0, 4.0, 6.0));
    g.push_back(result("micro", "mlbs", 4.1 + 0.1 * rep, 4.0, 3.0));
    g[g.size() - 2].repeat = g.back().repeat = rep;
  }
  mlbs_bench::apply_model(g);
  const auto medians = mlbs_bench::median_runs(g);
  const auto c = mlbs_bench::evaluate_targets(medians, g).at(0);
  EXPECT_DOUBLE_EQ(c.physical_ratio, 4.2 / 4.0);
  EXPECT_DOUBLE_EQ(c.physical_lo, 4.1 / 4.0);
  EXPECT_DOUBLE_EQ(c.physical_hi, 4.3 / 4.0);
  const auto alone = mlbs_bench::evaluate_targets(medians).at(0);
  EXPECT_DOUBLE_EQ(alone.physical_lo, alone.physical_ratio);
  EXPECT_DOUBLE_EQ(alone.physical_hi, alone.physical_ratio);
}

// Each target fails on its own threshold: 2% blocking where compute covers the I/O, 5% over the physical bound, not faster.
TEST(BenchTargets, ThresholdsFail) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 5.0, 4.0, 1.0),
                              result("micro", "writebehind", 4.9, 4.0, 1.0)};
  g[1].write_block_s = 0.3;
  mlbs_bench::apply_model(g);
  const auto c = mlbs_bench::evaluate_targets(g).at(0);
  EXPECT_FALSE(c.blocking_ok());
  EXPECT_FALSE(c.bound_ok());
  EXPECT_FALSE(c.faster_ok());
  EXPECT_FALSE(c.met());
  EXPECT_EQ(c.best_other, "writebehind");
}

// Spilled bytes over a capped slow tier make the group I/O-bound: blocking is then no target, the bound is; groups of other workloads do not mix.
TEST(BenchTargets, IoBoundAndGroupsApart) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 1.0, 6.0), result("micro", "mlbs", 5.0, 1.0, 4.5),
                              result("rtm", "sync", 3.0, 1.0, 6.0)};
  for (RunResult& r : g) {
    r.bytes_written = r.bytes_read = 4096 + 4000;  // 4000 bytes more than DRAM holds
    r.tiers[1].bandwidth_cap_bytes_per_s = 2000;   // 8000 bytes down and up: 4 s
  }
  g[1].write_block_s = 1.0;
  mlbs_bench::apply_model(g);
  const auto checks = mlbs_bench::evaluate_targets(g);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].io_covered);
  EXPECT_TRUE(checks[0].blocking_ok());
  EXPECT_NEAR(g[1].least_io_s, 4.0, 1e-9);
  EXPECT_NEAR(g[1].io_span_s, 0.01 + 4.0 + 0.01, 1e-9);
  EXPECT_NEAR(checks[0].physical_ratio, 5.0 / 4.02, 1e-9);
  EXPECT_EQ(checks[0].best_other, "sync");
  EXPECT_DOUBLE_EQ(checks[0].margin, 2.0);
}

// The bound's I/O side starts after the group's least compute before the first write and ends before its
// least compute after the last read; a group whose compute covers least_io_s alone but not that span is I/O-bound.
namespace {
/// sync and mlbs whose kernels (4.5 s, 4.6 s) nearly cover the 4 s that 4000 bytes beyond the 4096-byte DRAM
/// budget take down and up a 2000 bytes/s tier.
std::vector<RunResult> nearly_covered_group() {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.5, 6.0), result("micro", "mlbs", 5.0, 4.6, 4.5)};
  for (RunResult& r : g) {
    r.bytes_written = r.bytes_read = 4096 + 4000;
    r.tiers[1].bandwidth_cap_bytes_per_s = 2000;  // least_io_s 4 s
  }
  return g;
}
}  // namespace

TEST(BenchTargets, ComputeBeforeTheFirstWriteAndAfterTheLastReadLengthensTheIoSpan) {
  std::vector<RunResult> g = nearly_covered_group();
  g[0].lead_compute_s = 0.3, g[0].tail_compute_s = 0.4;
  g[1].lead_compute_s = 0.2, g[1].tail_compute_s = 0.5;
  mlbs_bench::apply_model(g);
  EXPECT_NEAR(g[1].least_io_s, 4.0, 1e-9);
  EXPECT_NEAR(g[1].io_span_s, 0.2 + 4.0 + 0.4, 1e-9) << "each edge the least the group measured";
  EXPECT_NEAR(g[1].physical_bound_s, 4.6, 1e-9);
  EXPECT_FALSE(mlbs_bench::evaluate_targets(g).at(0).io_covered) << "kernel 4.5 s covers 4 s of I/O, not its 4.6 s span";
  mlbs_bench::apply_model(g, /*persistent=*/true);
  EXPECT_NEAR(g[1].io_span_s, g[1].least_io_s + 0.2, 1e-9) << "a persistent copy may go down after the last read";
}

// Between the last write and the first read every snapshot is live, and the one file tier below a
// 4096-byte DRAM budget must hold 4000 bytes: it idles through the group's least compute there.
TEST(BenchTargets, TheTurnBetweenTheLastWriteAndTheFirstReadLengthensTheIoSpan) {
  std::vector<RunResult> g = nearly_covered_group();
  g[0].turn_compute_s = 0.3, g[1].turn_compute_s = 0.25;
  mlbs_bench::apply_model(g);
  EXPECT_NEAR(g[1].io_span_s, 0.045 + 4.0 + 0.25 + 0.045, 1e-9) << "the least turn the group measured";
  g[0].turn_compute_s = 0;  // a workload that reads before its last write has no turn
  mlbs_bench::apply_model(g);
  EXPECT_NEAR(g[1].io_span_s, 0.045 + 4.0 + 0.045, 1e-9);
}

// --- repeats and the data path --------------------------------------------------------------

namespace {

/// A run of `workload` in `mode` with --compute none (the data-path figures' setting).
RunResult io_run(const std::string& workload, const std::string& mode, unsigned repeat, double wall) {
  RunResult r = result(workload, mode, wall, 0.01, 0.5);
  r.repeat = repeat;
  r.config = {{"compute", "none"}};
  return r;
}

}  // namespace

// The median of an odd count is the middle value; of an even count, the lower middle; of none, 0.
TEST(BenchRepeat, MedianIsTheLowerMiddle) {
  EXPECT_DOUBLE_EQ(mlbs_bench::median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(mlbs_bench::median({4.0, 1.0, 3.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(mlbs_bench::median({7.0}), 7.0);
  EXPECT_EQ(mlbs_bench::median({}), 0.0);
}

// median_runs keeps one run per (workload, mode, ratio): the successful one with the median wall time.
TEST(BenchRepeat, MedianRunsPickTheMedianWallPerMode) {
  std::vector<RunResult> rs = {result("micro", "sync", 10, 4, 6), result("micro", "mlbs", 9, 4, 5),
                               result("micro", "sync", 12, 4, 6), result("micro", "mlbs", 5, 4, 5),
                               result("micro", "sync", 11, 4, 6), result("micro", "mlbs", 7, 4, 5)};
  for (std::size_t i = 0; i < rs.size(); ++i) rs[i].repeat = unsigned(i / 2);
  rs[3].error = "boom";   // a failed run does not count: mlbs's median of {9, 7} is 7
  const auto m = mlbs_bench::median_runs(rs);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].mode, "sync");
  EXPECT_DOUBLE_EQ(m[0].wall_s, 11.0);
  EXPECT_EQ(m[1].mode, "mlbs");
  EXPECT_DOUBLE_EQ(m[1].wall_s, 7.0);
  EXPECT_EQ(m[1].repeat, 2u);
}

// Drain: the last tier's bytes in per wall second; the O_DIRECT writer: bytes in per second spent writing.
TEST(BenchDataPath, RatesUseTheRightBytesAndSeconds) {
  RunResult m = io_run("writeonly", "mlbs", 0, 2.0);
  m.tiers.back().bytes_in = 1000;
  m.tiers.back().bytes_out = 600;
  m.read_phase_s = 0.5;
  EXPECT_DOUBLE_EQ(mlbs_bench::drain_bytes_per_s(m), 500.0);
  EXPECT_DOUBLE_EQ(mlbs_bench::prefetch_bytes_per_s(m), 1200.0);
  RunResult d = io_run("writeonly", "odirect", 0, 3.0);
  d.tiers = {d.tiers.back()};
  d.tiers[0].bytes_in = 1000;
  d.tiers[0].bytes_out = 900;
  d.write_block_s = 0.8;
  d.read_block_s = 0.3;
  EXPECT_DOUBLE_EQ(mlbs_bench::direct_write_bytes_per_s(d), 1250.0);
  EXPECT_DOUBLE_EQ(mlbs_bench::direct_read_bytes_per_s(d), 3000.0);
  d.read_block_s = 0;   // undefined: 0, not infinity
  EXPECT_EQ(mlbs_bench::direct_read_bytes_per_s(d), 0.0);
}

// writeonly without compute gives the drain figure, a median over repeats, against odirect.
TEST(BenchDataPath, DrainFigureIsTheRatioOfMedians) {
  std::vector<RunResult> rs;
  const double mlbs_walls[] = {4.0, 5.0, 8.0}, od_write_s[] = {4.0, 6.0, 4.5};
  for (unsigned k = 0; k < 3; ++k) {
    rs.push_back(io_run("writeonly", "sync", k, 9.0));
    rs.push_back(io_run("writeonly", "mlbs", k, mlbs_walls[k]));   // 4096 bytes in: median 4096 / 5
    RunResult d = io_run("writeonly", "odirect", k, 7.0);
    d.tiers = {d.tiers.back()};
    d.write_block_s = od_write_s[k];                               // median 4096 / 4.5
    rs.push_back(d);
  }
  const auto f = mlbs_bench::evaluate_data_path(rs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, mlbs_bench::DataPathFigure::Kind::drain);
  EXPECT_EQ(f[0].name(), "drain");
  EXPECT_EQ(f[0].baseline, "odirect");
  EXPECT_EQ(f[0].runs, 3u);
  EXPECT_DOUBLE_EQ(f[0].mlbs, 4096.0 / 5.0);
  EXPECT_DOUBLE_EQ(f[0].base, 4096.0 / 4.5);
  EXPECT_DOUBLE_EQ(f[0].value(), 4.5 / 5.0);
  EXPECT_TRUE(f[0].met());   // exactly 90%
}

// micro without compute gives the prefetch figure; below 90% of the reader it is not met.
TEST(BenchDataPath, PrefetchFigureAndItsThreshold) {
  RunResult m = io_run("micro", "mlbs", 0, 3.0);
  m.read_phase_s = 2.0;   // 4096 bytes out of the slow tier
  RunResult d = io_run("micro", "odirect", 0, 3.0);
  d.tiers = {d.tiers.back()};
  d.read_block_s = 1.0;
  const auto f = mlbs_bench::evaluate_data_path({io_run("micro", "sync", 0, 5.0), m, d});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, mlbs_bench::DataPathFigure::Kind::prefetch);
  EXPECT_DOUBLE_EQ(f[0].value(), 0.5);
  EXPECT_DOUBLE_EQ(f[0].lo, 0.5);   // one repeat: the range is the figure
  EXPECT_DOUBLE_EQ(f[0].hi, 0.5);
  EXPECT_FALSE(f[0].met());
}

// With compute, the figure is mlbs's kernel_s over sync's minus 1 (medians); 3% is the limit.
TEST(BenchDataPath, KernelImpactAgainstSync) {
  std::vector<RunResult> rs;
  const double sync_k[] = {10.0, 12.0, 11.0}, mlbs_k[] = {11.2, 11.0, 30.0};
  for (unsigned k = 0; k < 3; ++k) {
    rs.push_back(result("rtm", "sync", 20, sync_k[k], 6));
    rs.push_back(result("rtm", "mlbs", 12, mlbs_k[k], 6));
    rs.back().repeat = rs[rs.size() - 2].repeat = k;
  }
  auto f = mlbs_bench::evaluate_data_path(rs);
  ASSERT_EQ(f.size(), 1u);   // no odirect run, and compute on: kernel impact only
  EXPECT_EQ(f[0].kind, mlbs_bench::DataPathFigure::Kind::kernel_impact);
  EXPECT_EQ(f[0].baseline, "sync");
  EXPECT_DOUBLE_EQ(f[0].mlbs, 11.2);   // the outlier 30 s is not the median
  EXPECT_DOUBLE_EQ(f[0].base, 11.0);
  EXPECT_NEAR(f[0].value(), 11.2 / 11.0 - 1, 1e-12);
  EXPECT_TRUE(f[0].met());
  // The per-repeat range pairs each mlbs run with the sync run of its repeat.
  EXPECT_NEAR(f[0].lo, 11.0 / 12.0 - 1, 1e-12);
  EXPECT_NEAR(f[0].hi, 30.0 / 11.0 - 1, 1e-12);
  rs[1].kernel_s = rs[3].kernel_s = 11.4;   // +3.6%
  f = mlbs_bench::evaluate_data_path(rs);
  EXPECT_FALSE(f.at(0).met());
}

// No figure without both sides, without compute for kernel impact, or from failed runs.
TEST(BenchDataPath, FiguresNeedBothModes) {
  EXPECT_TRUE(mlbs_bench::evaluate_data_path({io_run("writeonly", "sync", 0, 5), io_run("writeonly", "mlbs", 0, 4)})
                  .empty());
  RunResult od = io_run("writeonly", "odirect", 0, 4);
  od.error = "boom";
  EXPECT_TRUE(mlbs_bench::evaluate_data_path({io_run("writeonly", "mlbs", 0, 4), od}).empty());
  // readafterwrite has no separate read phase: no prefetch figure.
  EXPECT_TRUE(mlbs_bench::evaluate_data_path(
                  {io_run("readafterwrite", "mlbs", 0, 4), io_run("readafterwrite", "odirect", 0, 4)})
                  .empty());
}

// Repeated runs validate (each repeat with its own sync reference) and keep their index in the JSON.
TEST(BenchRepeat, RepeatedRunsValidate) {
  std::vector<RunResult> g0 = {result("micro", "sync", 10, 4, 6), result("micro", "odirect", 9, 4, 5)};
  g0[1].tiers = {g0[1].tiers[1]};   // odirect has its directory only
  g0[1].tiers[0].io_backend = "O_DIRECT write/read";
  std::vector<RunResult> g1 = g0;
  for (RunResult& r : g1) r.repeat = 1;
  nlohmann::json d = doc(g0);
  for (const auto& j : doc(g1)) d.push_back(j);
  const auto problems = mlbs_bench::check_results(d, {"micro"}, {"sync", "odirect"});
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(d[3]["repeat"], 1u);
  d[3]["repeat"] = -1;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "'repeat'"));
}

// odirect must say it moved its bytes with O_DIRECT (or why it could not).
TEST(BenchReport, OdirectNeedsItsIoBackend) {
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6), result("micro", "odirect", 9, 4, 5)};
  rs[1].tiers = {rs[1].tiers[1]};
  rs[1].tiers[0].io_backend = "pread";
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "does not mention O_DIRECT"));
  rs[1].tiers[0].io_backend = "write+fdatasync, read cold (O_DIRECT refused: Invalid argument)";
  EXPECT_FALSE(mentions(mlbs_bench::check_results(doc(rs)), "O_DIRECT"));
}

// --- under MPI: per-rank figures and their aggregates --------------------------------------

namespace {

/// The same run on `n` ranks: rank k's wall time 10 + k, its tier busy 5 + k.
std::vector<RunResult> on_ranks(const std::string& workload, const std::string& mode, unsigned n) {
  std::vector<RunResult> v;
  for (unsigned k = 0; k < n; ++k) {
    RunResult r = result(workload, mode, 10.0 + k, 4.0 - k, 5.0 + k);
    r.rank = k;
    r.result_checksum = 0x100 + k;
    if (r.image_checksum) r.image_checksum = 0x200 + k;
    r.extra = {{"prefetches", 3u}, {"helper_threads", 2u}, {"o_direct", true}, {"schedule", "lifo"}};
    v.push_back(r);
  }
  return v;
}

}  // namespace

// Times are the max over ranks, bytes and counts the sums, a tier's busy time the max.
TEST(BenchRanks, AggregateTakesMaxTimesAndSummedBytes) {
  const RunResult a = mlbs_bench::aggregate_ranks(on_ranks("micro", "mlbs", 3));
  EXPECT_EQ(a.ranks, 3u);
  ASSERT_EQ(a.per_rank.size(), 3u);
  EXPECT_DOUBLE_EQ(a.wall_s, 12.0);
  EXPECT_DOUBLE_EQ(a.kernel_s, 4.0);
  EXPECT_EQ(a.snapshots, 12u);
  EXPECT_EQ(a.bytes_written, 3u * 4096);
  EXPECT_EQ(a.tiers[1].bytes_in, 3u * 4096);
  EXPECT_DOUBLE_EQ(a.tiers[1].busy_s, 7.0);
  EXPECT_EQ(a.tiers[0].capacity_bytes, 3u * 4096);   // every rank has its own DRAM budget
  EXPECT_TRUE(a.verified);
  EXPECT_EQ(a.extra["prefetches"], 9u);
  EXPECT_EQ(a.extra["helper_threads"], 2u);            // a setting, not a count
  EXPECT_EQ(a.extra["o_direct"], true);
  EXPECT_EQ(a.extra["schedule"], "lifo");
  const auto spread = mlbs_bench::rank_spread(a, [](const RunResult& r) { return r.wall_s; });
  EXPECT_DOUBLE_EQ(spread.min, 10.0);
  EXPECT_DOUBLE_EQ(spread.mean, 11.0);
  EXPECT_EQ(spread.slowest, 2u);
}

// One rank: the run itself, no per-rank entries.
TEST(BenchRanks, OneRankIsTheRunItself) {
  const RunResult a = mlbs_bench::aggregate_ranks(on_ranks("micro", "mlbs", 1));
  EXPECT_EQ(a.ranks, 1u);
  EXPECT_TRUE(a.per_rank.empty());
  EXPECT_EQ(a.result_checksum, 0x100u);
  EXPECT_FALSE(mlbs_bench::to_json(a).contains("per_rank"));
}

// A failure or a wrong read on any rank fails the aggregate, naming the rank.
TEST(BenchRanks, AnyRankFailureFailsTheRun) {
  auto v = on_ranks("micro", "mlbs", 2);
  v[1].error = "disk full";
  v[1].verified = false;
  const RunResult a = mlbs_bench::aggregate_ranks(v);
  EXPECT_FALSE(a.verified);
  EXPECT_EQ(a.error, "rank 1: disk full");
  v[1].error.clear();
  v[1].mismatches = 2;
  EXPECT_EQ(mlbs_bench::aggregate_ranks(v).mismatches, 2u);
}

// A rank's run survives the JSON round trip rank 0 receives it by.
TEST(BenchRanks, FromJsonInvertsToJson) {
  RunResult r = on_ranks("rtm", "pagecache", 2)[1];
  r.copy_s = 0.25;
  r.read_phase_s = 1.5;
  r.error = "x";
  const RunResult back = mlbs_bench::from_json(mlbs_bench::to_json(r));
  EXPECT_EQ(mlbs_bench::to_json(back), mlbs_bench::to_json(r));
  EXPECT_EQ(back.rank, 0u);   // to_json of a single run does not carry its rank; the gatherer's order does
}

// The JSON of an N-rank run: ranks, per_rank entries, the spread, and a valid document.
TEST(BenchRanks, JsonCarriesPerRankFiguresAndValidates) {
  std::vector<RunResult> g = {mlbs_bench::aggregate_ranks(on_ranks("rtm", "sync", 2)),
                              mlbs_bench::aggregate_ranks(on_ranks("rtm", "mlbs", 2))};
  const auto d = doc(g);
  EXPECT_EQ(d[1]["ranks"], 2u);
  ASSERT_EQ(d[1]["per_rank"].size(), 2u);
  EXPECT_EQ(d[1]["per_rank"][1]["rank"], 1u);
  EXPECT_EQ(d[1]["per_rank"][1]["wall_s"], 11.0);
  EXPECT_FALSE(d[1]["per_rank"][1].contains("config"));
  EXPECT_EQ(d[1]["rank_spread"]["wall_s"]["max"], 11.0);
  const auto problems = mlbs_bench::check_results(d, {"rtm"}, {"sync", "mlbs"});
  EXPECT_TRUE(problems.empty()) << problems.front();
}

// The checker holds the aggregates to the ranks' figures and compares each rank across modes.
TEST(BenchRanks, CheckerRejectsInconsistentRanks) {
  std::vector<RunResult> g = {mlbs_bench::aggregate_ranks(on_ranks("rtm", "sync", 2)),
                              mlbs_bench::aggregate_ranks(on_ranks("rtm", "mlbs", 2))};
  auto d = doc(g);
  d[1]["wall_s"] = 10.5;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "not the max over the ranks"));
  d = doc(g);
  d[1]["per_rank"].erase(1);
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "per_rank has 1 entries for 2 ranks"));
  d = doc(g);
  d[1]["per_rank"][0]["image_checksum"] = "00000000000000ff";
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "rtm ratio 2 rank 0: image_checksum differs"));
  d = doc(g);
  d[1]["per_rank"][1]["verified"] = false;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "did not verify on this rank"));
  d = doc(g);
  d.push_back(mlbs_bench::to_json(result("rtm", "pagecache", 9, 4, 5)));   // a 1-rank result beside 2-rank ones
  EXPECT_TRUE(mentions(mlbs_bench::check_results(d), "different rank counts"));
}
