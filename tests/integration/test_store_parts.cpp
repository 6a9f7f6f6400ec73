// Stores kept in parts (StoreOptions::parts, docs/parts.md): each record is
// written as K engine records back to back and read back into one buffer.
// Round trips byte-exact across the tiers in every schedule, the record API
// speaking for whole records, all-or-nothing writes, reads that fail part-way
// losing no record, and the typed errors for what parts do not support.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "catalog/journal.hpp"
#include "mlbs/detail/store_core.hpp"
#include "mlbs/mlbs.hpp"
#include "support/codecs.hpp"
#include "support/crash.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/layout.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::expect_error;
using mlbs::test::TempDir;

constexpr std::size_t kPage = 4096;

char byte_of(std::uint64_t id, std::size_t i) { return static_cast<char>((id * 131 + i * 7 + (i >> 12) * 13 + 1) & 0xff); }

void fill(mlbs::Store<char>& c, std::uint64_t id, std::size_t n) {
  c.resize(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = byte_of(id, i);
}

::testing::AssertionResult exact(const mlbs::Store<char>& c, std::uint64_t id, std::size_t n) {
  if (c.size() != n) return ::testing::AssertionFailure() << "id " << id << ": " << c.size() << " bytes, not " << n;
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] != byte_of(id, i)) return ::testing::AssertionFailure() << "id " << id << " byte " << i << " of " << n;
  return ::testing::AssertionSuccess();
}

mlbs::StoreOptions in_parts(std::uint32_t k) {
  mlbs::StoreOptions o;
  o.parts = k;
  return o;
}

/// DRAM of `dram_pages` pages, a fast tier with a quota of 32 pages, an unlimited slow tier.
mlbs::Config three_tiers(const TempDir& dir, mlbs::Schedule schedule, std::uint64_t dram_pages = 24) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(dram_pages * kPage), mlbs::Tier::directory(dir / "fast", 32 * kPage),
               mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = std::move(schedule);
  return cfg;
}

// Records of many sizes (empty parts, odd tails, more than DRAM holds at once) in 4 parts read back byte-exact in each schedule, through every tier.
TEST(StoreParts, RecordsRoundTripByteExactInEverySchedule) {
  const std::vector<std::size_t> sizes = {0, 1, kPage - 1, 3 * kPage + 5, 8 * kPage, 8 * kPage + 1, 13 * kPage + 77};
  for (const mlbs::Schedule& schedule : {mlbs::Schedule::lifo(), mlbs::Schedule::fifo(), mlbs::Schedule::unknown()}) {
    SCOPED_TRACE(mlbs::to_string(schedule.kind));
    TempDir dir;
    mlbs::Runtime rt(three_tiers(dir, schedule));
    mlbs::Store<char> c(rt, "u", in_parts(4));
    const std::uint64_t n = 3 * sizes.size();  // 21 records, ~3x DRAM
    for (std::uint64_t id = 0; id < n; ++id) {
      fill(c, id, sizes[id % sizes.size()]);
      c.write(id);
    }
    EXPECT_EQ(rt.stats().writes, 4 * n) << "each record is written as 4 parts";
    EXPECT_EQ(c.ids().size(), n);
    const bool lifo = schedule.kind == mlbs::Schedule::Kind::lifo;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t id = lifo ? n - 1 - i : i;
      c.read(id);
      ASSERT_TRUE(exact(c, id, sizes[id % sizes.size()]));
    }
    EXPECT_TRUE(c.ids().empty()) << "scratch reads release every part";
    EXPECT_EQ(rt.stats().live_records, 0u);
  }
}

// A record larger than the DRAM budget goes in and comes back in parts that each fit it (whole, it is a CapacityError).
TEST(StoreParts, ARecordLargerThanDramFitsInParts) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(4 * kPage), mlbs::Tier::directory(dir / "slow")};
  mlbs::Runtime rt(cfg);
  mlbs::Store<char> whole(rt, "whole");
  fill(whole, 1, 10 * kPage);
  EXPECT_THROW(whole.write(1), mlbs::CapacityError);
  mlbs::Store<char> c(rt, "u", in_parts(5));
  for (std::uint64_t id = 0; id < 3; ++id) {
    fill(c, id, 10 * kPage);
    c.write(id);
  }
  for (std::uint64_t id = 3; id-- > 0;) {
    c.read(id);
    ASSERT_TRUE(exact(c, id, 10 * kPage));
  }
}

// A store in parts with ZFP over 40x40 planes (not whole pages): parts are cut at whole planes, each coded alone, every value back within the bound.
TEST(StoreParts, ZfpCodesEachPartInWholePlanes) {
  REQUIRE_CODEC("zfp");
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo(), 40));
  mlbs::StoreOptions o = in_parts(4);
  o.codec = "zfp:accuracy=0.001";
  o.plane_nx = o.plane_ny = 40;
  constexpr std::size_t kPlane = 40 * 40, kPlanes = 10;  // parts of 3, 3, 3 and 1 planes
  mlbs::Store<float> u(rt, "f", o, kPlane * kPlanes);
  auto wave = [](std::uint64_t id, std::size_t i) { return std::sin(0.01f * float(i) + float(id)); };
  const std::uint64_t n = 16;
  for (std::uint64_t id = 0; id < n; ++id) {
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = wave(id, i);
    u.write(id);
  }
  constexpr std::uint64_t kPlaneBytes = kPlane * sizeof(float);
  EXPECT_EQ(u.info(0).part_bytes,
            (std::vector<std::uint64_t>{3 * kPlaneBytes, 3 * kPlaneBytes, 3 * kPlaneBytes, kPlaneBytes}));
  for (std::uint64_t id = n; id-- > 0;) {
    u.read(id);
    ASSERT_EQ(u.size(), kPlane * kPlanes);
    for (std::size_t i = 0; i < u.size(); ++i) ASSERT_NEAR(u[i], wave(id, i), 0.001) << "id " << id << " element " << i;
  }
  EXPECT_GT(rt.stats().encoded_records, 0u) << "no part was coded: the test did not reach a file tier";
}

// contains, ids, info and erase speak for whole records: info sums the parts and names each part's tiers.
TEST(StoreParts, TheRecordApiSpeaksForWholeRecords) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<char> c(rt, "u", in_parts(3));
  for (std::uint64_t id : {5, 2, 9}) {
    fill(c, id, 7 * kPage + 3);
    c.write(id);
  }
  c.flush();
  EXPECT_EQ(c.ids(), (std::vector<std::uint64_t>{2, 5, 9}));
  EXPECT_TRUE(c.contains(5));
  EXPECT_FALSE(c.contains(6));
  const mlbs::RecordInfo info = c.info(5);
  EXPECT_EQ(info.size_bytes, 7 * kPage + 3);
  EXPECT_FALSE(info.has_checksum) << "each part is checked on its own";
  EXPECT_EQ(info.part_bytes, (std::vector<std::uint64_t>{3 * kPage, 3 * kPage, kPage + 3})) << "cut at whole pages";
  ASSERT_EQ(info.part_tiers.size(), 3u);
  for (const std::vector<int>& t : info.part_tiers) {
    EXPECT_FALSE(t.empty());
    for (int tier : t) EXPECT_NE(std::find(info.tiers.begin(), info.tiers.end(), tier), info.tiers.end());
  }
  c.erase(5);
  EXPECT_FALSE(c.contains(5));
  EXPECT_EQ(rt.stats().live_records, 6u) << "every part of 5 went";
  expect_error<mlbs::UnknownIdError>([&] { c.read(5); }, {"store 'u'", "id 5"});
  expect_error<mlbs::UnknownIdError>([&] { c.erase(5); }, {"store 'u'", "id 5"});
  expect_error<mlbs::UnknownIdError>([&] { (void)c.info(5); }, {"store 'u'", "id 5"});
  expect_error<mlbs::DuplicateIdError>([&] { c.write(9); }, {"id 9"});
  c.read(9);
  EXPECT_TRUE(exact(c, 9, 7 * kPage + 3)) << "a refused duplicate keeps the record";
}

// A write that no tier can take part-way leaves none of its parts behind, loses nothing accepted, and can be made once room is.
TEST(StoreParts, AWriteRefusedPartWayLeavesNoParts) {
  TempDir dir;
  mlbs::Config cfg;  // room for 11 parts of one page in all: the third record is refused at its fourth part
  cfg.tiers = {mlbs::Tier::memory(3 * kPage), mlbs::Tier::directory(dir / "fast", 4 * kPage),
               mlbs::Tier::directory(dir / "slow", 4 * kPage)};
  cfg.schedule = mlbs::Schedule::lifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<char> c(rt, "u", in_parts(4));
  for (std::uint64_t id = 0; id < 2; ++id) {
    fill(c, id, 4 * kPage);
    c.write(id);
  }
  fill(c, 2, 4 * kPage);
  expect_error<mlbs::CapacityError>([&] { c.write(2); }, {"id 2"});
  EXPECT_FALSE(c.contains(2));
  EXPECT_EQ(rt.stats().live_records, 8u) << "the refused record's first parts were taken back";
  c.read(1);
  EXPECT_TRUE(exact(c, 1, 4 * kPage));
  fill(c, 2, 4 * kPage);
  c.write(2);  // the id was not taken by the refused write
  for (std::uint64_t id : {2, 0}) {
    c.read(id);
    EXPECT_TRUE(exact(c, id, 4 * kPage));
  }
}

/// contains(id), asked until no other record's failure is raised by the asking.
bool held(const mlbs::Store<char>& c, std::uint64_t id) {
  for (;;) try {
      return c.contains(id);
    } catch (const mlbs::IoError&) {
    }
}

// Another record's failure raised in the middle of a read (every file removal fails): the read throws, its record stays whole and reads back exact.
TEST(StoreParts, AReadStoppedPartWayLosesNoRecord) {
  TempDir dir;
  mlbs::Config cfg;
  mlbs::Tier slow = mlbs::Tier::directory(dir / "slow");
  slow.faults = "remove:EIO";
  cfg.tiers = {mlbs::Tier::memory(8 * kPage), slow};
  cfg.schedule = mlbs::Schedule::fifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<char> c(rt, "u", in_parts(4));
  const std::uint64_t n = 16;
  for (std::uint64_t id = 0; id < n; ++id) {
    fill(c, id, 4 * kPage);
    c.write(id);
  }
  c.flush();
  std::size_t failed = 0;
  for (std::uint64_t id = 0; id < n; ++id) {
    for (int attempt = 0;; ++attempt) {
      ASSERT_LT(attempt, 64) << "id " << id << " never read back";
      try {
        c.read(id);
        ASSERT_TRUE(exact(c, id, 4 * kPage));
        break;
      } catch (const mlbs::IoError& e) {
        ++failed;
        ASSERT_TRUE(held(c, id)) << "id " << id << " lost by a read stopped by: " << e.what();
      }
    }
  }
  EXPECT_GT(failed, 0u) << "no removal failure was raised";
}

// What parts read with: a scratch read_into takes a whole record and releases it as read() does; a part of one is refused, the record kept.
TEST(StoreParts, AScratchReadIntoTakesWholeRecordsOnly) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::detail::StoreCore core(rt, "u", mlbs::detail::ElementKind::bytes);
  std::vector<char> data(3 * kPage + 1, 'x'), back(data.size());
  core.write(1, reinterpret_cast<const std::byte*>(data.data()), data.size());
  expect_error<mlbs::InvalidArgumentError>(
      [&] { core.read_into(1, reinterpret_cast<std::byte*>(back.data()), 1, data.size()); },
      {"persistent store only", "store 'u'", "id 1"});
  expect_error<mlbs::InvalidArgumentError>(
      [&] { core.read_into(1, reinterpret_cast<std::byte*>(back.data()), 0, data.size() - 1); }, {"id 1"});
  ASSERT_TRUE(core.contains(1)) << "a refused read consumes nothing";
  EXPECT_EQ(core.read_into(1, reinterpret_cast<std::byte*>(back.data()), 0, back.size()), data.size());
  EXPECT_EQ(back, data);
  EXPECT_FALSE(core.contains(1)) << "released, as read() releases a scratch record";
}

// parts 0 or above kMaxParts and lending a slot of a store in parts are typed errors naming the store.
TEST(StoreParts, WhatPartsDoNotSupportIsRefused) {
  TempDir dir;
  {
    mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
    expect_error<mlbs::InvalidArgumentError>([&] { mlbs::Store<char> c(rt, "u", in_parts(0)); },
                                             {"StoreOptions::parts is 0", "store 'u'"});
    expect_error<mlbs::InvalidArgumentError>(
        [&] { mlbs::Store<char> c(rt, "u", in_parts(mlbs::StoreOptions::kMaxParts + 1)); },
        {"StoreOptions::parts is 65", "store 'u'"});
    mlbs::detail::StoreCore core(rt, "v", mlbs::detail::ElementKind::bytes, in_parts(2));
    expect_error<mlbs::InvalidArgumentError>([&] { (void)core.lend_slot(kPage); }, {"2 parts", "store 'v'"});
    mlbs::Store<char> w(rt, "v");  // a whole store of the same name is another store
    EXPECT_TRUE(w.ids().empty());
    expect_error<mlbs::StoreBusyError>([&] { mlbs::Store<char> again(rt, "v", in_parts(4)); }, {"v#0"});
  }
}

// kAutoParts: the store picks its count from the working buffer's size and DRAM (4 parts where DRAM holds 2 records, whole where it holds 4 or the size is unknown) and round-trips exact.
TEST(StoreParts, AutoPartsChoosesFromTheRecordSizeAndDram) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo(), 24));  // DRAM: 24 pages
  const mlbs::StoreOptions automatic = in_parts(mlbs::StoreOptions::kAutoParts);
  mlbs::Store<char> two(rt, "two", automatic, 12 * kPage);
  EXPECT_EQ(two.parts(), 4u) << "DRAM holds 2 records: 8 parts of 3 pages";
  mlbs::Store<char> four(rt, "four", automatic, 6 * kPage);
  EXPECT_EQ(four.parts(), 1u) << "DRAM holds 4 records";
  mlbs::Store<char> unknown(rt, "unknown", automatic);
  EXPECT_EQ(unknown.parts(), 1u) << "no size to choose for";
  mlbs::Store<char> big(rt, "big", automatic, 48 * kPage);
  EXPECT_EQ(big.parts(), 16u) << "a record of twice DRAM: 8 parts in DRAM";
  for (std::uint64_t id = 0; id < 6; ++id) {
    fill(two, id, 12 * kPage);
    two.write(id);
  }
  EXPECT_EQ(two.info(5).part_bytes.size(), 4u);
  for (std::uint64_t id = 6; id-- > 0;) {
    two.read(id);
    ASSERT_TRUE(exact(two, id, 12 * kPage));
  }
}

// --- persistent stores in parts ---------------------------------------------

mlbs::Config persistent(const TempDir& dir) {
  mlbs::Config cfg = three_tiers(dir, mlbs::Schedule::lifo());
  cfg.durability = mlbs::Durability::persistent;
  cfg.shutdown_timeout_ms = 20000;
  return cfg;
}

const std::vector<std::size_t> kSizes = {0, 1, kPage - 1, 3 * kPage + 5, 8 * kPage + 1};

void write_records(mlbs::Store<char>& c, std::uint64_t first, std::uint64_t n) {
  for (std::uint64_t id = first; id < first + n; ++id) {
    fill(c, id, kSizes[id % kSizes.size()]);
    c.write(id);
  }
}

::testing::AssertionResult reads_back(mlbs::Store<char>& c, const std::vector<std::uint64_t>& ids) {
  if (c.ids() != ids) return ::testing::AssertionFailure() << c.ids().size() << " records listed, not " << ids.size();
  for (std::uint64_t id : ids) {
    c.read(id);
    if (auto ok = exact(c, id, kSizes[id % kSizes.size()]); !ok) return ok;
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::uint64_t> first_ids(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  for (std::uint64_t id = 0; id < n; ++id) v[id] = id;
  return v;
}

/// Where part `j` of record `id` lies on the slow tier, as its journal names it.
mlbs::tiers::StoredObject part_bytes(const TempDir& dir, const std::string& store, std::uint32_t j, std::uint64_t id) {
  const fs::path space = dir.path() / "slow" / fmt::format("{}#{}", store, j);
  const auto replay = mlbs::catalog::replay_journal((space / "journal.mlbs").string());
  const auto e = replay.live.find(id);
  if (e == replay.live.end()) return {};
  return mlbs::tiers::locate_stored_object(space, id, e->second.generation);
}

/// Records [0, n) written to store "p" in 4 parts by a runtime that then
/// closes (draining them); `more` after them once those are flushed.
void written_in_parts(const TempDir& dir, std::uint64_t n, std::uint64_t more = 0) {
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<char> c(rt, "p", in_parts(4));
  write_records(c, 0, n);
  if (!more) return;
  c.flush();
  write_records(c, n, more);
}

/// A later runtime with store "p" reopened in 4 parts, and what its recovery said on stderr.
struct Recovered {
  explicit Recovered(const TempDir& dir) {
    ::testing::internal::CaptureStderr();
    rt.emplace(persistent(dir));
    store.emplace(*rt, "p", in_parts(4));
    said = ::testing::internal::GetCapturedStderr();
  }
  std::optional<mlbs::Runtime> rt;
  std::optional<mlbs::Store<char>> store;
  std::string said;
};

// Records of a persistent store in parts are durable after flush() and come back byte-exact in a later runtime, kept there (a persistent read) and unique.
TEST(PersistentParts, RecordsSurviveTheRuntimeByteExact) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> c(rt, "p", in_parts(4));
    write_records(c, 0, 10);
    c.flush();
    EXPECT_TRUE(c.info(8).durable);
    EXPECT_EQ(c.info(8).part_tiers.size(), 4u);
  }
  EXPECT_TRUE(fs::exists(dir.path() / "slow" / "p.parts")) << "the part count is recorded beside the store";
  for (int run = 0; run < 2; ++run) {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> c(rt, "p", in_parts(4));
    ASSERT_TRUE(reads_back(c, first_ids(10))) << "run " << run;
    EXPECT_EQ(rt.stats().live_records, 40u) << "a persistent read keeps every part";
    expect_error<mlbs::DuplicateIdError>([&] { write_records(c, 3, 1); }, {"store 'p", "id 3"});
    EXPECT_EQ(rt.stats().live_records, 40u) << "a refused write leaves no part behind";
  }
}

// A crash after flush() loses no flushed record; records it cut off between their parts are dropped (named on stderr) and their ids can be written again.
TEST(PersistentParts, ACrashLosesNoFlushedRecordAndLeavesNoPartialOne) {
  TempDir dir;
  mlbs::test::crash_after([&] {
    auto* rt = new mlbs::Runtime(persistent(dir));  // leaked: a crash runs no destructor
    auto* c = new mlbs::Store<char>(*rt, "p", in_parts(4));
    write_records(*c, 0, 6);
    c->flush();
    write_records(*c, 6, 6);
  });
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<char> c(rt, "p", in_parts(4));
  const std::vector<std::uint64_t> ids = c.ids();
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(std::vector<std::uint64_t>(ids.begin(), ids.begin() + 6), first_ids(6)) << "a flushed record was lost";
  EXPECT_TRUE(reads_back(c, ids));
  EXPECT_EQ(rt.stats().live_records, 4 * ids.size()) << "parts of records not whole in every part are left";
  for (std::uint64_t id = 6; id < 12; ++id)
    if (!c.contains(id)) write_records(c, id, 1);
  c.flush();
  EXPECT_TRUE(reads_back(c, first_ids(12)));
}

// A record a crash cut off between its parts (one part's put never journaled) is dropped from the others at recovery, named on stderr; the rest read back.
TEST(PersistentParts, ARecordMissingAPartIsDroppedAtRecovery) {
  TempDir dir;
  written_in_parts(dir, 4, 1);  // record 4's parts' puts are the last entry of each part's journal
  const fs::path journal = dir.path() / "slow" / "p#3" / "journal.mlbs";
  fs::resize_file(journal, fs::file_size(journal) - mlbs::catalog::Journal::kEntryBytes);  // part 3's put torn
  Recovered later(dir);
  mlbs::Store<char>& c = *later.store;
  EXPECT_NE(later.said.find("store 'p': record 4 lacks part 3 of 4"), std::string::npos) << later.said;
  EXPECT_FALSE(c.contains(4));
  EXPECT_EQ(later.rt->stats().live_records, 16u) << "record 4's other parts are dropped";
  EXPECT_TRUE(reads_back(c, first_ids(4)));
  write_records(c, 4, 1);  // the id is free again
  c.flush();
  EXPECT_TRUE(reads_back(c, first_ids(5)));
}

// A part that fails verification at recovery takes its record with it (counted as a checksum failure); the others read back.
TEST(PersistentParts, APartThatFailsVerificationDropsItsRecord) {
  TempDir dir;
  written_in_parts(dir, 5);
  const auto bad = part_bytes(dir, "p", 1, 3);  // record 3: 3 pages + 5 bytes, a page in each part but the last
  ASSERT_TRUE(bad.found);
  {
    std::fstream f(bad.file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bad.offset + 10));
    f.put('\x7f' ^ byte_of(3, kPage + 10));
    ASSERT_TRUE(f);
  }
  Recovered later(dir);
  EXPECT_NE(later.said.find("record 3 lacks part 1 of 4"), std::string::npos) << later.said;
  EXPECT_GT(later.rt->stats().checksum_failures, 0u);
  EXPECT_TRUE(reads_back(*later.store, {0, 1, 2, 4}));
}

// A persistent store opens only with the part count it was written with (whole too) while it holds records; emptied, it takes another; open in parts, its name is busy.
TEST(PersistentParts, AStoreOpensWithTheCountItWasWrittenWith) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> c(rt, "p", in_parts(4));
    write_records(c, 0, 3);
    expect_error<mlbs::StoreBusyError>([&] { mlbs::Store<char> w(rt, "p"); }, {"store 'p'"});
    mlbs::Store<char> q(rt, "q");
    write_records(q, 0, 3);
  }
  mlbs::Runtime rt(persistent(dir));
  expect_error<mlbs::InvalidArgumentError>([&] { mlbs::Store<char> c(rt, "p", in_parts(2)); },
                                           {"store 'p'", "in 4 parts and is opened in 2", "parts = 4"});
  expect_error<mlbs::InvalidArgumentError>([&] { mlbs::Store<char> c(rt, "p"); },
                                           {"store 'p'", "in 4 parts and is opened whole"});
  expect_error<mlbs::InvalidArgumentError>([&] { mlbs::Store<char> c(rt, "q", in_parts(2)); },
                                           {"store 'q'", "whole and is opened in 2 parts", "parts = 1"});
  {
    mlbs::Store<char> c(rt, "p", in_parts(4));
    EXPECT_TRUE(reads_back(c, first_ids(3))) << "a refused open changes nothing";
    for (std::uint64_t id = 0; id < 3; ++id) c.erase(id);
    c.flush();
  }
  {
    mlbs::Store<char> c(rt, "p", in_parts(2));  // empty: it takes the new count
    write_records(c, 0, 5);
  }
  mlbs::Store<char> c(rt, "p", in_parts(2));
  EXPECT_TRUE(reads_back(c, first_ids(5)));
}

// kAutoParts on a persistent store takes the count its records were written with (whole too), whatever the size would choose.
TEST(PersistentParts, AutoPartsTakesTheRecordedCount) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> c(rt, "p", in_parts(2));
    write_records(c, 0, 5);
    mlbs::Store<char> w(rt, "w");
    write_records(w, 0, 5);
  }
  mlbs::Runtime rt(persistent(dir));
  const mlbs::StoreOptions automatic = in_parts(mlbs::StoreOptions::kAutoParts);
  mlbs::Store<char> c(rt, "p", automatic, 12 * kPage);  // alone, this size would choose 4
  EXPECT_EQ(c.parts(), 2u);
  EXPECT_TRUE(reads_back(c, first_ids(5)));
  mlbs::Store<char> w(rt, "w", automatic, 12 * kPage);
  EXPECT_EQ(w.parts(), 1u) << "its records are kept whole";
  EXPECT_TRUE(reads_back(w, first_ids(5)));
}

}  // namespace
