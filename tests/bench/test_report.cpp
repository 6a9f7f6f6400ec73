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

// A tier that held more than its quota (capacity_bytes) fails the check.
TEST(BenchReport, QuotaExceededFails) {
  auto rs = std::vector<RunResult>{result("micro", "sync", 10, 4, 6), result("micro", "sync-fast", 8, 4, 5)};
  rs[1].tiers[1].capacity_bytes = 2048;
  rs[1].tiers[1].peak_used_bytes = 4096;
  EXPECT_TRUE(mentions(mlbs_bench::check_results(doc(rs)), "exceeds capacity_bytes"));
  rs[1].tiers[1].peak_used_bytes = 2048;
  EXPECT_FALSE(mentions(mlbs_bench::check_results(doc(rs)), "exceeds capacity_bytes"));
}

// Targets: blocking share, wall over the overlap bound, and the margin over the fastest other mode.
TEST(BenchTargets, ComputeBoundGroupIsEvaluated) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 4.2, 4.0, 3.0),
                              result("micro", "pagecache", 5.0, 4.0, 3.0)};
  g[1].copy_s = 0.1;
  g[1].write_block_s = 0.1;
  g[1].read_block_s = 0.05;
  mlbs_bench::apply_model(g);
  const auto checks = mlbs_bench::evaluate_targets(g);
  ASSERT_EQ(checks.size(), 1u);
  const auto& c = checks[0];
  EXPECT_TRUE(c.compute_bound);
  EXPECT_DOUBLE_EQ(c.blocking_frac, 0.15 / 4.2);
  EXPECT_DOUBLE_EQ(c.bound_ratio, 4.2 / 4.1);
  EXPECT_EQ(c.best_other, "pagecache");
  EXPECT_DOUBLE_EQ(c.margin, 5.0 / 4.2);
  EXPECT_TRUE(c.blocking_ok() && c.bound_ok() && c.faster_ok());
}

// Each target fails on its own threshold: 5% blocking, 10% over the bound, not faster.
TEST(BenchTargets, ThresholdsFail) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 4.0, 6.0), result("micro", "mlbs", 5.0, 4.0, 1.0),
                              result("micro", "writebehind", 4.9, 4.0, 1.0)};
  g[1].write_block_s = 0.3;
  mlbs_bench::apply_model(g);
  const auto c = mlbs_bench::evaluate_targets(g).at(0);
  EXPECT_FALSE(c.blocking_ok());
  EXPECT_FALSE(c.bound_ok());
  EXPECT_FALSE(c.faster_ok());
  EXPECT_EQ(c.best_other, "writebehind");
}

// I/O time above compute marks the group I/O-bound; groups of other workloads do not mix.
TEST(BenchTargets, IoBoundAndGroupsApart) {
  std::vector<RunResult> g = {result("micro", "sync", 10.0, 1.0, 6.0), result("micro", "mlbs", 5.0, 1.0, 4.5),
                              result("rtm", "sync", 3.0, 1.0, 6.0)};
  mlbs_bench::apply_model(g);
  const auto checks = mlbs_bench::evaluate_targets(g);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].compute_bound);
  EXPECT_EQ(checks[0].best_other, "sync");
  EXPECT_DOUBLE_EQ(checks[0].margin, 2.0);
}
