// Every record crosses DRAM, a quota'd fast tier and an unlimited slow tier,
// under each schedule, and comes back byte-exact.
#include <gtest/gtest.h>

#include <numeric>

#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::test::TempDir;

constexpr std::size_t kElems = 4096;  // 16 KiB records

mlbs::Config three_tiers(const TempDir& dir, mlbs::Schedule schedule,
                         mlbs::Durability durability = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kElems * sizeof(float)),
               mlbs::Tier::directory(dir / "fast", 4 * kElems * sizeof(float)),
               mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = std::move(schedule);
  cfg.durability = durability;
  return cfg;
}

void fill(mlbs::Store<float>& u, std::uint64_t id) {
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = float(id * 100000 + i);
}

void expect_content(const mlbs::Store<float>& u, std::uint64_t id) {
  ASSERT_EQ(u.size(), kElems) << "id " << id;
  for (std::size_t i = 0; i < u.size(); ++i)
    ASSERT_EQ(u[i], float(id * 100000 + i)) << "id " << id << " element " << i;
}

struct Case {
  const char* name;
  mlbs::Schedule schedule;
  std::vector<std::uint64_t> read_order;
};

class ThreeTiers : public ::testing::TestWithParam<int> {};

std::vector<std::uint64_t> iota_ids(std::size_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// LIFO: records written 0..N-1 come back N-1..0, every byte intact.
TEST(ThreeTiers, LifoRoundTripCrossesAllTiers) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  const std::uint64_t n = 24;
  {
    mlbs::Store<float> u(rt, "wavefield", kElems);
    for (std::uint64_t id = 0; id < n; ++id) {
      fill(u, id);
      u.write(id);
    }
    for (std::uint64_t id = n; id-- > 0;) {
      u.read(id);
      expect_content(u, id);
    }
    EXPECT_TRUE(u.ids().empty());
  }
  auto s = rt.stats();
  EXPECT_GT(s.tiers[1].bytes_in, 0u);
  EXPECT_GT(s.tiers[2].bytes_in, 0u);
  EXPECT_LE(s.tiers[1].peak_used_bytes, 4 * kElems * sizeof(float));
  EXPECT_EQ(s.reads, n);
  EXPECT_EQ(mlbs::test::stored_records(dir.path()), 0u) << "scratch records left on disk";
}

// FIFO: records come back in write order.
TEST(ThreeTiers, FifoRoundTripCrossesAllTiers) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::fifo()));
  mlbs::Store<float> u(rt, "fifo", kElems);
  const std::uint64_t n = 24;
  for (std::uint64_t id = 0; id < n; ++id) {
    fill(u, id);
    u.write(id);
  }
  for (std::uint64_t id = 0; id < n; ++id) {
    u.read(id);
    expect_content(u, id);
  }
  auto s = rt.stats();
  EXPECT_GT(s.tiers[2].bytes_in, 0u);
  EXPECT_GT(s.prefetches, 0u);
}

// An explicit order (a revolve-like pattern) with repeated reads.
TEST(ThreeTiers, ExplicitOrderWithRepeatedReads) {
  TempDir dir;
  std::vector<std::uint64_t> order = {5, 9, 2, 5, 0, 11, 3, 1, 4, 6, 7, 8, 10};
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::explicit_order(order)));
  mlbs::Store<float> u(rt, "revolve", kElems);
  for (std::uint64_t id = 0; id < 12; ++id) {
    fill(u, id);
    u.write(id);
  }
  for (auto id : order) {
    u.read(id);
    expect_content(u, id);
  }
  EXPECT_TRUE(u.ids().empty()) << "every scheduled use consumed: all released";
}

// Unknown order: LRU placement with on-demand reads.
TEST(ThreeTiers, UnknownScheduleReadsOnDemand) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::unknown()));
  mlbs::Store<float> u(rt, "lru", kElems);
  for (std::uint64_t id = 0; id < 16; ++id) {
    fill(u, id);
    u.write(id);
  }
  for (std::uint64_t id : {3, 15, 0, 7, 12, 1}) {
    u.read(id);
    expect_content(u, id);
  }
  EXPECT_EQ(rt.stats().prefetches, 0u);
  EXPECT_EQ(u.ids().size(), 10u);
}

}  // namespace
