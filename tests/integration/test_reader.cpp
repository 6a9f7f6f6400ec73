// In-transit readers (mlbs::Reader<T>, docs/readers.md): a reader beside a
// running writer sees records as they reach a file tier and reads their exact
// bytes, through moves and erases; bad input and a gone writer are typed errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "mlbs/mlbs.hpp"
#include "mlbs/reader.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::test::TempDir;
using namespace std::chrono_literals;

constexpr std::size_t kElems = 4096;  // 16 KiB records

/// DRAM for 4 records, a fast tier for 8, an unlimited slow tier; file-per-record
/// everywhere (the layout readers read), whatever the test variant's layout.
mlbs::Config config(const TempDir& dir, mlbs::Durability d = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  mlbs::Tier fast = mlbs::Tier::directory(dir / "fast", 8 * kElems * sizeof(float));
  mlbs::Tier slow = mlbs::Tier::directory(dir / "slow");
  fast.layout = slow.layout = mlbs::Layout::file_per_record;
  cfg.tiers = {mlbs::Tier::memory(4 * kElems * sizeof(float)), fast, slow};
  cfg.durability = d;
  return cfg;
}

float value(std::uint64_t id, std::size_t i) { return float(id * 1000003 + i); }

void write(mlbs::Store<float>& u, std::uint64_t id) {
  u.resize(kElems);
  for (std::size_t i = 0; i < kElems; ++i) u[i] = value(id, i);
  u.write(id);
}

bool exact(const std::vector<float>& v, std::uint64_t id) {
  if (v.size() != kElems) return false;
  for (std::size_t i = 0; i < kElems; ++i)
    if (v[i] != value(id, i)) return false;
  return true;
}

// A record becomes readable once written behind; the reader gets its exact bytes and lists it among ids().
TEST(Reader, ReadsWhatTheWriterWrote) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wave", kElems);
  mlbs::Reader<float> r(cfg, "wave");
  const auto before = std::chrono::system_clock::now();
  for (std::uint64_t id = 0; id < 3; ++id) write(u, id);
  for (std::uint64_t id = 0; id < 3; ++id) {
    ASSERT_TRUE(r.wait(id, 30s)) << id;
    EXPECT_EQ(r.size(id), kElems);
    EXPECT_GE(r.readable_since(id), before) << "readable before it was written";
    EXPECT_LE(r.readable_since(id), std::chrono::system_clock::now());
    EXPECT_TRUE(exact(r.read(id), id)) << id;
  }
  EXPECT_EQ(r.ids(), (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_FALSE(r.wait(99, 10ms)) << "never written";
}

// Thousands of reads concurrent with a writer whose records move down the tiers and are erased give exact bytes or a typed error, never other bytes.
TEST(Reader, ExactBytesOrTypedErrorsWhileRecordsMoveAndGo) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "busy", kElems);
  mlbs::Reader<float> r(cfg, "busy");
  constexpr std::uint64_t kReads = 2000, kMaxRecords = 100000;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> good{0}, typed{0}, wrong{0};
  std::mutex mu;
  std::condition_variable progress;  // a reader made a good read
  std::vector<std::thread> readers;
  for (int k = 0; k < 2; ++k)
    readers.emplace_back([&, k] {
      std::vector<float> buf(kElems);
      while (!done.load()) {
        for (std::uint64_t id : r.ids()) {
          if ((id + k) % 2) continue;
          try {
            r.read(id, std::span<float>(buf));
            if (exact(buf, id)) ++good;
            else ++wrong;
            std::lock_guard lock(mu);
            progress.notify_all();
          } catch (const mlbs::Error&) {
            ++typed;  // erased or moved away meanwhile
          }
        }
      }
    });
  // The writer goes on until the readers have made their reads (a count, not a time), never more
  // than kLead records ahead of their good reads: a writer much faster than its readers (a slow
  // machine, a sanitizer) would otherwise erase nearly every record before it is read.
  constexpr std::uint64_t kLead = 48;
  std::uint64_t written = 0;
  bool stalled = false;
  for (; written < kMaxRecords && good.load() + typed.load() < kReads; ++written) {
    if (written > kLead) {
      std::unique_lock lock(mu);
      stalled = !progress.wait_for(lock, 60s, [&] { return good.load() + kLead >= written; });
      if (stalled) break;
    }
    write(u, written);
    if (written >= 24) u.erase(written - 24);  // records leave while readers read them
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_FALSE(stalled) << "readers stopped making good reads at " << good.load();
  EXPECT_EQ(wrong.load(), 0u) << good.load() << " exact, " << typed.load() << " typed errors";
  EXPECT_GE(good.load() + typed.load(), kReads) << "only " << written << " records written";
  EXPECT_GT(good.load(), kReads / 4);
}

// Reader retention: writes reach a file tier with no water mark crossed, and stay on the fast tier until read; read ones make way, and the cost is counted.
TEST(Reader, RetentionKeepsUnreadRecordsOnTheFastTier) {
  TempDir dir;
  mlbs::Config cfg = config(dir);
  cfg.reader_retention = mlbs::ReaderRetention::until_read;
  cfg.tiers[0].capacity_bytes = 16 * kElems * sizeof(float);
  cfg.tiers[0].high_water = cfg.tiers[0].low_water = 1.0;  // no write-behind of its own
  cfg.tiers[1].capacity_bytes = 4 * kElems * sizeof(float);
  cfg.tiers[1].high_water = cfg.tiers[1].low_water = 1.0;
  cfg.schedule = mlbs::Schedule::lifo();
  cfg.copy_ahead = false;  // its second copies would spare some of the moves counted below
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "kept", kElems);
  mlbs::Reader<float> r(cfg, "kept");
  for (std::uint64_t id = 0; id < 4; ++id) write(u, id);
  for (std::uint64_t id = 0; id < 4; ++id) ASSERT_TRUE(r.wait(id, 30s)) << "record " << id << " stayed in DRAM";
  for (std::uint64_t id = 0; id < 2; ++id) EXPECT_TRUE(exact(r.read(id), id));
  // The writer sees the acknowledgements at its next planning: 2..5 are unread and take the fast tier.
  for (std::uint64_t id = 4; id < 6; ++id) write(u, id);
  u.flush();
  auto on = [&](std::uint64_t id, int tier) {
    const auto t = u.info(id).tiers;
    return std::find(t.begin(), t.end(), tier) != t.end();
  };
  for (std::uint64_t id = 2; id < 6; ++id) EXPECT_TRUE(on(id, 1)) << "unread record " << id << " left the fast tier";
  for (std::uint64_t id = 0; id < 2; ++id) {
    EXPECT_FALSE(on(id, 1)) << "read record " << id << " kept the fast tier's room";
    EXPECT_TRUE(on(id, 2)) << id;
  }
  const mlbs::Stats st = rt.stats();
  EXPECT_GE(st.retention_copies, 6u);
  EXPECT_GE(st.retention_moves, 2u);
  EXPECT_EQ(st.awaiting_readers, 4u);
  EXPECT_EQ(st.retention_bytes, (st.retention_copies + st.retention_moves) * kElems * sizeof(float));
}

// Persistent: records are readable from the last tier after the writer flushed them.
TEST(Reader, PersistentStoreReadsDurableRecords) {
  TempDir dir;
  const mlbs::Config cfg = config(dir, mlbs::Durability::persistent);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "ckpt", kElems);
  for (std::uint64_t id = 0; id < 16; ++id) write(u, id);
  u.flush();
  mlbs::Reader<float> r(cfg, "ckpt");
  for (std::uint64_t id = 0; id < 16; ++id) EXPECT_TRUE(exact(r.read(id), id)) << id;
}

// A store the writer keeps in parts (StoreOptions::parts) is read whole: ids, wait, size and read put its 4 parts together, exact, a short last part too.
TEST(Reader, ReassemblesAStoreKeptInParts) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  mlbs::StoreOptions options;
  options.parts = 4;
  mlbs::Store<float> u(rt, "wave", options, kElems);
  mlbs::Reader<float> r(cfg, "wave");
  for (std::uint64_t id = 0; id < 6; ++id) write(u, id);
  for (std::uint64_t id = 0; id < 6; ++id) {
    ASSERT_TRUE(r.wait(id, 30s)) << id;
    EXPECT_EQ(r.size(id), kElems);
    EXPECT_TRUE(exact(r.read(id), id)) << id;
  }
  EXPECT_EQ(r.ids(), (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5}));
  u.resize(3 * 1024 + 7);  // parts of 4096, 4096, 4096 and 28 bytes
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = value(9, i);
  u.write(9);
  ASSERT_TRUE(r.wait(9, 30s));
  const std::vector<float> odd = r.read(9);
  ASSERT_EQ(odd.size(), 3 * 1024 + 7u);
  for (std::size_t i = 0; i < odd.size(); ++i) ASSERT_EQ(odd[i], value(9, i)) << i;
  std::vector<float> small(kElems - 1);
  EXPECT_THROW(r.read(1, std::span<float>(small)), mlbs::SizeMismatchError);
  u.erase(2);
  EXPECT_THROW(r.read(2), mlbs::UnknownIdError);
}

// Bad input: a store nobody writes, another configuration, a wrong buffer size and an unknown id are typed errors naming what is wrong.
TEST(Reader, BadInputIsTypedErrors) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  EXPECT_THROW(mlbs::Reader<float>(cfg, "wave"), mlbs::UnknownIdError) << "a reader started before its writer";
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wave", kElems);
  write(u, 1);
  mlbs::Config other = cfg;
  other.tiers[1].path = dir / "elsewhere";
  try {
    mlbs::Reader<float> bad(other, "wave");
    FAIL() << "attached with another configuration";
  } catch (const mlbs::InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("tier 1 differs"), std::string::npos) << e.what();
  }
  other = cfg;
  other.durability = mlbs::Durability::persistent;
  EXPECT_THROW(mlbs::Reader<float>(other, "wave"), mlbs::InvalidArgumentError);
  mlbs::Reader<float> r(cfg, "wave");
  ASSERT_TRUE(r.wait(1, 30s));
  std::vector<float> small(kElems - 1);
  EXPECT_THROW(r.read(1, std::span<float>(small)), mlbs::SizeMismatchError);
  EXPECT_THROW(r.read(7), mlbs::UnknownIdError);
}

// A writer that closes the store ends a reader's wait with ShutdownError, not a hang.
TEST(Reader, ClosedWriterEndsWaits) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  auto u = std::make_unique<mlbs::Store<float>>(rt, "wave", kElems);
  mlbs::Reader<float> r(cfg, "wave");
  u.reset();
  EXPECT_THROW(r.wait(5, 30s), mlbs::ShutdownError);
}

// A record only in the writer's DRAM (write-behind off, DRAM not full) is not readable yet: read() says so.
TEST(Reader, DramOnlyRecordIsNotReadableYet) {
  TempDir dir;
  mlbs::Config cfg = config(dir);
  cfg.tiers[0].high_water = cfg.tiers[0].low_water = 1.0;  // no write-behind until DRAM fills
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wave", kElems);
  write(u, 1);
  mlbs::Reader<float> r(cfg, "wave");
  EXPECT_TRUE(r.ids().empty());
  try {
    r.read(1);
    FAIL() << "read a record that is only in the writer's DRAM";
  } catch (const mlbs::UnknownIdError& e) {
    EXPECT_EQ(e.error_code(), EAGAIN);
    EXPECT_NE(std::string(e.what()).find("tier 0"), std::string::npos) << e.what();
  }
}

}  // namespace
