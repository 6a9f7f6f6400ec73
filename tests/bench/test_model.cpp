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
