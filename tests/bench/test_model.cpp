// mlbs-bench's performance model (tools/mlbs-bench/model.hpp) and pacer.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "model.hpp"
#include "pacer.hpp"

namespace m = mlbs_bench::model;

// Observed bandwidth is bytes moved (both ways) over busy time.
TEST(BenchModel, ObservedBandwidthIsBytesOverBusyTime) {
  EXPECT_DOUBLE_EQ(m::observed_bandwidth({300, 100, 2.0}), 200.0);
  EXPECT_DOUBLE_EQ(m::observed_bandwidth({1 << 20, 0, 0.5}), double(2 << 20));
}

// A tier that was never busy has no observed bandwidth and costs no time.
TEST(BenchModel, IdleTierHasNoBandwidthAndNoTime) {
  EXPECT_EQ(m::observed_bandwidth({0, 0, 0.0}), 0.0);
  EXPECT_EQ(m::observed_bandwidth({100, 0, 0.0}), 0.0);   // DRAM: bytes but no busy time
  EXPECT_EQ(m::tier_io_s({100, 0, 0.0}), 0.0);
  EXPECT_EQ(m::tier_io_s({0, 0, 3.0}), 0.0);
}

// A tier's I/O time at its observed bandwidth is its busy time.
TEST(BenchModel, TierTimeAtObservedBandwidthIsBusyTime) {
  EXPECT_DOUBLE_EQ(m::tier_io_s({512, 512, 1.25}), 1.25);
}

// io_s_model is the bottleneck tier's time, not the sum over tiers.
TEST(BenchModel, IoModelIsTheBottleneckTier) {
  const std::vector<m::TierTraffic> tiers = {{1000, 1000, 0.0}, {800, 200, 0.5}, {400, 400, 2.0}};
  EXPECT_DOUBLE_EQ(m::io_s_model(tiers), 2.0);
  EXPECT_EQ(m::io_s_model({}), 0.0);
}

// The overlap bound is max(kernel + copy, io).
TEST(BenchModel, OverlapBoundIsMaxOfComputeAndIo) {
  EXPECT_DOUBLE_EQ(m::overlap_bound_s(3.0, 0.5, 2.0), 3.5);
  EXPECT_DOUBLE_EQ(m::overlap_bound_s(1.0, 0.5, 2.0), 2.0);
}

// expected = reference / max(kernel + copy, io); the I/O-bound and compute-bound cases.
TEST(BenchModel, ExpectedSpeedupAgainstTheReference) {
  // sync took kernel + io = 4 + 6 = 10 s; with overlap the run is io-bound at 6 s.
  EXPECT_DOUBLE_EQ(m::expected_speedup(10.0, 4.0, 0.0, 6.0), 10.0 / 6.0);
  // compute-bound: copy counts with the kernel.
  EXPECT_DOUBLE_EQ(m::expected_speedup(10.0, 4.0, 1.0, 2.0), 2.0);
}

// actual = reference / wall; the reference against itself is 1.
TEST(BenchModel, ActualSpeedup) {
  EXPECT_DOUBLE_EQ(m::actual_speedup(10.0, 4.0), 2.5);
  EXPECT_DOUBLE_EQ(m::actual_speedup(7.5, 7.5), 1.0);
}

// Zero denominators give 0, never inf or NaN.
TEST(BenchModel, UndefinedRatiosAreZero) {
  EXPECT_EQ(m::expected_speedup(10.0, 0.0, 0.0, 0.0), 0.0);
  EXPECT_EQ(m::actual_speedup(10.0, 0.0), 0.0);
  EXPECT_EQ(m::model_efficiency(1.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(m::model_efficiency(1.5, 2.0), 0.75);
}

// The pacer's virtual clock advances by bytes/rate and never banks idle time.
TEST(BenchPacer, VirtualClockAdvancesByBytesOverRate) {
  using namespace std::chrono;
  mlbs_bench::Pacer p(1000);   // 1000 bytes/s
  const auto t0 = mlbs_bench::Pacer::Clock::now();
  EXPECT_EQ(p.reserve(500, t0), t0 + milliseconds(500));
  EXPECT_EQ(p.reserve(1000, t0), t0 + milliseconds(1500));             // queued behind the first
  EXPECT_EQ(p.reserve(1000, t0 + seconds(10)), t0 + seconds(11));       // idle time is not banked
  EXPECT_DOUBLE_EQ(p.cost_s(250), 0.25);
}

// An uncapped pacer completes at once and costs nothing.
TEST(BenchPacer, UncappedCompletesImmediately) {
  mlbs_bench::Pacer p;
  const auto t0 = mlbs_bench::Pacer::Clock::now();
  EXPECT_FALSE(p.capped());
  EXPECT_EQ(p.reserve(1 << 30, t0), t0);
  EXPECT_EQ(p.cost_s(1 << 30), 0.0);
}

// A synchronous transfer (reserve, then wait) lasts at least its share of the cap.
TEST(BenchPacer, SynchronousTransferWaitsForTheCappedDevice) {
  mlbs_bench::Pacer p(1'000'000);   // 1 MB/s: 50 kB = 50 ms
  const auto t0 = std::chrono::steady_clock::now();
  mlbs_bench::Pacer::wait_until(p.reserve(50'000));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
}

// --- the physical bound -------------------------------------------------------------------

namespace {
using mlbs_bench::model::Hierarchy;
using mlbs_bench::model::least_io_s;
constexpr std::uint64_t kMiB = 1ull << 20;
}  // namespace

// What DRAM holds never moves: no spill, no I/O time.
TEST(PhysicalBound, NothingSpillsNothingMoves) {
  const Hierarchy h{256 * kMiB, {{96 * kMiB, 1024.0 * kMiB}, {0, 200.0 * kMiB}}, false};
  EXPECT_EQ(least_io_s(h, 256 * kMiB, 256 * kMiB), 0.0);
}

// The demo's micro point at ratio 8 (256 MiB written, 32 MiB DRAM, 96 MiB fast tier at 1 GiB/s, slow at 200 MiB/s): the fast tier takes all it holds, 128 MiB go through the slow tier both ways, 1.28 s.
TEST(PhysicalBound, CapacityForcesTheRestThroughTheSlowTier) {
  const Hierarchy h{32 * kMiB, {{96 * kMiB, 1024.0 * kMiB}, {0, 200.0 * kMiB}}, false};
  EXPECT_NEAR(least_io_s(h, 256 * kMiB, 256 * kMiB), 2.0 * 128 / 200, 1e-6);
}

// With room on both, the split balances the tiers: each moves its share at its own speed in the same time.
TEST(PhysicalBound, BestSplitBalancesTheTiers) {
  const Hierarchy h{0, {{0, 300.0}, {0, 100.0}}, false};
  // 400 bytes spill, round trip: 300 on the fast tier, 100 on the slow one, 2 s each.
  EXPECT_NEAR(least_io_s(h, 400, 400), 2.0, 1e-9);
}

// Write-only runs move the spill one way; persistent runs owe the last tier every byte written.
TEST(PhysicalBound, WriteOnlyAndPersistent) {
  const Hierarchy scratch{100, {{0, 100.0}}, false};
  EXPECT_NEAR(least_io_s(scratch, 300, 0), 2.0, 1e-9);
  const Hierarchy persistent{100, {{0, 100.0}}, true};
  EXPECT_NEAR(least_io_s(persistent, 300, 0), 3.0, 1e-9) << "all 300 bytes, not only the 200 spilled";
  const Hierarchy two{100, {{1000, 1000.0}, {0, 100.0}}, true};
  // The last tier takes 300 written whatever the split; the spill read back (200) is best read from the fast tier.
  EXPECT_NEAR(least_io_s(two, 300, 300), 3.0, 1e-9);
}

// The I/O spans at least least_io_s between the compute before the first write and after the last
// read; a persistent copy may still be going down during the latter; with nothing to move there is no span.
TEST(PhysicalBound, IoSpanAddsTheComputeNoIoCanOverlap) {
  using mlbs_bench::model::io_span_s;
  const Hierarchy scratch{100, {{0, 100.0}}, false}, persistent{100, {{0, 100.0}}, true};
  EXPECT_DOUBLE_EQ(io_span_s(scratch, 4.0, {0.5, 0.25}, 0.0), 4.75);
  EXPECT_DOUBLE_EQ(io_span_s(persistent, 4.0, {0.5, 0.25}, 0.0), 4.5);
  EXPECT_DOUBLE_EQ(io_span_s(scratch, 0.0, {0.5, 0.25}, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(mlbs_bench::model::physical_bound_s(3.0, 0.5, 4.75), 4.75);
  EXPECT_DOUBLE_EQ(mlbs_bench::model::physical_bound_s(5.0, 0.5, 4.75), 5.5);
}

// The demo's micro at ratio 8 (256 MiB written, 32 MiB DRAM, 96 MiB fast tier): the 128 MiB the
// slow tier must hold while every record is live go down before the turn and come up after it.
TEST(PhysicalBound, TheLastTierIdlesThroughTheTurnWhenTheTiersAboveAreFull) {
  using mlbs_bench::model::io_span_s;
  using mlbs_bench::model::peak_io_s;
  const Hierarchy demo{32 * kMiB, {{96 * kMiB, 1024.0 * kMiB}, {0, 200.0 * kMiB}}, false};
  const double peak = peak_io_s(demo, 256 * kMiB, 256 * kMiB);
  EXPECT_NEAR(peak, 2.0 * 128 / 200, 1e-9);
  const double least = least_io_s(demo, 256 * kMiB, 256 * kMiB);
  EXPECT_NEAR(least, peak, 1e-9) << "the split fills the fast tier: the same bytes";
  EXPECT_NEAR(io_span_s(demo, least, {0.1, 0.01, 0.04}, peak), 0.1 + 1.28 + 0.04 + 0.01, 1e-9);
  EXPECT_NEAR(io_span_s(demo, least, {0.1, 0.01, 0.0}, peak), 0.1 + 1.28 + 0.01, 1e-9) << "no turn, no idle";
  // Half the records never read: the planner may leave those on the slow tier.
  EXPECT_NEAR(peak_io_s(demo, 256 * kMiB, 128 * kMiB), 128.0 / 200, 1e-9);
  // Room for every record above the last tier, an unlimited tier above it, or persistent copies going
  // down through the turn: nothing forced to idle.
  EXPECT_EQ(peak_io_s(demo, 128 * kMiB, 128 * kMiB), 0.0);
  EXPECT_EQ(peak_io_s(Hierarchy{32 * kMiB, {{0, 1024.0 * kMiB}, {0, 200.0 * kMiB}}, false}, 256 * kMiB, 256 * kMiB), 0.0);
  EXPECT_EQ(peak_io_s(Hierarchy{32 * kMiB, demo.file_tiers, true}, 256 * kMiB, 256 * kMiB), 0.0);
  // A fast tier too slow to be filled: the split moves fewer bytes through it, and the turn's bound,
  // from the last tier alone, is then the larger only when the turn is long enough.
  const Hierarchy slow_fast{32 * kMiB, {{96 * kMiB, 100.0 * kMiB}, {0, 200.0 * kMiB}}, false};
  const double least2 = least_io_s(slow_fast, 256 * kMiB, 256 * kMiB), peak2 = peak_io_s(slow_fast, 256 * kMiB, 256 * kMiB);
  EXPECT_GT(least2, peak2);
  EXPECT_NEAR(io_span_s(slow_fast, least2, {0, 0, 0.01}, peak2), least2, 1e-9);
  EXPECT_NEAR(io_span_s(slow_fast, least2, {0, 0, 1.0}, peak2), peak2 + 1.0, 1e-9);
}

// Tiers that cannot hold the spill, or none with a known bandwidth: undefined, 0.
TEST(PhysicalBound, UndefinedIsZero) {
  EXPECT_EQ(least_io_s(Hierarchy{0, {{100, 10.0}}, false}, 1000, 1000), 0.0);
  EXPECT_EQ(least_io_s(Hierarchy{0, {{0, 0.0}}, false}, 1000, 1000), 0.0);
  EXPECT_EQ(least_io_s(Hierarchy{0, {}, false}, 1000, 1000), 0.0);
}
