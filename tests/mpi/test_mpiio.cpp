// The mpiio tier: the records of every rank in one shared file, moved by
// collective MPI-IO in rounds (docs/mpiio.md).
#include <gtest/gtest.h>
#include <mlbs/mlbs.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "mpi_support.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::all_ranks;
using mlbs::test::fill;
using mlbs::test::holds;
using mlbs::test::kElems;
using mlbs::test::kRecord;
using mlbs::test::SharedTempDir;
using mlbs::test::value;
using mlbs::test::world_rank;
using mlbs::test::world_size;


mlbs::Config through_directory(const SharedTempDir& dir, mlbs::Schedule schedule = mlbs::Schedule::lifo()) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecord), mlbs::Tier::directory(dir / "fast", 3 * kRecord),
               mlbs::Tier::mpiio(dir / "shared")};
  cfg.schedule = std::move(schedule);
  cfg.helper_core = -2;
  return cfg;
}

/// DRAM for `records` records, then the shared file.
mlbs::Config straight_down(const SharedTempDir& dir, std::uint64_t records,
                           mlbs::Durability durability = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(records * kRecord), mlbs::Tier::mpiio(dir / "shared")};
  cfg.durability = durability;
  cfg.helper_core = -2;
  return cfg;
}



std::vector<char> record_bytes(int rank, std::uint64_t id) {
  std::vector<char> bytes(kRecord);
  for (std::size_t i = 0; i < kElems; ++i) {
    const float v = value(rank, id, i);
    std::memcpy(bytes.data() + i * sizeof v, &v, sizeof v);
  }
  return bytes;
}

std::vector<char> slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Where the bytes of (rank, id) lie in `file`; nullopt if they are not there.
std::optional<std::size_t> find_record(const fs::path& file, int rank, std::uint64_t id) {
  const std::vector<char> data = slurp(file), want = record_bytes(rank, id);
  auto it = std::search(data.begin(), data.end(), want.begin(), want.end());
  if (it == data.end()) return std::nullopt;
  return static_cast<std::size_t>(it - data.begin());
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

TEST(Mpiio, RecordsPassMemoryDirectoryAndSharedFileByteExactLifoAndFifo) {
  SharedTempDir dir;
  for (const auto& schedule : {mlbs::Schedule::lifo(), mlbs::Schedule::fifo()}) {
    mlbs::Runtime rt(through_directory(dir, schedule));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    constexpr std::uint64_t kRecords = 12;  // 4x DRAM, 2x DRAM + NVMe: the shared file is used
    for (std::uint64_t id = 0; id < kRecords; ++id) {
      fill(u, id);
      u.write(id);
    }
    bool ok = true;
    for (std::uint64_t k = 0; k < kRecords; ++k) {
      const std::uint64_t id = schedule.kind == mlbs::Schedule::Kind::lifo ? kRecords - 1 - k : k;
      u.read(id);
      ok = ok && holds(u, id);
    }
    EXPECT_TRUE(ok) << "rank " << world_rank() << " read wrong bytes";
    const mlbs::Stats s = rt.stats();
    EXPECT_GT(s.tiers[2].bytes_in, 0u) << "the mpiio tier was not used";
    EXPECT_EQ(s.tiers[2].io_backend, "mpiio (collective)");
    EXPECT_TRUE(all_ranks(ok));
  }
}

TEST(Mpiio, EveryRanksRecordsLieInOneSharedFile) {
  SharedTempDir dir;
  mlbs::Runtime rt(straight_down(dir, 2));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  // DRAM holds 2: once write(5) returns, ids 0..3 have moved to the shared file.
  for (std::uint64_t id = 0; id < 6; ++id) {
    fill(u, id);
    u.write(id);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::vector<fs::path> files = files_under(dir.path() / "shared");
  ASSERT_EQ(files.size(), 1u) << "expected one shared file, not a file per record or rank";
  EXPECT_EQ(files[0].extension(), ".mpiio");
  bool ok = true;
  for (int q = 0; q < world_size(); ++q) ok = ok && find_record(files[0], q, 0).has_value();
  EXPECT_TRUE(ok) << "rank " << world_rank() << " does not find every rank's record 0 in " << files[0];
  EXPECT_TRUE(all_ranks(ok));
  MPI_Barrier(MPI_COMM_WORLD);  // nobody reads (and frees) before all have looked
  for (std::uint64_t id = 6; id-- > 0;) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(all_ranks(ok));
}

TEST(Mpiio, RanksWritingVeryDifferentCountsAtDifferentTimesNeitherHangNorMix) {
  SharedTempDir dir;
  mlbs::Runtime rt(straight_down(dir, 2));
  mlbs::Store<float> u(rt, "uneven", kElems);
  // Rank 0 writes 30, the last rank (of 3 or more) nothing, the others 2.
  const int r = world_rank(), n = world_size();
  const std::uint64_t records = r == 0 ? 30 : (n > 2 && r == n - 1) ? 0 : 2;
  bool ok = true;
  for (std::uint64_t id = 0; id < records; ++id) {
    fill(u, id);
    u.write(id);
    if (r == 1 && id == 1) {  // rank 1 reads back at once, while rank 0 still writes
      u.read(1);
      u.read(0);
      ok = ok && holds(u, 0);
    }
  }
  if (r != 1)
    for (std::uint64_t id = records; id-- > 0;) {
      u.read(id);
      ok = ok && holds(u, id);
    }
  EXPECT_TRUE(ok) << "rank " << r << " read wrong bytes";
  if (r == 0) EXPECT_GT(rt.stats().tiers[1].bytes_in, 0u);
  EXPECT_TRUE(all_ranks(ok));
}

TEST(Mpiio, PersistentStoreRecoversIdsAndBytesOnEveryRank) {
  SharedTempDir dir;
  {
    mlbs::Runtime rt(straight_down(dir, 2, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", kElems);
    for (std::uint64_t id = 0; id < 8; ++id) {
      fill(u, id);
      u.write(id);
    }
    u.flush();
  }
  mlbs::Runtime rt(straight_down(dir, 2, mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "checkpoint");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  bool ok = true;
  for (std::uint64_t id = 0; id < 8; ++id) {
    u.read(id);
    ok = ok && holds(u, id);
  }
  EXPECT_TRUE(all_ranks(ok));
  // One data file for all ranks; per rank only its journal and index.
  std::size_t data_files = 0, record_files = 0;
  for (const fs::path& p : files_under(dir.path() / "shared")) {
    data_files += p.extension() == ".mpiio";
    record_files += p.extension() == ".rec";
  }
  EXPECT_EQ(data_files, 1u);
  EXPECT_EQ(record_files, 0u);
}

TEST(Mpiio, RecoveryWithAnotherNumberOfRanksIsRefused) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir dir;
  {
    mlbs::Runtime rt(straight_down(dir, 2, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", kElems);
    fill(u, 0);
    u.write(0);
    u.flush();
  }
  MPI_Comm fewer;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() == world_size() - 1 ? MPI_UNDEFINED : 0, world_rank(), &fewer);
  if (fewer != MPI_COMM_NULL) {
    try {
      mlbs::Runtime rt(straight_down(dir, 2, mlbs::Durability::persistent), fewer);
      ADD_FAILURE() << "opened a shared file written by " << world_size() << " ranks with " << rt.ranks();
    } catch (const mlbs::TierError& e) {
      EXPECT_NE(std::string(e.what()).find("written by " + std::to_string(world_size()) + " MPI ranks"),
                std::string::npos) << e.what();
      EXPECT_NE(e.context().tier.find("mpiio"), std::string::npos) << e.context().tier;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (fewer != MPI_COMM_NULL) MPI_Comm_free(&fewer);
}

TEST(Mpiio, ErasedIdIsWrittenAgainAndRecoveredWithItsNewBytes) {
  SharedTempDir dir;
  {
    mlbs::Runtime rt(straight_down(dir, 1, mlbs::Durability::persistent));
    mlbs::Store<float> u(rt, "checkpoint", kElems);
    for (std::uint64_t id = 0; id < 4; ++id) {
      fill(u, id);
      u.write(id);
    }
    u.flush();
    u.erase(3);
    fill(u, 103);  // new bytes under the old id
    u.write(3);
    u.flush();
    u.read(3);
    EXPECT_TRUE(all_ranks(holds(u, 103)));
  }
  mlbs::Runtime rt(straight_down(dir, 1, mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "checkpoint");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 3}));
  u.read(3);
  bool ok = holds(u, 103);
  u.read(2);
  ok = ok && holds(u, 2);
  EXPECT_TRUE(all_ranks(ok));
}

TEST(Mpiio, CorruptedByteInTheSharedFileIsACorruptionErrorNotWrongBytes) {
  SharedTempDir dir;
  mlbs::Runtime rt(straight_down(dir, 1));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  for (std::uint64_t id = 0; id < 4; ++id) {
    fill(u, id);
    u.write(id);
  }
  // DRAM holds 1: id 2 lies in the shared file only; flip one of its bytes
  // (each rank its own record) before anything reads it.
  fs::path file;
  for (const fs::path& p : files_under(dir.path() / "shared")) file = p;
  const auto at = find_record(file, world_rank(), 2);
  ASSERT_TRUE(at.has_value());
  const int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char byte = 0;
  ASSERT_EQ(::pread(fd, &byte, 1, static_cast<off_t>(*at + 100)), 1);
  byte = static_cast<char>(byte ^ 0x5a);
  ASSERT_EQ(::pwrite(fd, &byte, 1, static_cast<off_t>(*at + 100)), 1);
  ::close(fd);
  u.read(3);
  EXPECT_TRUE(holds(u, 3));
  bool caught = false;
  try {
    u.read(2);
    ADD_FAILURE() << "read of a corrupted record returned (" << (holds(u, 2) ? "right" : "wrong") << " bytes)";
  } catch (const mlbs::CorruptionError& e) {
    caught = e.context().store == "wavefield" && e.context().id == 2u &&
             e.context().tier.find("mpiio") != std::string::npos;
    EXPECT_TRUE(caught) << e.what();
  }
  EXPECT_TRUE(all_ranks(caught));
  u.read(1);  // the others are intact
  EXPECT_TRUE(all_ranks(holds(u, 1)));
}

TEST(Mpiio, ScratchFileIsRemovedWhenTheRuntimeEnds) {
  SharedTempDir dir;
  {
    mlbs::Runtime rt(straight_down(dir, 1));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    for (std::uint64_t id = 0; id < 3; ++id) {
      fill(u, id);
      u.write(id);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(files_under(dir.path() / "shared").empty());
}

}  // namespace
