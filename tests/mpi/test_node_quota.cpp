// Node-shared tier quotas: the ranks of a node divide a shared tier's
// capacity (one node budget) fairly, lend what they do not need, and never
// exceed it together. Every rank of these runs is on this one node.
#include <gtest/gtest.h>
#include <mlbs/mlbs.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "mpi/node_quota.hpp"
#include "mpi_support.hpp"

namespace {

using mlbs::mpi::NodeQuota;
using mlbs::test::all_ranks;
using mlbs::test::fill;
using mlbs::test::holds;
using mlbs::test::kElems;
using mlbs::test::kRecord;
using mlbs::test::SharedTempDir;
using mlbs::test::value;
using mlbs::test::world_rank;
using mlbs::test::world_size;

constexpr std::uint64_t kSlotsPerRank = 4;                  // the node budget: 4 records per rank

std::uint64_t node_budget() { return kSlotsPerRank * kRecord * static_cast<std::uint64_t>(world_size()); }

mlbs::Config shared_fast_tier(const SharedTempDir& dir) {
  mlbs::Config cfg;
  mlbs::Tier fast = mlbs::Tier::directory(dir / "bb", node_budget());
  fast.shared = true;
  cfg.tiers = {mlbs::Tier::memory(2 * kRecord), fast, mlbs::Tier::directory(dir / "pfs")};
  cfg.helper_core = -2;
  return cfg;
}

std::uint64_t sum_over_ranks(std::uint64_t v) {
  std::uint64_t total = 0;
  MPI_Allreduce(&v, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

void write_records(mlbs::Store<float>& u, std::uint64_t from, std::uint64_t count) {
  for (std::uint64_t id = from; id < from + count; ++id) {
    fill(u, id);
    u.write(id);
  }
}

/// Every rank flushes (its share settled with the node's latest demands), twice
/// around a barrier so that each has seen the others' final demands.
void settle(mlbs::Store<float>& u) {
  u.flush();
  MPI_Barrier(MPI_COMM_WORLD);
  u.flush();
  MPI_Barrier(MPI_COMM_WORLD);
  u.flush();
  MPI_Barrier(MPI_COMM_WORLD);
}

bool reads_back(mlbs::Store<float>& u, std::uint64_t from, std::uint64_t count) {
  bool ok = true;
  for (std::uint64_t id = from + count; id-- > from;) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  return ok;
}

TEST(FairShare, DemandsBelowTheLevelAreMetAndTheRestSplitWhatIsLeft) {
  const std::uint64_t d[] = {10, 100, 100, 0};
  EXPECT_EQ(NodeQuota::fair_share(d, 4, 0, 120), 10u);  // small demand met in full
  EXPECT_EQ(NodeQuota::fair_share(d, 4, 1, 120), 55u);  // (120 - 10 - 0) / 2
  EXPECT_EQ(NodeQuota::fair_share(d, 4, 3, 120), 0u);   // asks for nothing
  const std::uint64_t fits[] = {30, 40};
  EXPECT_EQ(NodeQuota::fair_share(fits, 2, 1, 100), 40u);  // everything fits
  const std::uint64_t equal[] = {500, 500, 500};
  EXPECT_EQ(NodeQuota::fair_share(equal, 3, 2, 90), 30u);  // no one below budget / n
}

/// The node's ranks as one communicator, as the runtime splits it.
struct NodeComm {
  MPI_Comm comm = MPI_COMM_NULL;
  NodeComm() { MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL, &comm); }
  ~NodeComm() { MPI_Comm_free(&comm); }
};

TEST(NodeQuota, RanksRacingForTheBudgetTakeExactlyAllOfItAndNoMore) {
  NodeComm node;
  constexpr std::uint64_t kUnit = 4096, kBudget = 1000 * kUnit;
  NodeQuota q(node.comm, 1, kBudget);
  q.publish_demand(~std::uint64_t{0} / 2);  // everyone wants it all
  MPI_Barrier(node.comm);
  std::uint64_t taken = 0;
  while (q.acquire(kUnit)) taken += kUnit;
  const std::uint64_t total = sum_over_ranks(taken);
  EXPECT_EQ(total, kBudget);
  EXPECT_EQ(taken, kBudget / static_cast<std::uint64_t>(world_size()) / kUnit * kUnit);
  EXPECT_EQ(q.node_free(), 0u);
  MPI_Barrier(node.comm);
  q.release(taken);
  MPI_Barrier(node.comm);
  EXPECT_EQ(q.node_free(), kBudget);
}

TEST(NodeQuota, AWatcherHearsAnotherRanksNewDemandWithoutPolling) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  NodeComm node;
  NodeQuota q(node.comm, 1, 1 << 20);
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  if (world_rank() == 0)
    q.watch([&] {
      std::lock_guard lock(mu);
      ++calls;
      cv.notify_all();
    });
  MPI_Barrier(node.comm);
  if (world_rank() == 1) q.publish_demand(4 << 20);
  if (world_rank() == 0) {
    std::unique_lock lock(mu);
    // A bound on a condition wait, not a sleep: the callback normally comes at once.
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return calls > 0; }));
    EXPECT_LT(q.limit(), std::uint64_t{1} << 20);
  }
  MPI_Barrier(node.comm);
}

TEST(NodeQuota, EqualDemandsSplitTheNodeBudgetEvenlyAndNeverExceedIt) {
  SharedTempDir dir;
  mlbs::Runtime rt(shared_fast_tier(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  // A rank that starts first may borrow the shares of ranks that have not yet
  // asked, and records those place while it gives them back go to the slower
  // tier and stay there while writes go on. Once every rank's demand is known
  // the shares are equal, and the next records show the split.
  const std::uint64_t first = 3 * kSlotsPerRank, more = kSlotsPerRank + 2;
  write_records(u, 0, first);
  settle(u);
  write_records(u, first, more);
  settle(u);
  const std::uint64_t used = rt.stats().tiers[1].used_bytes;
  const std::uint64_t share = kSlotsPerRank * kRecord;
  EXPECT_LE(sum_over_ranks(used), node_budget());
  EXPECT_LE(used, share) << "rank " << world_rank() << " holds more than its fair share";
  EXPECT_GE(used + kRecord, share) << "rank " << world_rank() << " got less than its fair share";
  EXPECT_TRUE(all_ranks(reads_back(u, 0, first + more)));
}

TEST(NodeQuota, ARankAloneInNeedBorrowsTheOthersUnusedShares) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir dir;
  mlbs::Runtime rt(shared_fast_tier(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  if (world_rank() == 0) write_records(u, 0, 3 * kSlotsPerRank * world_size());
  settle(u);
  const std::uint64_t used = rt.stats().tiers[1].used_bytes;
  EXPECT_LE(sum_over_ranks(used), node_budget());
  if (world_rank() == 0) {
    EXPECT_GT(used, kSlotsPerRank * kRecord) << "nothing was lent";
    EXPECT_GE(used + kRecord, node_budget()) << "unused shares were not lent in full";
    EXPECT_TRUE(reads_back(u, 0, 3 * kSlotsPerRank * world_size()));
  } else {
    EXPECT_EQ(used, 0u);
  }
}

TEST(NodeQuota, ALentShareComesBackWhenItsOwnerNeedsIt) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir dir;
  mlbs::Runtime rt(shared_fast_tier(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  const std::uint64_t many = 3 * kSlotsPerRank * world_size();
  // Rank 0 first fills the whole node budget while the others are idle...
  if (world_rank() == 0) write_records(u, 0, many);
  settle(u);
  if (world_rank() == 0) EXPECT_GT(rt.stats().tiers[1].used_bytes, kSlotsPerRank * kRecord);
  // ...then the others need their shares: rank 0 must give them back, although
  // it does nothing more itself (its quota watcher wakes it).
  if (world_rank() != 0) write_records(u, 0, many);
  settle(u);
  const std::uint64_t share = kSlotsPerRank * kRecord;
  EXPECT_LE(rt.stats().tiers[1].used_bytes, share) << "rank " << world_rank() << " kept more than its share";
  // What rank 0 gave back holds the others' next records. (Records that went
  // to the slower tier while it had not yet given it back stay there while
  // writes go on: moving them up would take room newer records need.)
  const std::uint64_t more = world_rank() != 0 ? kSlotsPerRank + 2 : 0;
  write_records(u, many, more);
  settle(u);
  const std::uint64_t used = rt.stats().tiers[1].used_bytes;
  EXPECT_LE(sum_over_ranks(used), node_budget());
  EXPECT_LE(used, share) << "rank " << world_rank() << " kept more than its share";
  EXPECT_GE(used + kRecord, share) << "rank " << world_rank() << " did not get its share";
  EXPECT_TRUE(all_ranks(reads_back(u, 0, many + more)));
}

TEST(NodeQuota, DramBudgetStaysPerRank) {
  SharedTempDir dir;
  mlbs::Runtime rt(shared_fast_tier(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  write_records(u, 0, 8);
  settle(u);
  const mlbs::Stats s = rt.stats();
  EXPECT_EQ(s.tiers[0].capacity_bytes, 2 * kRecord);
  EXPECT_LE(s.tiers[0].peak_used_bytes, 2 * kRecord);
  EXPECT_TRUE(all_ranks(reads_back(u, 0, 8)));
}

}  // namespace
