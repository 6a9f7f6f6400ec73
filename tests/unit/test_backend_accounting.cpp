// Tests of what Backend's public layer keeps for every tier (tiers/backend.hpp:
// Usage), the quota wrapper (tiers/wrappers/quota.hpp) and the memory tier's
// backend (tiers/memory/memory_backend.hpp) — all in memory, no files.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mlbs/errors.hpp"
#include "tiers/memory/memory_backend.hpp"
#include "tiers/registry.hpp"
#include "tiers/wrappers/faults.hpp"
#include "tiers/wrappers/quota.hpp"

namespace {

using mlbs::Tier;
using mlbs::tiers::Backend;
using mlbs::tiers::MemoryBackend;
using mlbs::tiers::QuotaBackend;

constexpr std::uint64_t kPage = 4096;
const std::string kSpace = "space", kStore = "store";

std::unique_ptr<Backend> memory(std::uint64_t capacity = 64 * kPage) {
  return mlbs::tiers::make_backend(0, Tier::memory(capacity));
}

std::vector<std::byte> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<unsigned char>(i * 13 + seed));
  return v;
}

void put(Backend& b, std::uint64_t id, const std::vector<std::byte>& bytes) {
  auto w = b.create({kSpace, id, 1, kStore}, bytes.size());
  const std::size_t half = bytes.size() / 2;
  w->write(0, bytes.data(), half);
  w->write(half, bytes.data() + half, bytes.size() - half);
  w->commit(false);
}

std::vector<std::byte> get(Backend& b, std::uint64_t id, std::size_t size) {
  std::vector<std::byte> out(size);
  b.open({kSpace, id, 1, kStore}, size)->read(0, out.data(), size);
  return out;
}

/// A node budget of `free` bytes, counting what the wrapper asks of it.
struct FakeNode final : mlbs::core::SharedQuota {
  std::uint64_t free, share;
  int acquires = 0, releases = 0;
  FakeNode(std::uint64_t f, std::uint64_t s) : free(f), share(s) {}
  std::uint64_t limit() const override { return share; }
  std::uint64_t node_free() const override { return free; }
  void publish_demand(std::uint64_t) override {}
  bool acquire(std::uint64_t bytes) override {
    ++acquires;
    if (bytes > free) return false;
    free -= bytes;
    return true;
  }
  void release(std::uint64_t bytes) override {
    ++releases;
    free += bytes;
  }
  std::uint64_t version() const override { return 0; }
  int processes() const override { return 2; }
  void watch(std::function<void()>) override {}
};

// "memory" is a registered kind: make_backend builds tier 0 like any other tier.
TEST(MemoryBackend, IsRegisteredByName) {
  auto b = memory();
  EXPECT_NE(dynamic_cast<MemoryBackend*>(b.get()), nullptr);
  EXPECT_EQ(b->label(), "tier 0 (memory)");
}

// An object written in pieces and committed counts its bytes and one op in; read whole, the same out.
TEST(BackendAccounting, CommittedObjectsCountBytesAndOps) {
  auto b = memory();
  const auto bytes = pattern(3 * kPage + 100);
  put(*b, 7, bytes);
  EXPECT_EQ(get(*b, 7, bytes.size()), bytes);
  const auto u = b->usage();
  EXPECT_EQ(u.bytes_in, bytes.size());
  EXPECT_EQ(u.ops_in, 1u);
  EXPECT_EQ(u.bytes_out, bytes.size());
  EXPECT_EQ(u.ops_out, 1u);
  EXPECT_EQ(u.errors, 0u);
  EXPECT_GT(u.busy_ns, 0u);
}

// A write that fails counts one error and no op, however often the writer is used after; the object is not kept.
TEST(BackendAccounting, FailedWriteIsOneErrorAndNoOp) {
  Backend* inner_raw = nullptr;
  auto inner = memory();
  inner_raw = inner.get();
  mlbs::tiers::FaultyBackend b(std::move(inner), mlbs::tiers::parse_fault_plan("write:EIO*1", "faults"));
  const auto bytes = pattern(kPage);
  {
    auto w = b.create({kSpace, 1, 1, kStore}, bytes.size());
    EXPECT_THROW(w->write(0, bytes.data(), bytes.size()), mlbs::IoError);
  }
  const auto u = b.usage();
  EXPECT_EQ(u.errors, 1u);
  EXPECT_EQ(u.ops_in, 0u);
  EXPECT_TRUE(b.list(kSpace).empty());
  EXPECT_EQ(inner_raw->used(), 0u) << "the uncommitted object's slot was not given back";
  put(b, 2, bytes);  // the fault fired once: the tier works again
  EXPECT_EQ(b.usage().ops_in, 1u);
  EXPECT_EQ(b.usage().errors, 1u);
}

// Opening an object that is not there is a typed error and counts one error; the tier is not left busy.
TEST(BackendAccounting, FailedOpenCountsAnError) {
  auto b = memory();
  EXPECT_THROW(b->open({kSpace, 9, 1, kStore}, kPage), mlbs::TierError);
  EXPECT_EQ(b->usage().errors, 1u);
  const auto busy = b->usage().busy_ns;
  EXPECT_EQ(b->usage().busy_ns, busy) << "busy time still growing: the failed open left the tier active";
}

// Busy time is the union of the intervals with an object open: two writers open together count once.
TEST(BackendAccounting, BusyTimeIsTheUnionOfOverlappingObjects) {
  auto b = memory();
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  {
    auto w1 = b->create({kSpace, 1, 1, kStore}, kPage);
    auto w2 = b->create({kSpace, 2, 1, kStore}, kPage);
    // Both open for at least 5 ms (a busy loop: nothing to wait for).
    const auto both_open = Clock::now();
    while (Clock::now() - both_open < std::chrono::milliseconds(5)) {
    }
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  const auto busy = b->usage().busy_ns;
  EXPECT_GE(busy, 5'000'000u);
  EXPECT_LE(busy, static_cast<std::uint64_t>(elapsed)) << "overlapping objects counted twice";
}

// Room taken and given back is used_bytes; the peak stays; adopted bytes (recovery) count without asking.
TEST(BackendAccounting, ReserveReleaseAdoptAndPeak) {
  QuotaBackend b(memory(), 0);  // no limit of its own: every reservation is granted
  EXPECT_TRUE(b.reserve(100));
  EXPECT_TRUE(b.reserve(50));
  b.release(100);
  b.adopt(10);
  const auto u = b.usage();
  EXPECT_EQ(u.used_bytes, 60u);
  EXPECT_EQ(u.peak_used_bytes, 150u);
}

// Traffic the engine moves through slots directly is counted as the streams' is.
TEST(BackendAccounting, CountTransferAddsBytesAndAnOp) {
  auto b = memory();
  b->count_transfer(true, 1000);
  b->count_transfer(false, 400);
  const auto u = b->usage();
  EXPECT_EQ(u.bytes_in, 1000u);
  EXPECT_EQ(u.ops_in, 1u);
  EXPECT_EQ(u.bytes_out, 400u);
  EXPECT_EQ(u.ops_out, 1u);
}

// The quota's room is its limit less what is held; a reservation beyond it is refused and takes nothing.
TEST(QuotaBackend, RefusesBeyondTheLimit) {
  QuotaBackend q(memory(), 1000);
  EXPECT_EQ(q.room(), 1000u);
  EXPECT_TRUE(q.reserve(600));
  EXPECT_EQ(q.room(), 400u);
  EXPECT_FALSE(q.reserve(401));
  EXPECT_EQ(q.used(), 600u);
  EXPECT_TRUE(q.reserve(400));
  EXPECT_EQ(q.room(), 0u);
  q.release(1000);
  EXPECT_EQ(q.room(), 1000u);
}

// Bytes adopted beyond the limit (a recovered store over a smaller quota) leave no room, without wrapping around.
TEST(QuotaBackend, AdoptedBeyondTheLimitLeavesNoRoom) {
  QuotaBackend q(memory(), 1000);
  q.adopt(1500);
  EXPECT_EQ(q.room(), 0u);
  EXPECT_FALSE(q.reserve(1));
}

// A node budget bounds room by this rank's share and by what the node has free; reserve takes from it, release gives back.
TEST(QuotaBackend, NodeBudgetIsAskedOnEveryReservation) {
  auto node = std::make_unique<FakeNode>(/*free=*/500, /*share=*/300);
  FakeNode* n = node.get();
  QuotaBackend q(memory(), 0, std::move(node));
  EXPECT_EQ(q.room(), 300u);
  EXPECT_TRUE(q.reserve(200));
  EXPECT_EQ(n->free, 300u);
  n->free = 50;  // other ranks took most of the node's budget
  EXPECT_EQ(q.room(), 50u);
  EXPECT_FALSE(q.reserve(60));
  EXPECT_EQ(q.used(), 200u);
  q.release(200);
  EXPECT_EQ(n->free, 250u);
  EXPECT_EQ(n->releases, 1);
  EXPECT_NE(q.take_node_budget(), nullptr);
  EXPECT_EQ(q.node_budget(), nullptr);
}

// Slot calls keep used() in step with the pool, and the room is the pool's free bytes.
TEST(MemoryBackend, SlotCallsKeepUsedInStep) {
  MemoryBackend m(0, Tier::memory(4 * kPage));
  auto a = m.allocate_slot(kPage + 1);  // rounds up to two pages
  ASSERT_TRUE(a);
  EXPECT_EQ(m.used(), 2 * kPage);
  EXPECT_EQ(m.room(), 2 * kPage);
  EXPECT_FALSE(m.allocate_slot(3 * kPage));
  m.release_slot(std::move(*a));
  EXPECT_EQ(m.used(), 0u);
  EXPECT_EQ(m.usage().peak_used_bytes, 2 * kPage);
}

// Objects live in slots of the same budget: one that does not fit is a DeviceFullError; removal frees its room.
TEST(MemoryBackend, ObjectsShareTheSlotBudget) {
  MemoryBackend m(0, Tier::memory(2 * kPage));
  const auto bytes = pattern(2 * kPage, 5);
  put(m, 1, bytes);
  EXPECT_EQ(m.used(), 2 * kPage);
  EXPECT_THROW(m.create({kSpace, 2, 1, kStore}, kPage), mlbs::DeviceFullError);
  EXPECT_EQ(get(m, 1, bytes.size()), bytes);
  ASSERT_EQ(m.list(kSpace).size(), 1u);
  m.remove({kSpace, 1, 1, kStore});
  EXPECT_EQ(m.used(), 0u);
  EXPECT_TRUE(m.list(kSpace).empty());
  EXPECT_THROW(get(m, 1, bytes.size()), mlbs::TierError);
}

}  // namespace
