// What the engine does when a tier fails (Tier::faults injects the failures):
// a failing or full fast tier sends records on, a failing persistent tier
// surfaces from flush()/write() while records held above stay readable, a
// torn or corrupted copy is never returned, latency spikes hang nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::test::TempDir;

constexpr std::size_t kElems = 4096;  // 16 KiB records
constexpr std::size_t kRecBytes = kElems * sizeof(float);

float value(std::uint64_t id, std::size_t i) { return float(id * 100003 + i); }

void write_range(mlbs::Store<float>& u, std::uint64_t first, std::uint64_t n) {
  for (std::uint64_t id = first; id < first + n; ++id) {
    u.resize(kElems);
    for (std::size_t i = 0; i < kElems; ++i) u[i] = value(id, i);
    u.write(id);
  }
}

::testing::AssertionResult exact(const mlbs::Store<float>& u, std::uint64_t id) {
  if (u.size() != kElems) return ::testing::AssertionFailure() << "id " << id << " has " << u.size() << " elements";
  for (std::size_t i = 0; i < kElems; ++i)
    if (u[i] != value(id, i)) return ::testing::AssertionFailure() << "id " << id << " element " << i;
  return ::testing::AssertionSuccess();
}

/// Reads ids [0, n) back newest first (the LIFO schedule) and checks every element.
void read_back(mlbs::Store<float>& u, std::uint64_t n) {
  for (std::uint64_t id = n; id-- > 0;) {
    u.read(id);
    EXPECT_TRUE(exact(u, id));
  }
}

/// DRAM for 2 records, a fast tier for 4, an unlimited slow tier; faults on
/// the fast (`fast`) and slow (`slow`) tiers.
mlbs::Config tiers(const TempDir& dir, const std::string& fast, const std::string& slow,
                   mlbs::Durability durability = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  mlbs::Tier f = mlbs::Tier::directory(dir / "fast", 4 * kRecBytes);
  f.faults = fast;
  mlbs::Tier s = mlbs::Tier::directory(dir / "slow");
  s.faults = slow;
  cfg.tiers = {mlbs::Tier::memory(2 * kRecBytes), f, s};
  cfg.durability = durability;
  cfg.shutdown_timeout_ms = 20000;
  return cfg;
}

/// DRAM for 2 records and one file tier with `faults`: no other copy to fall back on.
mlbs::Config two_tiers(const TempDir& dir, const std::string& faults) {
  mlbs::Config cfg;
  mlbs::Tier s = mlbs::Tier::directory(dir / "slow");
  s.faults = faults;
  cfg.tiers = {mlbs::Tier::memory(2 * kRecBytes), s};
  cfg.shutdown_timeout_ms = 20000;
  return cfg;
}

// Every write to the fast tier fails with EIO: records go on to the slow tier, all read back exact, the errors are counted.
TEST(Faults, FailingFastTierSendsRecordsOn) {
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "write:EIO", ""));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 12);
  u.flush();
  const mlbs::Stats st = rt.stats();
  EXPECT_GT(st.tiers[1].errors, 0u) << "no write reached the failing tier";
  EXPECT_EQ(st.tiers[1].records, 0u);
  EXPECT_GE(st.tiers[2].records, 10u) << "records did not go on to the slow tier";
  read_back(u, 12);
}

// The fast tier reports ENOSPC after two records: it is treated as full, the rest go to the slow tier.
TEST(Faults, FullFastTierSendsRecordsOn) {
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "write:ENOSPC@2", ""));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 12);
  u.flush();
  const mlbs::Stats st = rt.stats();
  EXPECT_GT(st.tiers[1].errors, 0u);
  EXPECT_LE(st.tiers[1].records, 2u);
  EXPECT_GE(st.tiers[2].records, 8u);
  read_back(u, 12);
}

// Persistent mode, the last tier fails every write: flush() throws a typed error naming the tier; records held above stay readable.
TEST(Faults, FailingPersistentTierSurfacesFromFlush) {
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "", "write:EIO", mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 2);
  try {
    u.flush();
    FAIL() << "flush() returned although no record could be made durable";
  } catch (const mlbs::IoError& e) {
    EXPECT_EQ(e.error_code(), EIO);
    EXPECT_NE(e.context().tier.find("tier 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
  }
  for (std::uint64_t id = 0; id < 2; ++id) {
    u.read(id);
    EXPECT_TRUE(exact(u, id));
    EXPECT_FALSE(u.info(id).durable);
  }
}

// The last tier fails until it recovers: the first flush() throws, the next one retries those records and makes them durable.
// (The failure lasts while a file exists, not for a count: with "EIO*2" the helpers could
// spend both failures before the first flush(), whose retry then succeeds.)
TEST(Faults, FlushRetriesRecordsTheLastTierFailedBefore) {
  TempDir dir;
  const std::string failing = dir / "device-failing";
  std::ofstream(failing).put('x');
  mlbs::Runtime rt(tiers(dir, "", "write:EIO?" + failing, mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 2);
  EXPECT_THROW(u.flush(), mlbs::IoError);
  std::filesystem::remove(failing);
  u.flush();
  for (std::uint64_t id = 0; id < 2; ++id) {
    EXPECT_TRUE(u.info(id).durable) << "id " << id;
    u.read(id);
    EXPECT_TRUE(exact(u, id));
  }
  EXPECT_GE(rt.stats().tiers[2].errors, 2u) << "each record failed there at least once";
}

// A rule with ?<path> fires only while that file exists: the last tier is full until the file goes, then the same flush succeeds.
TEST(Faults, RuleWithAPathFiresWhileTheFileExists) {
  TempDir dir;
  const std::string flag = dir / "device-full";
  std::ofstream(flag).put('x');
  mlbs::Runtime rt(tiers(dir, "", "write:ENOSPC?" + flag, mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 2);
  EXPECT_THROW(u.flush(), mlbs::DeviceFullError);
  EXPECT_THROW(u.flush(), mlbs::DeviceFullError) << "the device stays full while the file exists";
  std::filesystem::remove(flag);
  u.flush();
  for (std::uint64_t id = 0; id < 2; ++id) EXPECT_TRUE(u.info(id).durable) << "id " << id;
}

// Scratch, two tiers, the only file tier fails: once DRAM is full, write() throws instead of hanging; what was accepted reads back.
TEST(Faults, FailingLastTierSurfacesFromWrite) {
  TempDir dir;
  mlbs::Config cfg = two_tiers(dir, "write:EIO");
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  std::vector<std::uint64_t> accepted;
  std::optional<std::string> error;
  for (std::uint64_t id = 0; id < 6 && !error; ++id) {
    try {
      write_range(u, id, 1);
      accepted.push_back(id);
    } catch (const mlbs::Error& e) {
      error = e.what();
    }
  }
  ASSERT_TRUE(error) << "6 records accepted into DRAM for 2 with no tier below";
  EXPECT_NE(error->find("tier 1"), std::string::npos) << *error;
  for (std::uint64_t id : accepted) {
    if (!u.contains(id)) continue;
    u.read(id);
    EXPECT_TRUE(exact(u, id));
  }
}

// A torn write on the only file tier (the record's tail silently lost) is caught on the way back: a typed error, never wrong bytes.
TEST(Faults, TornWriteIsNeverReturned) {
  TempDir dir;
  mlbs::Config cfg = two_tiers(dir, "write:short*1");
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 8);
  u.flush();
  std::size_t bad = 0;
  for (std::uint64_t id = 8; id-- > 0;) {
    try {
      u.read(id);
      EXPECT_TRUE(exact(u, id));
    } catch (const mlbs::Error& e) {
      ++bad;
      EXPECT_TRUE(dynamic_cast<const mlbs::CorruptionError*>(&e) || dynamic_cast<const mlbs::SizeMismatchError*>(&e))
          << e.what();
      EXPECT_EQ(e.context().store, "u") << e.what();
      EXPECT_EQ(e.context().id, id) << "the error of another record: " << e.what();
    }
  }
  EXPECT_EQ(bad, 1u) << "exactly one record was torn";
}

/// Six records whose only copy is on the one file tier with `faults`, written and flushed; no prefetch
/// (an unknown schedule), so the first read of a record on disk is the test's.
struct OnlyCopyOnDisk {
  OnlyCopyOnDisk(const TempDir& dir, const std::string& faults)
      : rt([&] {
          mlbs::Config cfg = two_tiers(dir, faults);
          cfg.schedule = mlbs::Schedule::unknown();
          return cfg;
        }()),
        u(rt, "u", kElems) {
    write_range(u, 0, 6);
    u.flush();
  }
  mlbs::Runtime rt;
  mlbs::Store<float> u;
};

// A read from the only file tier comes back corrupted once (bytes flipped on their way, not on the device):
// the copy is read again before it is called bad, and every record reads back exact.
TEST(Faults, CorruptReadIsReadAgainBeforeTheCopyIsCalledBad) {
  TempDir dir;
  OnlyCopyOnDisk s(dir, "read:corrupt*1");
  for (std::uint64_t id = 0; id < 6; ++id) {
    s.u.read(id);
    EXPECT_TRUE(exact(s.u, id));
  }
  const mlbs::Stats st = s.rt.stats();
  EXPECT_EQ(st.checksum_failures, 1u);
  EXPECT_EQ(st.rereads, 1u);
  EXPECT_EQ(st.tiers[1].errors, 1u) << "the failed read is the tier's error";
}

// The only copy reads back corrupted twice in a row: the read throws CorruptionError naming store, id and
// tier, and no other record is harmed.
TEST(Faults, CorruptReadWithoutAnotherCopyIsACorruptionError) {
  TempDir dir;
  OnlyCopyOnDisk s(dir, "read:corrupt*2");
  std::size_t corrupt = 0;
  for (std::uint64_t id = 0; id < 6; ++id) {
    try {
      s.u.read(id);
      EXPECT_TRUE(exact(s.u, id));
    } catch (const mlbs::CorruptionError& e) {
      ++corrupt;
      EXPECT_EQ(e.context().store, "u");
      EXPECT_EQ(e.context().id, id);
      EXPECT_NE(e.context().tier.find("tier 1"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(corrupt, 1u);
  EXPECT_EQ(s.rt.stats().checksum_failures, 2u);
  EXPECT_EQ(s.rt.stats().rereads, 1u);
}

// A read() that reads the file tier itself (no DRAM room can be made: half of DRAM lent, the record larger
// than the rest) reads a copy that failed verification once again, as a helper does, and delivers it exact.
TEST(Faults, DirectReadReadsACorruptCopyAgain) {
  TempDir dir;
  constexpr std::size_t kPage = 4096;
  mlbs::Config cfg = two_tiers(dir, "read:corrupt*1");
  cfg.tiers[0] = mlbs::Tier::memory(4 * kPage);
  cfg.schedule = mlbs::Schedule::unknown();
  mlbs::Runtime rt(cfg);
  mlbs::Store<std::uint8_t> u(rt, "u", 3 * kPage);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<std::uint8_t>(i * 13 + i / 251);
  const std::vector<std::uint8_t> written(u.begin(), u.end());
  u.write(1);
  u.flush();
  mlbs::detail::StoreCore lender(rt, "lender");
  auto lent = lender.lend_slot(2 * kPage);  // makes room: record 1's DRAM copy goes
  ASSERT_TRUE(lent);
  std::fill(u.begin(), u.end(), std::uint8_t{0});
  u.read(1);
  EXPECT_TRUE(std::equal(u.begin(), u.end(), written.begin(), written.end()));
  const mlbs::Stats st = rt.stats();
  EXPECT_EQ(st.direct_reads, 1u) << "the record was not read directly: the test no longer tests that path";
  EXPECT_EQ(st.checksum_failures, 1u);
  EXPECT_EQ(st.rereads, 1u);
  lender.return_slot(std::move(*lent));
}

// A read() that reads the file tiers itself and finds the fastest copy corrupt drops it and reads the next
// one (a persistent store: the record is on both file tiers), as a helper does, rather than read the bad one
// again or give up.
TEST(Faults, DirectReadFallsBackToTheNextCopy) {
  TempDir dir;
  constexpr std::size_t kPage = 4096;
  mlbs::Config cfg = tiers(dir, "read:corrupt", "", mlbs::Durability::persistent);
  cfg.tiers[0] = mlbs::Tier::memory(4 * kPage);
  cfg.schedule = mlbs::Schedule::lifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<std::uint8_t> u(rt, "u", 3 * kPage), v(rt, "v", 3 * kPage);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<std::uint8_t>(i * 7 + i / 509);
  const std::vector<std::uint8_t> written(u.begin(), u.end());
  u.write(1);
  u.flush();
  mlbs::detail::StoreCore lender(rt, "lender");
  auto first = lender.lend_slot(kPage);  // DRAM's last free page
  ASSERT_TRUE(first);
  v.write(1);  // u:1 leaves DRAM for the fast tier: LIFO reads it after v:1
  v.flush();
  rt.set_schedule(mlbs::Schedule::unknown());  // nothing prefetches u:1 into the room v:1 leaves
  v.erase(1);
  // v:1's slot comes free once the helper copying it (if any) is done.
  for (long scan = 0; scan < 100000000 && rt.stats().tiers[0].used_bytes > kPage; ++scan) std::this_thread::yield();
  auto second = lender.lend_slot(kPage);  // half of DRAM lent: u:1 no longer fits beside it
  ASSERT_TRUE(second);
  ASSERT_EQ(u.info(1).tiers, (std::vector<int>{1, 2})) << "the test needs u:1 on both file tiers only";
  std::fill(u.begin(), u.end(), std::uint8_t{0});
  u.read(1);
  EXPECT_TRUE(std::equal(u.begin(), u.end(), written.begin(), written.end()));
  const mlbs::Stats st = rt.stats();
  EXPECT_EQ(st.direct_reads, 1u) << "the record was not read directly: the test no longer tests that path";
  EXPECT_EQ(st.checksum_failures, 1u) << "the bad copy was read more than once";
  EXPECT_EQ(st.rereads, 0u) << "a copy with another beside it is not read again";
  EXPECT_EQ(st.tiers[1].errors, 1u);
  EXPECT_EQ(u.info(1).tiers, (std::vector<int>{2})) << "the bad copy was kept";
  lender.return_slot(std::move(*first));
  lender.return_slot(std::move(*second));
}

// Persistent mode: the fast tier returns corrupted bytes; the good copy on the persistent tier is used instead, and the event counted.
TEST(Faults, CorruptCopyIsReplacedByAGoodOneFromAnotherTier) {
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "read:corrupt", "", mlbs::Durability::persistent));
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 10);
  u.flush();
  read_back(u, 10);
  const mlbs::Stats st = rt.stats();
  if (st.tiers[1].bytes_out == 0 && st.tiers[1].errors == 0) GTEST_SKIP() << "no record was read from the fast tier";
  EXPECT_GE(st.checksum_failures, 1u);
  EXPECT_GE(st.tiers[1].errors, 1u);
}

// A failure on a helper thread that concerns no waiting call (a file removal) reaches the next API call as a typed error; the process goes on.
TEST(Faults, HelperFailureReachesTheNextCall) {
  TempDir dir;
  mlbs::Config cfg = two_tiers(dir, "remove:EIO*1");
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  write_range(u, 0, 6);
  u.flush();
  std::optional<std::string> error;
  for (std::uint64_t id = 6; id-- > 0 && !error;) {
    try {
      u.read(id);  // scratch: a record read is released, its file removed by a helper
      EXPECT_TRUE(exact(u, id));
      u.flush();   // waits for the helpers: a failed removal is reported here at the latest
    } catch (const mlbs::IoError& e) {
      error = e.what();
      EXPECT_EQ(e.error_code(), EIO);
    }
  }
  ASSERT_TRUE(error) << "the failed removal was never reported";
  EXPECT_NE(error->find("injected"), std::string::npos) << *error;
  EXPECT_EQ(rt.stats().tiers[1].errors, 1u);
  write_range(u, 10, 1);  // the runtime is still usable
  u.read(10);
  EXPECT_TRUE(exact(u, 10));
}

// A memory tier larger than the node's RAM is refused at construction with a typed error naming tier 0, not pre-faulted into the OOM killer.
TEST(BadInput, MemoryBudgetBeyondTheNodeIsACapacityError) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1ull << 50), mlbs::Tier::directory(dir / "slow")};
  try {
    mlbs::Runtime rt(cfg);
    FAIL() << "a 1 PiB slot pool was accepted";
  } catch (const mlbs::CapacityError& e) {
    EXPECT_NE(e.context().tier.find("tier 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exceeds this node's memory"), std::string::npos) << e.what();
  }
}

// Persistent mode, a persistent tier that stalls: destroying the runtime gives up after shutdown_timeout_ms and says what it could not make durable.
TEST(Faults, ShutdownWithAStalledTierIsBoundedAndReported) {
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "", "write:delay=400ms", mlbs::Durability::persistent);
  cfg.shutdown_timeout_ms = 100;  // far less than the 5 x 400 ms the records need
  ::testing::internal::CaptureStderr();
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "u", kElems);
    write_range(u, 0, 5);  // DRAM and the fast tier take them: write() does not wait for the stalled tier
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("store 'u'"), std::string::npos) << err;
}

// Latency spikes on every operation of both file tiers slow things down but hang nothing: reads exact, shutdown drains.
TEST(Faults, LatencySpikesHangNothing) {
  TempDir dir;
  {
    mlbs::Runtime rt(tiers(dir, "any:delay=5ms", "any:delay=5ms"));
    mlbs::Store<float> u(rt, "u", kElems);
    write_range(u, 0, 10);
    for (std::uint64_t id = 10; id-- > 5;) {
      u.read(id);
      EXPECT_TRUE(exact(u, id));
    }
    write_range(u, 10, 4);  // pending work when the runtime goes
  }
  EXPECT_EQ(mlbs::test::stored_records(dir.path()), 0u) << "scratch records left behind";
}

}  // namespace
