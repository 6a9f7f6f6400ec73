// The bandwidth cap wrapper paces a tier to its configured rate.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mlbs/config.hpp"
#include "support/temp_dir.hpp"
#include "tiers/registry.hpp"
#include "tiers/wrappers/throttle.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// A directory tier in `dir` capped at 32 MiB/s, probed, with space "s".
std::unique_ptr<mlbs::tiers::Backend> capped_tier(const mlbs::test::TempDir& dir) {
  mlbs::Tier desc = mlbs::Tier::directory(dir / "t");
  desc.bandwidth_bytes_per_s = 32ull << 20;
  auto tier = mlbs::tiers::make_backend(1, desc);
  tier->probe();
  tier->create_space("s");
  return tier;
}

/// Writes `data` as object 1 of the capped tier's space "s" and opens it for reading.
std::unique_ptr<mlbs::tiers::ObjectReader> stored(mlbs::tiers::Backend& tier, const std::vector<std::byte>& data) {
  const std::string space = "s", store = "s";
  auto w = tier.create({space, 1, 1, store}, data.size());
  w->write(0, data.data(), data.size());
  w->commit(false);
  return tier.open({space, 1, 1, store}, data.size());
}

// Passing N bytes at R bytes/s takes N/R seconds, not less (and not far more).
TEST(Throttle, PacerHoldsTheRate) {
  mlbs::tiers::Pacer pacer(64ull << 20);  // 64 MiB/s
  const auto start = Clock::now();
  for (int i = 0; i < 16; ++i) pacer.pass(1 << 20);  // 16 MiB -> 0.25 s
  const double s = seconds_since(start);
  EXPECT_GE(s, 0.25 * 0.98);
  EXPECT_LT(s, 0.25 * 1.5);
}

// An idle pacer does not bank bandwidth: a burst after a pause is still paced.
TEST(Throttle, IdleTimeIsNotBanked) {
  mlbs::tiers::Pacer pacer(32ull << 20);
  pacer.pass(1 << 20);
  // Wait out the first transfer's cost, then burst: 8 MiB at 32 MiB/s = 0.25 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  for (int i = 0; i < 8; ++i) pacer.pass(1 << 20);
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);
}

// A transfer's real time overlaps its capped time: it completes at the later
// of the two, not after their sum (a cap below the disk's speed yields the cap).
TEST(Throttle, RealTransferTimeOverlapsTheCap) {
  mlbs::tiers::Pacer pacer(32ull << 20);
  const auto start = Clock::now();
  const auto flow = pacer.start(8 << 20);                      // 0.25 s at the cap
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the "device" working
  pacer.wait(flow);
  const double s = seconds_since(start);
  EXPECT_GE(s, 0.25 * 0.98);
  EXPECT_LT(s, 0.37);  // the sum would be 0.40 s
}

// Flows share the cap as a device's streams do: a small transfer started
// beside a large one is done at its share's pace, not after the large one,
// and the large one finishes when all the bytes have moved at the cap.
TEST(Throttle, FlowsShareTheCap) {
  mlbs::tiers::Pacer pacer(64ull << 20);  // 64 MiB/s
  const auto start = Clock::now();
  const auto large = pacer.start(16 << 20);  // alone: 0.25 s
  const auto small = pacer.start(2 << 20);   // half the cap: 62.5 ms; behind the large one: 0.28 s
  pacer.wait(small);
  EXPECT_GE(seconds_since(start), 0.0625 * 0.98);
  EXPECT_LT(seconds_since(start), 0.2) << "the small flow waited for the large one";
  pacer.wait(large);
  EXPECT_GE(seconds_since(start), 0.28125 * 0.98);  // 18 MiB at the cap
}

// A stream's next bytes join its flow: it keeps one share of the device.
TEST(Throttle, AStreamKeepsOneShare) {
  mlbs::tiers::Pacer pacer(64ull << 20);
  const auto start = Clock::now();
  auto stream = pacer.start(1 << 20);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(pacer.start(1 << 20, stream), stream);
  const auto other = pacer.start(8 << 20);
  pacer.wait(other);  // 8 MiB each at half the cap: 0.25 s
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);
  pacer.wait(stream);
  EXPECT_LT(seconds_since(start), 0.375);
}

// A flow can be waited for until only its last bytes are left: what a held write queued behind the
// bytes before it waits for, while the device goes on with its own.
TEST(Throttle, WaitCanLeaveAFlowsLastBytesMoving) {
  mlbs::tiers::Pacer pacer(32ull << 20);
  const auto start = Clock::now();
  const auto flow = pacer.start(4 << 20);              // 125 ms
  EXPECT_EQ(pacer.start(4 << 20, flow), flow);         // queued behind: 250 ms in all
  pacer.wait(flow, 4 << 20);
  EXPECT_GE(seconds_since(start), 0.125 * 0.98);
  EXPECT_LT(seconds_since(start), 0.25 * 0.9) << "waited for the bytes it was to leave moving";
  pacer.wait(flow);
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);
}

// A held write returns before the capped device would be done (the caller
// works meanwhile); the next held write, or the commit, waits out the cap.
TEST(Throttle, HeldWriteIsPacedAtCommit) {
  mlbs::test::TempDir dir;
  auto tier = capped_tier(dir);
  const std::string space = "s", store = "s";
  std::vector<std::byte> data(8 << 20, std::byte{7});  // 0.25 s at the cap
  auto w = tier->create({space, 1, 1, store}, 2 * data.size());
  const auto start = Clock::now();
  w->write_held(0, data.data(), data.size());
  EXPECT_LT(seconds_since(start), 0.25 * 0.9) << "the held write waited for the cap";
  w->write_held(data.size(), data.data(), data.size());
  const double second = seconds_since(start);
  EXPECT_GE(second, 0.25 * 0.98) << "the second held write did not wait for the first";
  EXPECT_LT(second, 0.5 * 0.9) << "the second held write waited for itself";
  w->commit(false);
  EXPECT_GE(seconds_since(start), 0.5 * 0.98);
}

// A held read returns before the capped device would be done (the caller writes the bytes read before
// meanwhile); wait_held() waits out the cap and delivers the bytes, and so does a plain read().
TEST(Throttle, HeldReadIsPacedAtWaitHeld) {
  mlbs::test::TempDir dir;
  auto tier = capped_tier(dir);
  std::vector<std::byte> data(8 << 20), back(8 << 20);  // 0.25 s at the cap
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 13);
  auto r = stored(*tier, data);
  const auto start = Clock::now();
  r->read_held(0, back.data(), back.size() / 2);
  EXPECT_LT(seconds_since(start), 0.125 * 0.9) << "the held read waited for the cap";
  r->wait_held();
  EXPECT_GE(seconds_since(start), 0.125 * 0.98);
  r->read(back.size() / 2, back.data() + back.size() / 2, back.size() / 2);
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);
  EXPECT_EQ(data, back);
}

// A held read queues behind the one before and returns once that one is in, as the capped device would
// deliver it; wait_held() returns once both are: the device never waits for the reader between two pieces.
TEST(Throttle, HeldReadsQueueBehindTheLast) {
  mlbs::test::TempDir dir;
  auto tier = capped_tier(dir);
  std::vector<std::byte> data(8 << 20), back(8 << 20);  // 0.25 s at the cap
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7);
  auto r = stored(*tier, data);
  const std::size_t half = back.size() / 2;
  const auto start = Clock::now();
  r->read_held(0, back.data(), half);
  r->read_held(half, back.data() + half, half);
  const double first = seconds_since(start);
  EXPECT_GE(first, 0.125 * 0.98) << "the second held read returned before the first was in";
  EXPECT_LT(first, 0.25 * 0.9) << "the second held read waited for itself";
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + std::ptrdiff_t(half), data.begin()));
  r->wait_held();
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);
  EXPECT_EQ(data, back);
}

// A tier with bandwidth set is wrapped: reads and writes through it are paced,
// and the bytes pass unchanged.
TEST(Throttle, RegistryWrapsCappedTiers) {
  mlbs::test::TempDir dir;
  mlbs::Tier desc = mlbs::Tier::directory(dir / "t");
  desc.bandwidth_bytes_per_s = 32ull << 20;
  auto backend = mlbs::tiers::make_backend(1, desc);
  EXPECT_NE(dynamic_cast<mlbs::tiers::ThrottledBackend*>(backend.get()), nullptr);
  backend->probe();
  backend->create_space("s");
  const std::string space = "s", store = "u";
  std::vector<std::byte> data(4 << 20), back(4 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7);
  const auto start = Clock::now();
  auto w = backend->create({space, 1, 1, store}, data.size());
  w->write(0, data.data(), data.size());
  w->commit(false);
  auto r = backend->open({space, 1, 1, store}, data.size());
  r->read(0, back.data(), back.size());
  EXPECT_GE(seconds_since(start), 0.25 * 0.98);  // 8 MiB at 32 MiB/s
  EXPECT_EQ(data, back);
}

}  // namespace
