// Persistent durability: records reach the last tier, survive the runtime (and
// a crash after flush(), simulated by a child process that exits without
// running destructors), are recovered and verified by a later runtime.
// PersistentRace holds a helper inside one copy (a gate in the directory
// backend) to hit erase/write/close while that record is busy, or a reader
// inside its copy out of a DRAM slot (a userfaultfd destination).
// PersistentInspect runs tools/mlbs-inspect when $MLBS_INSPECT names it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catalog/checksum.hpp"
#include "catalog/journal.hpp"
#include "mlbs/mlbs.hpp"
#include "support/backend_override.hpp"
#include "support/crash.hpp"
#include "support/gate.hpp"
#include "support/inspect_tool.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/registry.hpp"
#include "tiers/wrappers/wrapped.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::crash_after;
using mlbs::test::TempDir;

constexpr std::size_t kElems = 4096;               // 16 KiB records
constexpr std::size_t kRecBytes = kElems * sizeof(float);
constexpr int kLast = 2;                           // index of the persistent tier

/// DRAM for 3 records, a fast tier with a quota of 4, an unlimited slow
/// (persistent) tier.
mlbs::Config persistent(const TempDir& dir, mlbs::Schedule schedule = mlbs::Schedule::lifo()) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecBytes),
               mlbs::Tier::directory(dir / "fast", 4 * kRecBytes),
               mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = std::move(schedule);
  cfg.durability = mlbs::Durability::persistent;
  cfg.shutdown_timeout_ms = 20000;
  return cfg;
}

float value(std::uint64_t id, std::size_t i, unsigned salt) {
  return float(id * 100000 + i + salt * 7);
}

void fill(mlbs::Store<float>& u, std::uint64_t id, unsigned salt = 0) {
  u.resize(kElems);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = value(id, i, salt);
}

void expect_content(const mlbs::Store<float>& u, std::uint64_t id, unsigned salt = 0) {
  ASSERT_EQ(u.size(), kElems) << "id " << id;
  for (std::size_t i = 0; i < u.size(); ++i)
    ASSERT_EQ(u[i], value(id, i, salt)) << "id " << id << " element " << i;
}

void write_range(mlbs::Store<float>& u, std::uint64_t first, std::uint64_t n, unsigned salt = 0) {
  for (std::uint64_t id = first; id < first + n; ++id) {
    fill(u, id, salt);
    u.write(id);
  }
}

/// Reads ids [first, first + n) back and checks every element: write_range's twin.
void read_range(mlbs::Store<float>& u, std::uint64_t first, std::uint64_t n, unsigned salt = 0) {
  for (std::uint64_t id = first; id < first + n; ++id) {
    u.read(id);
    expect_content(u, id, salt);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

std::vector<std::uint64_t> iota_ids(std::uint64_t first, std::uint64_t n) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t id = first; id < first + n; ++id) v.push_back(id);
  return v;
}

fs::path store_dir(const TempDir& dir, const std::string& store) {
  return dir.path() / "slow" / store;
}

fs::path journal_path(const TempDir& dir, const std::string& store) {
  return store_dir(dir, store) / "journal.mlbs";
}

/// The live journal entry of `id`, as a later runtime would replay it.
std::optional<mlbs::catalog::JournalEntry> live_entry(const TempDir& dir, const std::string& store,
                                                      std::uint64_t id) {
  auto replay = mlbs::catalog::replay_journal(journal_path(dir, store).string());
  auto it = replay.live.find(id);
  if (it == replay.live.end()) return std::nullopt;
  return it->second;
}

/// Where record `id`'s bytes are on the persistent tier, per the journal, in
/// this run's layout: its own file, or an extent of a log.
mlbs::tiers::StoredObject record_bytes(const TempDir& dir, const std::string& store, std::uint64_t id) {
  auto e = live_entry(dir, store, id);
  if (!e) return {};
  return mlbs::tiers::locate_stored_object(store_dir(dir, store), id, e->generation);
}

/// Files of `dir` whose name ends in `suffix` (non-recursive).
std::vector<fs::path> entries_ending(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

void flip_byte(const fs::path& file, std::uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << file;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(~c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  ASSERT_TRUE(f) << file;
}

void append_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream f(file, std::ios::binary | std::ios::app);
  ASSERT_TRUE(f) << file;
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f) << file;
}

// --- a gate in the directory backend ------------------------------------------
// Holds a helper inside a copy of one record (support/gate.hpp) so a test can
// act while that record is busy.

using mlbs::test::gate;

class GatedBackend final : public mlbs::tiers::WrappedBackend {
 public:
  GatedBackend(int index, const mlbs::Tier& desc)
      : WrappedBackend(mlbs::tiers::make_directory_backend(index, desc)) {}

 private:
  using ObjectRef = mlbs::tiers::ObjectRef;
  std::unique_ptr<mlbs::tiers::ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override {
    gate().pass(index(), ref.id);
    return WrappedBackend::do_create(ref, size);
  }
  std::unique_ptr<mlbs::tiers::ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override {
    gate().pass(index(), ref.id);
    return WrappedBackend::do_open(ref, size);
  }
};

struct OpenGateOnExit {
  ~OpenGateOnExit() { gate().release(); }
};

/// While alive, "directory" tiers go through GatedBackend (construct it before
/// the Runtime; the gate is inert until armed).
struct GatedDirectories {
  mlbs::test::BackendOverride override_{"directory", [](int index, const mlbs::Tier& desc, const mlbs::core::Group*) {
    return std::unique_ptr<mlbs::tiers::Backend>(std::make_unique<GatedBackend>(index, desc));
  }};
  ~GatedDirectories() { gate().release(); }  // before the built-in factory comes back
};

// After flush() every record is durable on the last tier and its file exists under <slow>/<store>/.
TEST(Persistent, FlushMakesEveryRecordDurableOnTheLastTier) {
  TempDir dir;
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  const std::uint64_t n = 12;
  write_range(u, 0, n);
  u.flush();
  for (std::uint64_t id = 0; id < n; ++id) {
    const mlbs::RecordInfo info = u.info(id);
    EXPECT_TRUE(info.durable) << "id " << id;
    EXPECT_NE(std::find(info.tiers.begin(), info.tiers.end(), kLast), info.tiers.end())
        << "id " << id << " has no copy on the persistent tier";
    ASSERT_TRUE(live_entry(dir, "wavefield", id)) << "id " << id << " has no live journal entry";
    const auto where = record_bytes(dir, "wavefield", id);
    ASSERT_TRUE(where.found) << where.file;
    EXPECT_EQ(where.bytes, kRecBytes) << where.file;
    EXPECT_EQ(live_entry(dir, "wavefield", id)->checksum, info.checksum) << "id " << id;
  }
  EXPECT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), n);
  EXPECT_TRUE(fs::exists(store_dir(dir, "wavefield") / "LOCK"));
  EXPECT_EQ(rt.stats().tiers[kLast].records, n);
}

// A new runtime on the same tiers recovers every flushed record: ids() lists them and every byte reads back.
TEST(Persistent, NewRuntimeRecoversFlushedRecords) {
  TempDir dir;
  const std::uint64_t n = 10;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, n);
    u.flush();
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), iota_ids(0, n));
  for (std::uint64_t id = n; id-- > 0;) {
    EXPECT_TRUE(u.info(id).durable) << "id " << id;
    u.read(id);
    expect_content(u, id);
  }
  EXPECT_EQ(rt.stats().checksum_failures, 0u);
}

// Destroying the store and runtime without flush() drains: a new runtime recovers every record.
TEST(Persistent, DestructionWithoutFlushDrains) {
  TempDir dir;
  const std::uint64_t n = 16;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, n);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  ASSERT_EQ(u.ids(), iota_ids(0, n));
  read_range(u, 0, n);
}

// A runtime destroyed while its store is still alive drains too; the store closes afterwards.
TEST(Persistent, RuntimeDestroyedBeforeItsStoreDrains) {
  TempDir dir;
  const std::uint64_t n = 8;
  {
    std::optional<mlbs::Runtime> rt(std::in_place, persistent(dir));
    std::optional<mlbs::Store<float>> u(std::in_place, *rt, "wavefield", kElems);
    write_range(*u, 0, n);
    rt.reset();
    u.reset();
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  ASSERT_EQ(u.ids(), iota_ids(0, n));
  read_range(u, 0, n);
}

// In persistent mode read() keeps the record: contains() stays true and a second read gives the same bytes.
TEST(Persistent, ReadKeepsTheRecord) {
  TempDir dir;
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield", kElems);
  const std::uint64_t n = 10;
  write_range(u, 0, n);
  // Half before flush (DRAM copies not yet durable), half after (swap path).
  for (std::uint64_t id = n; id-- > n / 2;) {
    u.read(id);
    expect_content(u, id);
    EXPECT_TRUE(u.contains(id)) << "id " << id;
  }
  u.flush();
  for (int round = 0; round < 2; ++round)
    for (std::uint64_t id = n; id-- > 0;) {
      u.read(id);
      expect_content(u, id);
      EXPECT_TRUE(u.contains(id)) << "id " << id << " round " << round;
    }
  EXPECT_EQ(u.ids(), iota_ids(0, n));
  EXPECT_EQ(rt.stats().live_records, n);
}

// A recovered record is kept by read() too, and writing its id again is a DuplicateIdError.
TEST(Persistent, RecoveredRecordIsKeptAndCannotBeOverwritten) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 2);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  u.read(1);
  u.read(1);
  expect_content(u, 1);
  EXPECT_TRUE(u.contains(1));
  EXPECT_THROW(u.write(1), mlbs::DuplicateIdError);
}

// An erase in persistent mode survives reopen: the id and its file are gone after recovery.
TEST(Persistent, EraseSurvivesReopen) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 6);
    u.flush();
    u.erase(2);
    u.erase(4);
    EXPECT_FALSE(u.contains(2));
  }
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 3, 5}));
    EXPECT_THROW(u.read(2), mlbs::UnknownIdError);
    for (std::uint64_t id : {0, 1, 3, 5}) {
      u.read(id);
      expect_content(u, id);
    }
  }
  EXPECT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), 4u);
}

// An erase of a record not yet durable (no flush) also survives reopen.
TEST(Persistent, EraseBeforeFlushSurvivesReopen) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 6);
    u.erase(0);
    u.erase(5);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

// A re-write of an erased id survives reopen with the new bytes, in the same runtime or a later one.
TEST(Persistent, RewriteOfErasedIdSurvivesReopen) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 4, /*salt=*/1);
    u.flush();
    u.erase(1);
    fill(u, 1, /*salt=*/2);
    u.write(1);
  }
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    ASSERT_EQ(u.ids(), iota_ids(0, 4));
    u.read(1);
    expect_content(u, 1, 2);
    // Second generation, across runtimes: erase a recovered record, write it anew.
    u.erase(3);
    fill(u, 3, 3);
    u.write(3);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  ASSERT_EQ(u.ids(), iota_ids(0, 4));
  for (std::uint64_t id : {0, 2}) {
    u.read(id);
    expect_content(u, id, 1);
  }
  u.read(1);
  expect_content(u, 1, 2);
  u.read(3);
  expect_content(u, 3, 3);
  EXPECT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), 4u) << "old generations left";
}

// An id whose record (the newest generation) was erased in one run is written again in the next and recovered in a third.
TEST(Persistent, IdErasedInOneRunIsRewrittenInTheNext) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 3, 1);
    u.flush();
    u.erase(2);  // the newest record: a later run may hand out its generation again
  }
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1}));
    fill(u, 2, 5);
    u.write(2);
    fill(u, 7, 5);
    u.write(7);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 7}));
  u.read(2);
  expect_content(u, 2, 5);
  u.read(7);
  expect_content(u, 7, 5);
  u.read(1);
  expect_content(u, 1, 1);
}

// A torn journal tail (garbage appended between runs) is ignored: every record recovers, and is cut off on the next append.
TEST(Persistent, TornJournalTailIsIgnored) {
  TempDir dir;
  const std::uint64_t n = 6;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, n);
  }
  const fs::path journal = journal_path(dir, "wavefield");
  const auto clean_size = fs::file_size(journal);
  append_bytes(journal, std::string("\x4d\x4c\x42\x4a garbage", 13));
  {
    auto replay = mlbs::catalog::replay_journal(journal.string());
    EXPECT_EQ(replay.torn_bytes, 13u);
    EXPECT_EQ(replay.valid_bytes, clean_size);
  }
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    ASSERT_EQ(u.ids(), iota_ids(0, n));
    read_range(u, 0, n);
    write_range(u, n, 2);
    u.flush();
  }
  auto replay = mlbs::catalog::replay_journal(journal.string());
  EXPECT_EQ(replay.torn_bytes, 0u) << "the torn tail was not cut off before appending";
  EXPECT_EQ(replay.live.size(), n + 2);
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), iota_ids(0, n + 2));
}

// A record whose file was corrupted between runs is not listed after recovery (checksum_failures > 0); the others are.
TEST(Persistent, CorruptedRecordFileIsSkipped) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 5);
  }
  const auto three = record_bytes(dir, "wavefield", 3);
  flip_byte(three.file, three.offset + kRecBytes / 2);
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 4}));
  EXPECT_FALSE(u.contains(3));
  EXPECT_GT(rt.stats().checksum_failures, 0u);
  for (std::uint64_t id : {0, 1, 2, 4}) {
    u.read(id);
    expect_content(u, id);
  }
  // The id is free again: a new record under it is durable and recovered.
  fill(u, 3, 9);
  u.write(3);
  u.flush();
  EXPECT_TRUE(u.info(3).durable);
}

// A store an older mlbs wrote (a v2 journal: plain xxHash3 checksums) is recovered and verified as it was
// hashed: intact records come back, a damaged one is skipped; new records journal the pieces kind beside them.
TEST(Persistent, StoreOfAnOlderMlbsIsVerifiedAsItWasHashed) {
  using mlbs::catalog::ChecksumKind;
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 5);
    u.flush();
  }
  // What v2 wrote: the same files, each put with the plain xxHash3 of its bytes.
  const std::string journal = journal_path(dir, "wavefield").string();
  std::vector<mlbs::catalog::JournalEntry> old;
  for (auto [id, e] : mlbs::catalog::replay_journal(journal).live) {
    const auto where = record_bytes(dir, "wavefield", id);
    std::string bytes(where.bytes, '\0');
    std::ifstream in(where.file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(where.offset));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(bytes.size())) << "id " << id;
    e.checksum = mlbs::catalog::checksum(bytes.data(), bytes.size());
    e.checksum_kind = ChecksumKind::xxh3;
    old.push_back(e);
  }
  ASSERT_EQ(old.size(), 5u);
  mlbs::catalog::write_journal(journal, old);
  {
    std::fstream f(journal, std::ios::in | std::ios::out | std::ios::binary);
    f.write("MLBS-JOURNAL-v2\n", 16);
  }
  if (const char* tool = mlbs::test::inspect_tool()) {  // mlbs-inspect verifies them as plain xxHash3 too
    const std::string out = dir / "inspect.json";
    const std::string cmd = std::string("'") + tool + "' --verify --json '" + (dir / "slow") + "' wavefield > '" + out + "' 2>&1";
    const int status = std::system(cmd.c_str());
    std::ifstream f(out);
    const std::string json((std::istreambuf_iterator<char>(f)), {});
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << json;
    EXPECT_NE(json.find("\"checksum_kind\": \"xxh3\""), std::string::npos) << json;
  }
  const auto three = record_bytes(dir, "wavefield", 3);
  flip_byte(three.file, three.offset + kRecBytes / 2);
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 4})) << "verified as plain xxHash3, the damaged one skipped";
    EXPECT_EQ(rt.stats().checksum_failures, 1u);
    EXPECT_EQ(u.info(1).checksum, old[1].checksum);
    for (std::uint64_t id : {0, 1, 2, 4}) {
      u.read(id);
      expect_content(u, id);
    }
    write_range(u, 7, 1);
    u.flush();
  }
  EXPECT_EQ(live_entry(dir, "wavefield", 7)->checksum_kind, ChecksumKind::pieces);
  EXPECT_EQ(live_entry(dir, "wavefield", 2)->checksum_kind, ChecksumKind::xxh3);
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 2, 4, 7}));
  EXPECT_EQ(rt.stats().checksum_failures, 1u) << "both kinds verified again: only record 3 is still damaged";
  for (std::uint64_t id : {0, 7}) {
    u.read(id);
    expect_content(u, id);
  }
}

// A record file truncated between runs is skipped too, and counted like a checksum failure (docs/architecture.md).
TEST(Persistent, TruncatedRecordFileIsSkippedAndCounted) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 3);
  }
  // Cut the record that ends its file (in a log, the last one appended: cutting
  // any other would cut those after it too) in the middle.
  std::uint64_t victim = 1;
  mlbs::tiers::StoredObject cut = record_bytes(dir, "wavefield", victim);
  for (std::uint64_t id = 0; id < 3; ++id)
    if (const auto w = record_bytes(dir, "wavefield", id); w.offset > cut.offset) {
      victim = id;
      cut = w;
    }
  fs::resize_file(cut.file, cut.offset + kRecBytes / 2);
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  std::vector<std::uint64_t> rest;
  for (std::uint64_t id = 0; id < 3; ++id)
    if (id != victim) rest.push_back(id);
  EXPECT_EQ(u.ids(), rest) << "id " << victim << " was cut short";
  EXPECT_GT(rt.stats().checksum_failures, 0u)
      << "a record that fails its size check is skipped but not counted";
}

// Copies a killed run left that no journal entry names (never journaled, or a stale generation) are removed at recovery; live records and later generations are untouched.
TEST(Persistent, RecoveryRemovesCopiesNoJournalEntryNames) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 3);
    u.flush();
  }
  {
    // What a crash between a copy and its journal entry leaves, in this run's layout.
    mlbs::Tier desc = mlbs::Tier::directory(dir / "slow");
    desc.layout = mlbs::tiers::hooks::test_layout().value_or(mlbs::Layout::file_per_record);
    auto tier = mlbs::tiers::make_backend(kLast, desc);
    tier->probe();
    tier->create_space("wavefield");
    const std::string space = "wavefield", store = "wavefield";
    std::vector<std::byte> bytes(kRecBytes, std::byte{0x5a});
    for (const auto& [id, gen] : {std::pair{7ull, 1000ull}, std::pair{0ull, 999ull}}) {
      auto w = tier->create({space, id, gen, store}, bytes.size());
      w->write(0, bytes.data(), bytes.size());
      w->commit(true);
    }
  }
  ASSERT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), 5u);
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    EXPECT_EQ(u.ids(), iota_ids(0, 3));
    EXPECT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), 3u) << "orphans left";
    read_range(u, 0, 3);
    write_range(u, 3, 1);  // a new generation beyond the orphans' never meets their names
    u.flush();
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), iota_ids(0, 4));
  read_range(u, 0, 4);
  EXPECT_EQ(mlbs::test::stored_records(store_dir(dir, "wavefield")), 4u);
}

// The scratch cache folder of a runtime that died is removed by the next runtime on that tier; a live runtime's is not.
TEST(Persistent, ScratchOfADeadRuntimeIsRemovedByTheNext) {
  TempDir dir;
  crash_after([&] {
    auto* rt = new mlbs::Runtime(persistent(dir));  // leaked: a crash runs no destructor
    auto* u = new mlbs::Store<float>(*rt, "wavefield", kElems);
    write_range(*u, 0, 10);
    u->flush();
  });
  ASSERT_EQ(entries_ending(dir.path() / "fast", ".scratch").size(), 1u);
  mlbs::Runtime live(persistent(dir));
  mlbs::Store<float> other(live, "other", kElems);
  EXPECT_EQ(entries_ending(dir.path() / "fast", ".scratch").size(), 1u) << "only the live runtime's folder is left";
  mlbs::Runtime next(persistent(dir));
  EXPECT_EQ(entries_ending(dir.path() / "fast", ".scratch").size(), 1u) << "a live runtime's folder was removed";
  mlbs::Store<float> u(next, "wavefield");
  EXPECT_EQ(u.ids(), iota_ids(0, 10));
}

// The same persistent store opened by two runtimes at once: StoreBusyError naming the store.
TEST(Persistent, SecondRuntimeOnTheSameStoreIsBusy) {
  TempDir dir;
  mlbs::Runtime a(persistent(dir));
  mlbs::Runtime b(persistent(dir));
  std::optional<mlbs::Store<float>> ua(std::in_place, a, "wavefield", kElems);
  write_range(*ua, 0, 2);
  try {
    mlbs::Store<float> ub(b, "wavefield");
    FAIL() << "a second runtime opened a persistent store that is open";
  } catch (const mlbs::StoreBusyError& e) {
    EXPECT_EQ(e.error_code(), EBUSY);
    EXPECT_EQ(e.context().store, "wavefield");
    EXPECT_NE(std::string(e.what()).find("wavefield"), std::string::npos) << e.what();
  }
  // The failed open left no cache folder of its own on the fast tier.
  EXPECT_EQ(entries_ending(dir.path() / "fast", ".scratch").size(), 1u);
  // Other names are independent; once the first closes, the second may open it.
  mlbs::Store<float> other(b, "other", kElems);
  ua.reset();
  mlbs::Store<float> ub(b, "wavefield");
  EXPECT_EQ(ub.ids(), iota_ids(0, 2));
}

// A persistent store's scratch caches on the fast tier are removed when the store closes; the last tier holds none.
TEST(Persistent, ScratchCachesAreRemovedWhenTheStoreCloses) {
  TempDir dir;
  mlbs::Runtime rt(persistent(dir));
  {
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 12);
    u.flush();
    for (std::uint64_t id = 12; id-- > 6;) {  // a read phase: prefetch fills DRAM and the fast tier
      u.read(id);
      expect_content(u, id);
    }
    EXPECT_EQ(entries_ending(dir.path() / "fast", ".scratch").size(), 1u);
    EXPECT_TRUE(entries_ending(dir.path() / "slow", ".scratch").empty())
        << "a persistent store needs no cache folder on its persistent tier";
  }
  EXPECT_TRUE(entries_ending(dir.path() / "fast", ".scratch").empty()) << "cache folder left on fast/";
  EXPECT_EQ(mlbs::test::stored_records(dir.path() / "fast"), 0u);
  EXPECT_EQ(mlbs::test::stored_records(dir.path() / "slow"), 12u);
  // The records are still there for the next store of that name.
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), iota_ids(0, 12));
}

// Reopening a store of the same name in the same runtime after an erase must not resurrect the erased record.
TEST(PersistentRace, ReopenInTheSameRuntimeAfterEraseDoesNotResurrect) {
  TempDir dir;
  mlbs::Runtime rt(persistent(dir));
  // The erase's journal entry and unlink are queued for a helper; closing the
  // store must not release the store (LOCK) before they are done. Repeated:
  // the window is a race between the helper and this thread.
  for (std::uint64_t round = 0; round < 20; ++round) {
    {
      mlbs::Store<float> u(rt, "wavefield", kElems);
      fill(u, round, 1);
      u.write(round);
      u.flush();
      u.erase(round);
    }
    mlbs::Store<float> u(rt, "wavefield");
    ASSERT_FALSE(u.contains(round)) << "round " << round << ": an erased record came back";
    ASSERT_TRUE(u.ids().empty()) << "round " << round;
  }
  auto replay = mlbs::catalog::replay_journal(journal_path(dir, "wavefield").string());
  EXPECT_TRUE(replay.live.empty());
  EXPECT_EQ(replay.torn_bytes, 0u);
}

/// A store with record `id` (salt 1) written, and a helper held inside its
/// copy to the persistent tier until the gate opens.
struct HeldPersistCopy {
  TempDir dir;
  GatedDirectories gated;
  mlbs::Runtime rt{persistent(dir)};
  OpenGateOnExit open_gate;  // before rt drains: a held helper would hang it
  mlbs::Store<float> u{rt, "wavefield", kElems};

  explicit HeldPersistCopy(std::uint64_t id) {
    gate().arm(kLast, id);
    fill(u, id, 1);
    u.write(id);
    gate().wait_entered();
  }
};

// A record written under an id whose erased predecessor is still being copied by a helper is kept, not dropped.
TEST(PersistentRace, WriteAfterEraseOfABusyRecordIsKept) {
  HeldPersistCopy held(5);
  mlbs::Store<float>& u = held.u;
  u.erase(5);
  EXPECT_FALSE(u.contains(5));
  fill(u, 5, 2);
  u.write(5);
  EXPECT_TRUE(u.contains(5)) << "write() returned but the new record 5 is gone";
  gate().release();
  u.flush();
  ASSERT_TRUE(u.contains(5)) << "write() returned but the new record 5 is gone";
  u.read(5);
  expect_content(u, 5, 2);
}

// flush() after erasing a record that a helper is still copying to the persistent tier waits until the erase is journaled (found by tests/crash).
TEST(PersistentRace, FlushAfterEraseOfARecordBeingPersistedWaitsForTheErase) {
  HeldPersistCopy held(5);
  mlbs::Store<float>& u = held.u;
  u.erase(5);
  std::mutex mu;
  std::condition_variable cv;
  bool returned = false;
  std::jthread flusher([&] {
    u.flush();
    std::lock_guard l(mu);
    returned = true;
    cv.notify_all();
  });
  {
    // Bounded: a correct flush() cannot return while the copy is held; the
    // buggy one returned at once, and the helper then journaled record 5's
    // put before its erase, so a crash in between brought it back.
    std::unique_lock l(mu);
    EXPECT_FALSE(cv.wait_for(l, std::chrono::milliseconds(200), [&] { return returned; }))
        << "flush() returned while erased record 5 could still be journaled as live";
  }
  gate().release();
  flusher.join();
  // What a crash now would recover.
  const auto replay = mlbs::catalog::replay_journal(journal_path(held.dir, "wavefield").string());
  EXPECT_EQ(replay.live.count(5), 0u) << "the acknowledged erase of record 5 is not durable";
}

// --- a reader held inside its copy out of a DRAM slot --------------------------
// The destination is a userfaultfd region: the reader's copy faults on its
// first page and waits in the kernel, its record pinned, until the test
// fills the region. Deterministic, no sleeping.

class HeldDestination {
 public:
  explicit HeldDestination(std::size_t bytes) : bytes_(bytes) {
    uffd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC));
    if (uffd_ < 0) return;
    uffdio_api api{};
    api.api = UFFD_API;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) data_ = static_cast<std::byte*>(p);
    if (::ioctl(uffd_, UFFDIO_API, &api) != 0 || !data_) {
      close();
      return;
    }
    uffdio_register reg{};
    reg.range = {reinterpret_cast<std::uint64_t>(data_), bytes_};
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) close();
  }
  ~HeldDestination() {
    release();
    close();
  }
  bool usable() const { return uffd_ >= 0; }
  std::byte* data() const { return data_; }
  /// Blocks until a thread faults on the region (it is inside its copy now).
  void wait_fault() const {
    uffd_msg msg{};
    ASSERT_EQ(::read(uffd_, &msg, sizeof msg), static_cast<ssize_t>(sizeof msg));
    ASSERT_EQ(msg.event, UFFD_EVENT_PAGEFAULT);
  }
  /// Maps zero pages under the whole region: the held copy goes on.
  void release() {
    if (uffd_ < 0 || released_) return;
    released_ = true;
    uffdio_zeropage zp{};
    zp.range = {reinterpret_cast<std::uint64_t>(data_), bytes_};
    ::ioctl(uffd_, UFFDIO_ZEROPAGE, &zp);
  }

 private:
  void close() {
    if (uffd_ >= 0) ::close(uffd_);
    uffd_ = -1;
    if (data_) ::munmap(data_, bytes_);
    data_ = nullptr;
  }
  std::size_t bytes_;
  int uffd_ = -1;
  std::byte* data_ = nullptr;
  bool released_ = false;
};

// A write into a DRAM full of records to be read and one a reader copies out of waits for that copy, never refused (found by mlbs-run).
TEST(PersistentRace, WriteWaitsForAReaderCopyingOutOfAFullDram) {
  TempDir dir;
  mlbs::Config cfg = persistent(dir, mlbs::Schedule::fifo());
  cfg.tiers = {mlbs::Tier::memory(2 * kRecBytes), mlbs::Tier::directory(dir / "slow")};
  mlbs::Runtime rt(cfg);
  mlbs::detail::StoreCore core(rt, "parts");
  std::vector<std::byte> rec(kRecBytes, std::byte{7});
  for (std::uint64_t id = 0; id < 2; ++id) core.write(id, rec.data(), rec.size());
  core.flush();
  HeldDestination held(kRecBytes);
  if (!held.usable()) GTEST_SKIP() << "userfaultfd is not available here";
  // DRAM holds records 0 and 1. Record 0, read now, stays pinned while its
  // copy is held; record 1 is the next read (FIFO), wanted in DRAM.
  std::jthread reader([&] { core.read_into(0, held.data(), 0, kRecBytes); });
  held.wait_fault();
  const std::vector<int> where = core.info(0).tiers;
  ASSERT_NE(std::find(where.begin(), where.end(), 0), where.end()) << "record 0 was read around DRAM: nothing is pinned";
  auto write = std::async(std::launch::async, [&] { core.write(10, rec.data(), rec.size()); });
  // Bounded: a correct write cannot return while record 0's slot is pinned
  // (the rest is wanted by the next reads); the buggy one was refused at once,
  // "every quota is full", as soon as the helpers were idle.
  EXPECT_EQ(write.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the write returned while the only droppable DRAM slot was pinned";
  held.release();
  reader.join();
  EXPECT_NO_THROW(write.get());
  EXPECT_EQ(held.data()[0], std::byte{7});
  core.flush();
  EXPECT_TRUE(core.contains(10));
}

// Erasing a recovered record while a helper prefetches it, then closing the store: the erase survives reopen.
TEST(PersistentRace, EraseDuringPrefetchSurvivesClose) {
  TempDir dir;
  GatedDirectories gated;
  constexpr std::uint64_t kRounds = 5;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 2 * kRounds);
  }
  // LIFO: after recovery the first prefetch is the newest record still there.
  for (std::uint64_t round = 0; round < kRounds; ++round) {
    const std::uint64_t victim = 2 * kRounds - 1 - round;
    {
      mlbs::Runtime rt(persistent(dir));
      OpenGateOnExit open_gate;
      gate().arm(kLast, victim);
      mlbs::Store<float> u(rt, "wavefield");  // recovery reads pass the gate (test thread)
      gate().wait_entered();                  // a helper is now prefetching `victim`
      u.erase(victim);
      gate().release();
    }  // the store closes at once, typically before that helper finishes
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    ASSERT_FALSE(u.contains(victim)) << "round " << round << ": erased record " << victim
                                     << " came back after reopen";
  }
}

// A Store<char> record of 6 bytes reopened as Store<float>: read throws SizeMismatchError and the record stays.
TEST(Persistent, CharRecordReopenedAsFloatIsASizeMismatch) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> c(rt, "bytes");
    for (char ch : std::string("abcdef")) c.push_back(ch);
    c.write(1);
  }
  mlbs::Runtime rt(persistent(dir));
  {
    mlbs::Store<float> f(rt, "bytes");
    ASSERT_EQ(f.ids(), std::vector<std::uint64_t>{1});
    EXPECT_EQ(f.info(1).size_bytes, 6u);
    EXPECT_THROW(f.read(1), mlbs::SizeMismatchError);
    EXPECT_TRUE(f.contains(1));
  }
  mlbs::Store<char> c(rt, "bytes");
  c.read(1);
  EXPECT_EQ(std::string(c.begin(), c.end()), "abcdef");
}

// An empty record is durable and recovered as empty.
TEST(Persistent, EmptyRecordSurvivesReopen) {
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield");
    u.write(5);
    u.flush();
    EXPECT_TRUE(u.info(5).durable);
  }
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield", 3);
  ASSERT_EQ(u.ids(), std::vector<std::uint64_t>{5});
  u.read(5);
  EXPECT_EQ(u.size(), 0u);
}

// A crash right after flush() returns loses nothing written before it; what was written after is intact or absent.
TEST(Persistent, CrashAfterFlushLosesNothingFlushed) {
  TempDir dir;
  const std::uint64_t flushed = 8, unflushed = 6;
  crash_after([&] {
    auto* rt = new mlbs::Runtime(persistent(dir));   // leaked: a crash runs no destructor
    auto* u = new mlbs::Store<float>(*rt, "wavefield", kElems);
    write_range(*u, 0, flushed);
    u->flush();
    write_range(*u, flushed, unflushed);
  });
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  const auto ids = u.ids();
  for (std::uint64_t id = 0; id < flushed; ++id)
    EXPECT_TRUE(u.contains(id)) << "flushed record " << id << " lost in the crash";
  for (std::uint64_t id : ids) {
    ASSERT_LT(id, flushed + unflushed);
    u.read(id);
    expect_content(u, id);
  }
  EXPECT_EQ(rt.stats().checksum_failures, 0u);
}

// A crash with nothing flushed leaves a store that opens, and every record it lists reads back byte-exact.
TEST(Persistent, CrashWithoutFlushLeavesAConsistentStore) {
  TempDir dir;
  crash_after([&] {
    auto* rt = new mlbs::Runtime(persistent(dir));
    auto* u = new mlbs::Store<float>(*rt, "wavefield", kElems);
    write_range(*u, 0, 10);
  });
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  for (std::uint64_t id : u.ids()) {
    ASSERT_LT(id, 10u);
    u.read(id);
    expect_content(u, id);
  }
  // The crashed runtime's LOCK died with it: the store is writable again.
  write_range(u, 100, 1);
  u.flush();
}

// An erase made before flush() survives a crash after flush() returns, like the writes before it.
TEST(Persistent, EraseBeforeFlushSurvivesACrash) {
  TempDir dir;
  crash_after([&] {
    auto* rt = new mlbs::Runtime(persistent(dir));
    auto* u = new mlbs::Store<float>(*rt, "wavefield", kElems);
    write_range(*u, 0, 4);
    u->flush();
    u->erase(2);
    u->flush();  // a barrier: everything asked before it is on disk when it returns
  });
  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<float> u(rt, "wavefield");
  EXPECT_EQ(u.ids(), (std::vector<std::uint64_t>{0, 1, 3}))
      << "flush() returned before the erase of record 2 was journaled";
}

// mlbs-inspect (path in $MLBS_INSPECT, else the one built beside this suite) prints the catalog, verifies files, and exits 1 on a corrupted one, 2 on bad usage.
TEST(PersistentInspect, ListsVerifiesAndReportsCorruption) {
  const char* tool = mlbs::test::inspect_tool();
  if (!tool) GTEST_SKIP() << "set MLBS_INSPECT to the mlbs-inspect binary";
  TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<float> u(rt, "wavefield", kElems);
    write_range(u, 0, 4);
    u.flush();
    u.erase(1);
  }
  const std::string slow = dir / "slow";
  const std::string out = dir / "inspect.out";
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string("'") + tool + "' " + args + " > '" + out + "' 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  auto output = [&] {
    std::ifstream f(out);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(run("--help"), 0);
  EXPECT_NE(output().find("Usage"), std::string::npos) << output();
  EXPECT_EQ(run(""), 2);
  EXPECT_EQ(run("--bogus '" + slow + "' wavefield"), 2);
  EXPECT_EQ(run("'" + slow + "' nosuchstore"), 2) << output();

  EXPECT_EQ(run("'" + slow + "' wavefield"), 0) << output();
  std::string text = output();
  EXPECT_NE(text.find("live records  3"), std::string::npos) << text;
  // Record 0's file, or the log (and offset) that holds it.
  const auto zero = record_bytes(dir, "wavefield", 0);
  const std::string shown = zero.file.extension() == ".rec"
                                ? zero.file.filename().string()
                                : zero.file.filename().string() + "@" + std::to_string(zero.offset);
  EXPECT_NE(text.find(shown), std::string::npos) << text;

  EXPECT_EQ(run("--verify '" + slow + "' wavefield"), 0) << output();
  EXPECT_EQ(run("--verify --json '" + slow + "' wavefield"), 0) << output();
  text = output();
  EXPECT_EQ(text.front(), '{') << text;
  EXPECT_NE(text.find("\"live_records\": 3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"verify\": \"OK\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"checksum_kind\": \"pieces\""), std::string::npos) << text;

  const auto two = record_bytes(dir, "wavefield", 2);
  flip_byte(two.file, two.offset + 100);
  EXPECT_EQ(run("'" + slow + "' wavefield"), 0) << "no --verify: checksums are not read";
  EXPECT_EQ(run("--verify '" + slow + "' wavefield"), 1) << output();
  EXPECT_NE(output().find("BAD"), std::string::npos) << output();
}

}  // namespace
