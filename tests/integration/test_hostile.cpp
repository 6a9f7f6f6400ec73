// Hostile input to persistent stores, as an adversarial user tries it: a last
// tier whose device fills (a real tmpfs where this process may mount one,
// else injected ENOSPC), a quota too small for what was accepted, a shutdown
// over a stuck transfer, and journals that were damaged, cut short or
// removed. Every wait must end with a typed error; damage must never be a
// reason to delete record files; mlbs-inspect reports and salvages.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "catalog/journal.hpp"
#include "mlbs/mlbs.hpp"
#include "support/inspect_tool.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/layout.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::stored_records;
using mlbs::test::TempDir;

constexpr std::uint64_t MiB = 1ull << 20;

/// Runs `f` and fails the whole test binary if it does not return within
/// `limit`: a hang must not pass as a slow test (nor block the suite).
template <class F>
auto within(std::chrono::seconds limit, const char* what, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(limit) == std::future_status::timeout) {
    std::fprintf(stderr, "%s did not return within %lld s: it hangs\n", what, static_cast<long long>(limit.count()));
    std::abort();
  }
  return done.get();
}

void fill(mlbs::Store<std::byte>& s, std::uint64_t id, std::size_t bytes) {
  s.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) s[i] = std::byte(static_cast<unsigned char>(id * 131 + i * 7 + (i >> 12)));
}

bool holds(const mlbs::Store<std::byte>& s, std::uint64_t id, std::size_t bytes) {
  if (s.size() != bytes) return false;
  for (std::size_t i = 0; i < bytes; ++i)
    if (s[i] != std::byte(static_cast<unsigned char>(id * 131 + i * 7 + (i >> 12)))) return false;
  return true;
}

// --- a persistent tier on a device that runs full -----------------------------

/// The last tier on a device of `device_bytes`, `taken_bytes` of it held by
/// another file: a tmpfs of its own where this process may mount one. Else
/// (not root, a container without CAP_SYS_ADMIN) the tier injects ENOSPC from
/// its `full_after`-th write on for as long as a flag file exists, as such a
/// device would until room is freed (make_room() removes the flag).
class SmallDevice {
 public:
  SmallDevice(const TempDir& dir, std::uint64_t device_bytes, std::uint64_t taken_bytes, unsigned full_after)
      : path_(dir.path() / "pfs"), taken_(dir.path() / "pfs" / "taken") {
    fs::create_directories(path_);
    const std::string opts = "size=" + std::to_string(device_bytes);
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, opts.c_str()) == 0;
    if (!mounted_) taken_ = dir.path() / "device-full";
    std::ofstream taken(taken_, std::ios::binary);
    const std::string block(1 << 16, 'x');
    for (std::uint64_t n = 0; mounted_ && n < taken_bytes; n += block.size()) taken.write(block.data(), block.size());
    if (!mounted_) faults_ = "write:ENOSPC@" + std::to_string(full_after) + "?" + taken_.string();
  }
  ~SmallDevice() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  mlbs::Tier tier() const {
    mlbs::Tier t = mlbs::Tier::directory(path_.string());
    t.faults = faults_;
    return t;
  }
  /// Space comes back: the other file goes (or the flag that keeps the injected device full).
  void make_room() const { fs::remove(taken_); }
  bool real() const { return mounted_; }

 private:
  fs::path path_;
  fs::path taken_;  ///< the file whose removal frees room
  bool mounted_ = false;
  std::string faults_;
};

mlbs::Config on_device(const SmallDevice& dev, std::uint64_t dram) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(dram), dev.tier()};
  cfg.durability = mlbs::Durability::persistent;
  cfg.schedule = mlbs::Schedule::fifo();
  cfg.shutdown_timeout_ms = 60000;  // long: a bounded shutdown must not owe its end to this
  return cfg;
}

// Ten 1 MiB records on an 8 MiB device: flush() throws DeviceFullError naming store, ids and tier instead of hanging.
TEST(HostileFullDevice, FlushThrowsDeviceFullErrorNamingIdsAndTier) {
  TempDir dir;
  SmallDevice dev(dir, 8 * MiB, 0, 6);
  mlbs::Runtime rt(on_device(dev, 16 * MiB));
  mlbs::Store<std::byte> s(rt, "snap");
  for (std::uint64_t id = 0; id < 10; ++id) {
    fill(s, id, MiB);
    s.write(id);
  }
  try {
    within(std::chrono::seconds(120), "flush() on a full device", [&] { s.flush(); });
    FAIL() << "flush() returned although the device cannot hold ten records (real tmpfs: " << dev.real() << ")";
  } catch (const mlbs::DeviceFullError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.context().store, "snap");
    EXPECT_NE(e.context().tier.find("tier 1"), std::string::npos) << what;
    EXPECT_NE(what.find("not durable: ids"), std::string::npos) << what;
    EXPECT_NE(what.find("9"), std::string::npos) << "the last id is named: " << what;
  }
  // The records are still readable from DRAM, and a second flush also ends.
  EXPECT_THROW(within(std::chrono::seconds(120), "a second flush()", [&] { s.flush(); }), mlbs::DeviceFullError);
  s.read(9);
  EXPECT_TRUE(holds(s, 9, MiB));
}

// write() refuses once DRAM is full of records the full device cannot take; a flush() after that throws too, it does not hang.
TEST(HostileFullDevice, FlushAfterARefusedWriteStillEnds) {
  TempDir dir;
  SmallDevice dev(dir, 8 * MiB, 0, 6);
  mlbs::Runtime rt(on_device(dev, 4 * MiB));
  mlbs::Store<std::byte> s(rt, "snap");
  bool refused = false;
  for (std::uint64_t id = 0; id < 16 && !refused; ++id) {
    fill(s, id, MiB);
    try {
      within(std::chrono::seconds(120), "write() with DRAM and the device full", [&] { s.write(id); });
    } catch (const mlbs::DeviceFullError&) {
      refused = true;
    } catch (const mlbs::CapacityError&) {
      refused = true;
    }
  }
  ASSERT_TRUE(refused) << "16 MiB were accepted by 4 MiB of DRAM over an 8 MiB device";
  EXPECT_THROW(within(std::chrono::seconds(120), "flush() after a refused write", [&] { s.flush(); }),
               mlbs::DeviceFullError);
}

// After DeviceFullError, freeing space on the device lets the retried flush() make every record durable.
TEST(HostileFullDevice, RetryAfterSpaceIsFreedMakesEveryRecordDurable) {
  TempDir dir;
  SmallDevice dev(dir, 12 * MiB, 6 * MiB, 4);
  const mlbs::Config cfg = on_device(dev, 16 * MiB);
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<std::byte> s(rt, "snap");
    for (std::uint64_t id = 0; id < 10; ++id) {
      fill(s, id, MiB);
      s.write(id);
    }
    EXPECT_THROW(within(std::chrono::seconds(120), "flush() on a full device", [&] { s.flush(); }),
                 mlbs::DeviceFullError);
    dev.make_room();
    within(std::chrono::seconds(120), "flush() after room came back", [&] { s.flush(); });
    for (std::uint64_t id = 0; id < 10; ++id) EXPECT_TRUE(s.info(id).durable) << "id " << id;
  }
  mlbs::Runtime rt(cfg);
  mlbs::Store<std::byte> s(rt, "snap");
  ASSERT_EQ(s.ids().size(), 10u);
  for (std::uint64_t id = 0; id < 10; ++id) {
    s.read(id);
    EXPECT_TRUE(holds(s, id, MiB)) << "id " << id;
  }
}

// Destroying a runtime whose records a full device cannot take ends at once and says the device is full, not "timed out".
TEST(HostileFullDevice, ShutdownReportsTheFullDeviceWithoutWaitingOutItsTimeout) {
  TempDir dir;
  SmallDevice dev(dir, 8 * MiB, 0, 6);
  testing::internal::CaptureStderr();
  within(std::chrono::seconds(30), "destroying a runtime over a full device", [&] {
    mlbs::Runtime rt(on_device(dev, 16 * MiB));  // shutdown_timeout_ms = 60 s
    mlbs::Store<std::byte> s(rt, "snap");
    for (std::uint64_t id = 0; id < 10; ++id) {
      fill(s, id, MiB);
      s.write(id);
    }
  });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not durable"), std::string::npos) << err;
  EXPECT_EQ(err.find("did not complete"), std::string::npos) << err;
}

// A persistent tier whose quota cannot hold what is pending refuses the write() (CapacityError naming the tier); flush() then ends.
TEST(HostileQuota, WriteThatCouldNeverBeDurableIsRefused) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(4 * MiB), mlbs::Tier::directory(dir / "pfs", 4 * MiB)};
  cfg.durability = mlbs::Durability::persistent;
  mlbs::Runtime rt(cfg);
  mlbs::Store<std::byte> s(rt, "snap");
  for (std::uint64_t id = 0; id < 2; ++id) {
    fill(s, id, 2 * MiB);
    s.write(id);
  }
  fill(s, 2, 2 * MiB);
  try {
    s.write(2);
    FAIL() << "a third 2 MiB record was accepted over a 4 MiB quota";
  } catch (const mlbs::CapacityError& e) {
    EXPECT_EQ(e.context().id, 2u);
    EXPECT_NE(e.context().tier.find("tier 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("quota"), std::string::npos) << e.what();
  }
  within(std::chrono::seconds(120), "flush() under the quota", [&] { s.flush(); });
  // Erasing one makes room for it.
  s.erase(0);
  s.write(2);
  within(std::chrono::seconds(120), "flush() after the erase", [&] { s.flush(); });
  EXPECT_EQ(s.ids(), (std::vector<std::uint64_t>{1, 2}));
}

// Shutdown honours shutdown_timeout_ms for a transfer stuck in a 20 s delay (the wait is cancelled, not waited out).
TEST(HostileShutdown, InFlightTransferIsCancelledAtTheTimeout) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(4 * MiB), mlbs::Tier::directory(dir / "pfs")};
  cfg.tiers[1].faults = "any:delay=20s";
  cfg.durability = mlbs::Durability::persistent;
  cfg.shutdown_timeout_ms = 300;
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  within(std::chrono::seconds(60), "destroying a runtime over a 20 s transfer", [&] {
    mlbs::Runtime rt(cfg);
    mlbs::Store<std::byte> s(rt, "snap");
    fill(s, 1, 64 << 10);
    s.write(1);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_LT(took, 15.0) << "the destructor waited out the 20 s delay; stderr: " << err;
}

// --- a damaged, truncated or missing journal ------------------------------------

constexpr std::size_t kSmall = 16 << 10;

mlbs::Config two_tiers(const TempDir& dir) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1 * MiB), mlbs::Tier::directory(dir / "pfs")};
  cfg.durability = mlbs::Durability::persistent;
  return cfg;
}

fs::path journal_of(const TempDir& dir) { return dir.path() / "pfs" / "snap" / "journal.mlbs"; }

/// `n` records, flushed and closed: each the journal's put entry i (i = id).
void write_store(const TempDir& dir, std::uint64_t n) {
  mlbs::Runtime rt(two_tiers(dir));
  mlbs::Store<std::byte> s(rt, "snap");
  for (std::uint64_t id = 0; id < n; ++id) {
    fill(s, id, kSmall);
    s.write(id);
    s.flush();  // one entry after the other: entry i is id i's put
  }
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void flip_byte(const fs::path& file, std::uint64_t offset) {
  std::string bytes = file_bytes(file);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(~bytes[offset]);
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::uint64_t entry_offset(std::uint64_t index) {
  return mlbs::catalog::Journal::kHeaderBytes + index * mlbs::catalog::Journal::kEntryBytes;
}

/// Opening the store refuses with CorruptionError that points to salvage, and changes nothing on disk.
void expect_refused(const TempDir& dir, std::size_t copies, const std::string& journal_before) {
  const fs::path folder = dir.path() / "pfs" / "snap";
  mlbs::Runtime rt(two_tiers(dir));
  try {
    mlbs::Store<std::byte> s(rt, "snap");
    FAIL() << "the store opened with " << s.ids().size() << " records";
  } catch (const mlbs::CorruptionError& e) {
    EXPECT_EQ(e.context().store, "snap");
    EXPECT_NE(std::string(e.what()).find("--salvage"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stored_records(folder), copies) << "record files were removed";
  EXPECT_EQ(file_bytes(journal_of(dir)), journal_before) << "the journal was changed";
}

// One flipped byte in entry 2 of 20 (valid entries after it) is damage: the store is refused, all 20 record files kept.
TEST(HostileJournal, FlippedEntryInTheMiddleRefusesAndKeepsEveryFile) {
  TempDir dir;
  write_store(dir, 20);
  flip_byte(journal_of(dir), entry_offset(2) + 9);
  expect_refused(dir, 20, file_bytes(journal_of(dir)));
}

// A damaged last entry is a torn tail (what a crash during its append leaves): the store opens with the 19 before it.
TEST(HostileJournal, DamagedLastEntryIsATornTail) {
  TempDir dir;
  write_store(dir, 20);
  flip_byte(journal_of(dir), entry_offset(19) + 9);
  mlbs::Runtime rt(two_tiers(dir));
  mlbs::Store<std::byte> s(rt, "snap");
  EXPECT_EQ(s.ids().size(), 19u);
  s.read(18);
  EXPECT_TRUE(holds(s, 18, kSmall));
}

// A journal truncated to 0 or 10 bytes, or removed, beside 113 record files: refused, every file kept.
TEST(HostileJournal, TruncatedOrMissingJournalRefusesAndKeepsEveryFile) {
  for (const int cut : {0, 10, -1}) {
    SCOPED_TRACE(cut < 0 ? "journal removed" : "journal cut to " + std::to_string(cut) + " bytes");
    TempDir dir;
    write_store(dir, 113);
    if (cut < 0)
      fs::remove(journal_of(dir));
    else
      fs::resize_file(journal_of(dir), static_cast<std::uintmax_t>(cut));
    const fs::path folder = dir.path() / "pfs" / "snap";
    mlbs::Runtime rt(two_tiers(dir));
    EXPECT_THROW(mlbs::Store<std::byte>(rt, "snap"), mlbs::CorruptionError);
    EXPECT_EQ(stored_records(folder), 113u) << "record files were removed";
    EXPECT_EQ(fs::exists(journal_of(dir)), cut >= 0) << "a journal was made up";
  }
}

// A journal cut back to its header beside 113 record files names none of them: more than a crash leaves, so refused.
TEST(HostileJournal, JournalCutToItsHeaderRefuses) {
  TempDir dir;
  write_store(dir, 113);
  fs::resize_file(journal_of(dir), mlbs::catalog::Journal::kHeaderBytes);
  expect_refused(dir, 113, file_bytes(journal_of(dir)));
}

// --- mlbs-inspect on damage, and its salvage ----------------------------------------

class HostileInspect : public testing::Test {
 protected:
  void SetUp() override {
    const char* tool = mlbs::test::inspect_tool();
    if (!tool) GTEST_SKIP() << "set MLBS_INSPECT to the mlbs-inspect binary";
    tool_ = tool;
  }
  /// Exit status of mlbs-inspect `args` (the tier dir and store follow); output in out_.
  int run(const std::string& args) {
    const std::string file = dir_ / "inspect.out";
    const std::string cmd = "'" + tool_ + "' " + args + " '" + (dir_ / "pfs") + "' snap > '" + file + "' 2>&1";
    const int status = std::system(cmd.c_str());
    out_ = file_bytes(file);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void expect_all(std::uint64_t n) {
    mlbs::Runtime rt(two_tiers(dir_));
    mlbs::Store<std::byte> s(rt, "snap");
    ASSERT_EQ(s.ids().size(), n);
    for (std::uint64_t id = 0; id < n; ++id) {
      s.read(id);
      EXPECT_TRUE(holds(s, id, kSmall)) << "id " << id;
    }
  }

  TempDir dir_;
  std::string tool_;
  std::string out_;
};

// --verify calls a journal damaged in the middle DAMAGED and exits 1 (it used to call it a torn tail and exit 0).
TEST_F(HostileInspect, VerifyReportsDamageInTheMiddle) {
  write_store(dir_, 20);
  EXPECT_EQ(run("--verify"), 0) << out_;
  flip_byte(journal_of(dir_), entry_offset(2) + 9);
  EXPECT_EQ(run("--verify"), 1) << out_;
  EXPECT_NE(out_.find("DAMAGED"), std::string::npos) << out_;
  EXPECT_EQ(run("--json"), 1) << out_;
  EXPECT_NE(out_.find("\"journal_state\": \"damaged\""), std::string::npos) << out_;
}

// A missing journal beside record files is reported as damage (exit 1), not as "no such store".
TEST_F(HostileInspect, MissingJournalBesideRecordFilesIsDamage) {
  write_store(dir_, 3);
  fs::remove(journal_of(dir_));
  EXPECT_EQ(run(""), 1) << out_;
  EXPECT_NE(out_.find("missing"), std::string::npos) << out_;
}

// A store open in a runtime is said to be open; inspecting it takes nothing from the runtime.
TEST_F(HostileInspect, SaysWhenTheStoreIsOpen) {
  write_store(dir_, 3);
  EXPECT_EQ(run(""), 0) << out_;
  EXPECT_NE(out_.find("open          no"), std::string::npos) << out_;
  mlbs::Runtime rt(two_tiers(dir_));
  mlbs::Store<std::byte> s(rt, "snap");
  EXPECT_EQ(run("--verify"), 0) << out_;
  EXPECT_NE(out_.find("open          yes"), std::string::npos) << out_;
  EXPECT_EQ(run("--salvage"), 2) << "salvage must refuse an open store: " << out_;
  s.erase(0);
  s.flush();
}

// --salvage after a flipped entry: every record comes back byte-exact, verified by the entries that survive.
TEST_F(HostileInspect, SalvageRebuildsADamagedJournal) {
  write_store(dir_, 20);
  flip_byte(journal_of(dir_), entry_offset(2) + 9);
  ASSERT_EQ(run("--salvage"), 0) << out_;
  EXPECT_NE(out_.find("19 verified, 1 unverified"), std::string::npos) << out_;
  bool kept = false;
  for (const auto& e : fs::directory_iterator(journal_of(dir_).parent_path()))
    kept = kept || e.path().filename().string().rfind("journal.mlbs.damaged-", 0) == 0;
  EXPECT_TRUE(kept) << "the damaged journal was not kept";
  expect_all(20);
  EXPECT_EQ(run("--verify"), 0) << out_;
}

// --salvage after the journal was removed: the 113 record files are adopted (unverified) and read back byte-exact.
TEST_F(HostileInspect, SalvageRebuildsARemovedJournal) {
  write_store(dir_, 113);
  fs::remove(journal_of(dir_));
  ASSERT_EQ(run("--salvage"), 0) << out_;
  EXPECT_NE(out_.find("kept 113 records: 0 verified, 113 unverified"), std::string::npos) << out_;
  expect_all(113);
}

// --salvage --verified-only keeps only what a surviving entry vouches for; the rest is dropped, not kept unverified.
TEST_F(HostileInspect, SalvageVerifiedOnlyDropsWhatNoEntryVouchesFor) {
  write_store(dir_, 5);
  flip_byte(journal_of(dir_), entry_offset(1) + 9);
  ASSERT_EQ(run("--salvage --verified-only"), 0) << out_;
  mlbs::Runtime rt(two_tiers(dir_));
  mlbs::Store<std::byte> s(rt, "snap");
  EXPECT_EQ(s.ids(), (std::vector<std::uint64_t>{0, 2, 3, 4}));
}

}  // namespace
