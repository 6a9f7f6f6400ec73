// Per-rank stores under MPI: namespacing, integrity through every tier,
// persistent recovery with the same number of ranks, store collectives.
#include <gtest/gtest.h>
#include <mlbs/mlbs.hpp>

#include <complex>
#include <filesystem>
#include <numeric>
#include <set>
#include <vector>

#include "mpi_support.hpp"

namespace {

using mlbs::test::all_ranks;
using mlbs::test::fill;
using mlbs::test::holds;
using mlbs::test::kElems;
using mlbs::test::kRecord;
using mlbs::test::SharedTempDir;
using mlbs::test::value;
using mlbs::test::world_rank;
using mlbs::test::world_size;


mlbs::Config three_tiers(const SharedTempDir& dir, mlbs::Durability durability = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecord), mlbs::Tier::directory(dir / "fast", 3 * kRecord),
               mlbs::Tier::directory(dir / "slow")};
  cfg.durability = durability;
  cfg.helper_core = -2;
  return cfg;
}



TEST(Ranks, RuntimeKnowsItsRankAndSize) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  EXPECT_EQ(rt.rank(), world_rank());
  EXPECT_EQ(rt.ranks(), world_size());
}

TEST(Ranks, SameStoreNameAndPathsKeepEachRanksRecordsItsOwn) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  constexpr std::uint64_t kRecords = 12;  // 4x DRAM: every tier is used
  for (std::uint64_t id = 0; id < kRecords; ++id) {
    fill(u, id);
    u.write(id);
  }
  bool ok = true;
  for (std::uint64_t id = kRecords; id-- > 0;) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(ok) << "rank " << world_rank() << " read another rank's or wrong bytes";
  const mlbs::Stats s = rt.stats();
  EXPECT_GT(s.tiers[2].bytes_in, 0u) << "the slow tier was not used";
  EXPECT_TRUE(all_ranks(ok));
}

// A store in parts on shared paths: each rank's parts are its own (u#j.rank-r), every record back exact through every tier.
TEST(Ranks, AStoreInPartsKeepsEachRanksPartsItsOwn) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::StoreOptions options;
  options.parts = 3;
  mlbs::Store<float> u(rt, "wavefield", options, kElems);
  constexpr std::uint64_t kRecords = 12;
  for (std::uint64_t id = 0; id < kRecords; ++id) {
    fill(u, id);
    u.write(id);
  }
  bool ok = rt.stats().writes == 3 * kRecords;
  for (std::uint64_t id = kRecords; id-- > 0;) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(ok) << "rank " << world_rank() << " read another rank's or wrong bytes";
  EXPECT_GT(rt.stats().tiers[2].bytes_in, 0u) << "the slow tier was not used";
  EXPECT_TRUE(all_ranks(ok));
}

TEST(Ranks, ScratchSpacesOnSharedPathsCarryTheRank) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  MPI_Barrier(MPI_COMM_WORLD);
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "fast")) names.insert(e.path().filename());
  const std::string mine = "wavefield.rank-" + std::to_string(world_rank()) + ".";
  std::size_t found = 0;
  for (const auto& n : names) found += n.rfind(mine, 0) == 0;
  EXPECT_EQ(found, 1u) << "no scratch space named " << mine << "*";
  EXPECT_EQ(names.size(), static_cast<std::size_t>(world_size()));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Ranks, PersistentStoreRecoversEachRanksRecords) {
  SharedTempDir dir;
  {
    mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", kElems);
    for (std::uint64_t id = 0; id < 8; ++id) {
      fill(u, id);
      u.write(id);
    }
    u.flush();
  }
  mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "checkpoint");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  bool ok = true;
  for (std::uint64_t id = 0; id < 8; ++id) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(all_ranks(ok));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "slow" / "checkpoint.ranks"));
}

// A persistent store in parts on shared paths: each rank records its own part count (checkpoint.rank-r.parts) and recovers its own records whole.
TEST(Ranks, PersistentStoreInPartsRecoversEachRanksRecords) {
  SharedTempDir dir;
  mlbs::StoreOptions options;
  options.parts = 3;
  {
    mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", options, kElems);
    for (std::uint64_t id = 0; id < 8; ++id) {
      fill(u, id);
      u.write(id);
    }
    u.flush();
  }
  mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent));
  options.parts = mlbs::StoreOptions::kAutoParts;  // takes the count recorded
  mlbs::Store<float> u(rt, "checkpoint", options);
  bool ok = u.parts() == 3 && u.ids() == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7};
  for (std::uint64_t id = 0; id < 8; ++id) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(ok) << "rank " << world_rank();
  EXPECT_TRUE(all_ranks(ok));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "slow" /
                                      ("checkpoint.rank-" + std::to_string(world_rank()) + ".parts")));
}

TEST(Ranks, PersistentStoreRefusesAnotherNumberOfRanks) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir dir;
  {
    mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", kElems);
    fill(u, 0);
    u.write(0);
    u.flush();
  }
  // The same store opened by a communicator of one rank less.
  MPI_Comm fewer;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() == world_size() - 1 ? MPI_UNDEFINED : 0, world_rank(), &fewer);
  if (fewer != MPI_COMM_NULL) {
    mlbs::Runtime rt(three_tiers(dir, mlbs::Durability::persistent), fewer);
    try {
      mlbs::Store<float> u(rt, "checkpoint");
      ADD_FAILURE() << "opened a store written by " << world_size() << " ranks with " << rt.ranks();
    } catch (const mlbs::InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("written by " + std::to_string(world_size()) + " MPI ranks"),
                std::string::npos) << e.what();
      EXPECT_EQ(e.context().store, "checkpoint");
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (fewer != MPI_COMM_NULL) MPI_Comm_free(&fewer);
}

TEST(Collectives, AllReduceSumsEveryRanksWorkingBuffer) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<double> img(rt, "image", 1000);
  const int r = world_rank(), n = world_size();
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = double(r + 1) * double(i);
  img.all_reduce(MPI_SUM);
  const double ranks_sum = double(n) * double(n + 1) / 2;
  bool ok = true;
  for (std::size_t i = 0; i < img.size(); ++i) ok = ok && img[i] == ranks_sum * double(i);
  EXPECT_TRUE(all_ranks(ok));
}

TEST(Collectives, ReduceLeavesTheResultOnRootOnly) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<int> v(rt, "counts", 257);
  const int r = world_rank(), n = world_size();
  const int root = n - 1;
  std::fill(v.begin(), v.end(), r);
  v.reduce(MPI_MAX, root);
  const int expect = r == root ? n - 1 : r;
  EXPECT_TRUE(all_ranks(std::all_of(v.begin(), v.end(), [&](int x) { return x == expect; })));
}

TEST(Collectives, ReduceOfARecordReadBackCombinesRanksSnapshots) {
  // The RTM imaging pattern: each rank reads its snapshot, then the image is summed.
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  for (std::uint64_t id = 0; id < 6; ++id) {
    fill(u, id);
    u.write(id);
  }
  u.read(2);
  u.reduce(MPI_SUM, 0);
  if (world_rank() == 0) {
    bool ok = true;
    for (std::size_t i = 0; i < kElems; ++i) {
      float sum = 0;
      for (int q = 0; q < world_size(); ++q) sum += value(q, 2, i);
      ok = ok && u[i] == sum;
    }
    EXPECT_TRUE(ok);
  }
}

TEST(Collectives, ComplexAndSubCommunicators) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<std::complex<double>> z(rt, "z", 64);
  MPI_Comm pairs;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() / 2, world_rank(), &pairs);
  int pair_size = 0;
  MPI_Comm_size(pairs, &pair_size);
  z.set_comm(pairs);
  std::fill(z.begin(), z.end(), std::complex<double>(1.0, double(world_rank() % 2)));
  z.all_reduce(MPI_SUM);
  const double im = pair_size == 2 ? 1.0 : double(world_rank() % 2);
  EXPECT_TRUE(all_ranks(std::all_of(z.begin(), z.end(), [&](auto c) {
    return c == std::complex<double>(double(pair_size), im);
  })));
  z.set_comm(MPI_COMM_NULL);
  EXPECT_EQ(z.comm(), MPI_COMM_WORLD);
  MPI_Comm_free(&pairs);
}

TEST(Collectives, MismatchedSizesAreATypedErrorOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<float> u(rt, "uneven", world_rank() == 0 ? 10 : 12);
  bool threw = false;
  try {
    u.all_reduce(MPI_SUM);
  } catch (const mlbs::InvalidArgumentError& e) {
    threw = std::string(e.what()).find("differ in size") != std::string::npos && e.context().store == "uneven";
  }
  EXPECT_TRUE(all_ranks(threw));
}

TEST(Collectives, BadRootIsATypedErrorOnEveryRank) {
  SharedTempDir dir;
  mlbs::Runtime rt(three_tiers(dir));
  mlbs::Store<float> u(rt, "x", 8);
  EXPECT_THROW(u.reduce(MPI_SUM, world_size()), mlbs::InvalidArgumentError);
}

}  // namespace
