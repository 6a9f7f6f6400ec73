// Tests of the live catalog (src/catalog/live.*): a writer's records and tier
// counters as another process's view sees them, the slot table's rules, the
// version check, a gone writer, and waiting for a change.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/live.hpp"
#include "mlbs/errors.hpp"

namespace {

using namespace mlbs::catalog;
using namespace mlbs::catalog::live;

/// A writer's identity on a last tier no other test uses.
WriterInfo identity(const std::string& store) {
  WriterInfo w;
  w.pid = static_cast<int>(::getpid());
  w.store = store;
  w.space = store + ".scratch";
  w.persistent_space = store;
  w.tier_kinds = {"memory", "directory"};
  w.tier_paths = {"", "/nonexistent/mlbs-live-test/" + std::to_string(::getpid())};
  return w;
}

const std::string& last_path(const WriterInfo& w) { return w.tier_paths.back(); }

Record rec(std::uint64_t id, std::uint64_t gen, TierMask copies) {
  Record r;
  r.id = id;
  r.gen = gen;
  r.size = id * 10;
  r.copies = copies;
  r.checksum = id ^ 0xabc;
  r.has_checksum = true;
  return r;
}

// What the writer publishes, a view opened by name finds: state, copies, size, generation, checksum.
TEST(LiveCatalog, ViewSeesPublishedRecords) {
  const WriterInfo info = identity("seen");
  auto w = Writer::create(info, 64);
  ASSERT_TRUE(w);
  w->publish(rec(1, 1, bit(0)), RecordState::in_dram);
  w->publish(rec(2, 2, bit(1)), RecordState::on_tier);
  w->notify();
  auto v = View::open(last_path(info), "seen", 0);
  EXPECT_EQ(v->info().store, "seen");
  EXPECT_EQ(v->info().pid, ::getpid());
  EXPECT_EQ(v->info().tier_kinds, info.tier_kinds);
  const auto r = v->find(2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, RecordState::on_tier);
  EXPECT_EQ(r->copies, bit(1));
  EXPECT_EQ(r->size, 20u);
  EXPECT_EQ(r->generation, 2u);
  EXPECT_EQ(r->checksum, 2u ^ 0xabc);
  EXPECT_FALSE(v->find(3));
  EXPECT_EQ(v->records().size(), 2u);
  EXPECT_TRUE(v->writer_alive());
}

// An erase marks the slot erased; a new write of the id takes it again, and the old record's late erase leaves the new one alone.
TEST(LiveCatalog, EraseAndRewriteOfAnId) {
  const WriterInfo info = identity("rewrite");
  auto w = Writer::create(info, 8);
  auto v = View::open(last_path(info), "rewrite", 0);
  w->publish(rec(5, 1, bit(1)), RecordState::on_tier);
  Record old = rec(5, 1, bit(1));
  w->publish(old, RecordState::erased);
  EXPECT_EQ(v->find(5)->state, RecordState::erased);
  w->publish(rec(5, 2, bit(0)), RecordState::in_dram);
  w->publish(old, RecordState::erased);  // the retired generation finishing late
  EXPECT_EQ(v->find(5)->state, RecordState::in_dram);
  EXPECT_EQ(v->find(5)->generation, 2u);
  EXPECT_EQ(v->records().size(), 1u);
}

// A reader's acknowledgement reaches the writer for that write only: never lowered by a late older ack, never carried to the id's next write.
TEST(LiveCatalog, ReaderAcknowledgementsArePerWrite) {
  const WriterInfo info = identity("acks");
  auto w = Writer::create(info, 16);
  auto v = View::open(last_path(info), "acks", 0);
  w->publish(rec(3, 4, bit(1)), RecordState::on_tier);
  EXPECT_FALSE(w->read_by_reader(3, 4));
  EXPECT_FALSE(v->find(3)->read);
  v->acknowledge(3, 4);
  EXPECT_TRUE(w->read_by_reader(3, 4));
  EXPECT_TRUE(v->find(3)->read);
  v->acknowledge(3, 2);  // a late ack of an older write
  EXPECT_TRUE(w->read_by_reader(3, 4));
  w->publish(rec(3, 4, bit(1)), RecordState::erased);
  w->publish(rec(3, 9, bit(0)), RecordState::in_dram);  // the id written again
  EXPECT_FALSE(w->read_by_reader(3, 9));
  EXPECT_FALSE(v->find(3)->read);
  v->acknowledge(42, 1);  // an id never published: nothing happens
  EXPECT_FALSE(v->find(42));
}

// filed_ns is stamped when a write first has a file copy and kept while it moves; a new write of the id starts unfiled.
TEST(LiveCatalog, FiledTimeIsTheFirstFileCopy) {
  const WriterInfo info = identity("filed");
  auto w = Writer::create(info, 16);
  auto v = View::open(last_path(info), "filed", 0);
  w->publish(rec(1, 1, bit(0)), RecordState::in_dram);
  EXPECT_EQ(v->find(1)->filed_ns, 0u);
  w->publish(rec(1, 1, bit(0) | bit(1)), RecordState::on_tier);
  const std::uint64_t filed = v->find(1)->filed_ns;
  EXPECT_GT(filed, 0u);
  w->publish(rec(1, 1, bit(2)), RecordState::on_tier);  // moved down, DRAM copy dropped
  EXPECT_EQ(v->find(1)->filed_ns, filed);
  EXPECT_GE(v->find(1)->updated_ns, filed);
  w->publish(rec(1, 1, bit(2)), RecordState::erased);
  w->publish(rec(1, 2, bit(0)), RecordState::in_dram);
  EXPECT_EQ(v->find(1)->filed_ns, 0u);
}

// Erased slots are reused by other ids, and a full table counts what it could not publish instead of failing.
TEST(LiveCatalog, FullTableCountsUnpublishedRecords) {
  const WriterInfo info = identity("full");
  auto w = Writer::create(info, 4);
  for (std::uint64_t id = 0; id < 4; ++id) w->publish(rec(id, id + 1, bit(0)), RecordState::in_dram);
  w->publish(rec(9, 9, bit(0)), RecordState::in_dram);
  EXPECT_EQ(w->unpublished(), 1u);
  w->publish(rec(0, 1, bit(0)), RecordState::erased);
  w->publish(rec(9, 10, bit(0)), RecordState::in_dram);
  auto v = View::open(last_path(info), "full", 0);
  EXPECT_EQ(v->find(9)->generation, 10u) << "the erased slot was reused";
  for (std::uint64_t id = 1; id < 4; ++id) EXPECT_TRUE(v->find(id)) << id;
}

// A store nobody publishes is a typed error naming the store; so is a segment of another format version, naming both versions.
TEST(LiveCatalog, MissingStoreAndOtherVersionAreTypedErrors) {
  const WriterInfo info = identity("versioned");
  try {
    View::open(last_path(info), "versioned", 0);
    FAIL() << "opened a store nobody publishes";
  } catch (const mlbs::UnknownIdError& e) {
    EXPECT_NE(std::string(e.what()).find("'versioned'"), std::string::npos) << e.what();
  }
  auto w = Writer::create(info, 8);
  // Rewrite the version field as a writer of another mlbs would have.
  const int fd = ::shm_open(w->name().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  const std::uint32_t other = kLiveVersion + 1;
  std::memcpy(static_cast<char*>(p) + 8, &other, sizeof other);
  ::munmap(p, 4096);
  ::close(fd);
  try {
    View::open(last_path(info), "versioned", 0);
    FAIL() << "read a catalog of another version";
  } catch (const mlbs::InvalidArgumentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(other)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(kLiveVersion)), std::string::npos) << what;
  }
}

// A view outliving its writer sees it gone and closed; a segment a dead writer left is replaced by the next writer.
TEST(LiveCatalog, GoneWriterAndStaleSegment) {
  const WriterInfo info = identity("gone");
  auto w = Writer::create(info, 8);
  auto v = View::open(last_path(info), "gone", 0);
  EXPECT_FALSE(Writer::create(info, 8)) << "a second live writer of the same store";
  w.reset();
  EXPECT_FALSE(v->writer_alive());
  EXPECT_TRUE(v->closed());
  // A crash leaves the segment behind with its lock free: simulate one.
  const std::string name = segment_name(last_path(info), "gone", 0);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  auto again = Writer::create(info, 8);
  ASSERT_TRUE(again) << "the stale segment was not replaced";
  again->publish(rec(1, 1, bit(0)), RecordState::in_dram);
  EXPECT_TRUE(View::open(last_path(info), "gone", 0)->find(1));
}

// A writer killed while changing a slot leaves it odd forever: readers get a typed error, not a hang.
TEST(LiveCatalog, SlotLeftMidChangeByADeadWriterIsAnError) {
  const WriterInfo info = identity("killed");
  auto w = Writer::create(info, 8);
  w->publish(rec(1, 1, bit(0)), RecordState::in_dram);
  auto v = View::open(last_path(info), "killed", 0);
  // Every slot's sequence made odd, as a writer dying between its two stores would leave one.
  const int fd = ::shm_open(w->name().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::uint32_t header_bytes = 0;
  std::memcpy(&header_bytes, static_cast<char*>(p) + 12, sizeof header_bytes);
  for (int i = 0; i < 8; ++i) {
    const std::uint32_t odd = 1;
    std::memcpy(static_cast<char*>(p) + header_bytes + 64 * i, &odd, sizeof odd);
  }
  ::munmap(p, 1 << 20);
  ::close(fd);
  w.reset();  // the writer is gone: its lock with it
  EXPECT_THROW(v->records(), mlbs::CorruptionError);
  EXPECT_THROW(v->find(1), mlbs::CorruptionError);
}

// A reader waiting for a change wakes when the writer notifies, and times out when nothing changes.
TEST(LiveCatalog, WaitChangeWakesOnNotify) {
  const WriterInfo info = identity("wake");
  auto w = Writer::create(info, 8);
  auto v = View::open(last_path(info), "wake", 0);
  const std::uint32_t seen = v->changes();
  EXPECT_FALSE(v->wait_change(seen, std::chrono::milliseconds(20)));
  std::atomic<bool> woke{false};
  std::thread reader([&] { woke = v->wait_change(seen, std::chrono::seconds(30)); });
  w->publish(rec(1, 1, bit(1)), RecordState::on_tier);
  w->notify();
  reader.join();
  EXPECT_TRUE(woke);
}

// Readers copying slots while the writer rewrites them never see a torn record (each field agrees with its id and generation).
TEST(LiveCatalog, ConcurrentReadsSeeWholeRecords) {
  const WriterInfo info = identity("torn");
  auto w = Writer::create(info, 256);
  auto v = View::open(last_path(info), "torn", 0);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> torn{0}, seen{0};
  std::vector<std::thread> readers;
  for (int k = 0; k < 2; ++k)
    readers.emplace_back([&] {
      while (!done.load()) {
        for (const RecordView& r : v->records()) {
          ++seen;
          if (r.size != r.id * 10 + r.generation || r.checksum != (r.generation ^ r.id)) ++torn;
        }
      }
    });
  for (std::uint64_t gen = 1; gen <= 20000; ++gen) {
    Record r = rec(gen % 100, gen, bit(gen % 3));
    r.size = r.id * 10 + gen;
    r.checksum = gen ^ r.id;
    w->publish(r, gen % 7 ? RecordState::on_tier : RecordState::erased);
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0u) << "of " << seen.load();
}

// Tier counters the writer publishes come back with their kinds and paths.
TEST(LiveCatalog, TierCounters) {
  const WriterInfo info = identity("tiers");
  auto w = Writer::create(info, 8);
  mlbs::TierStats t;
  t.bytes_in = 123;
  t.errors = 2;
  w->publish_tier(1, t, 45);
  const auto got = View::open(last_path(info), "tiers", 0)->tiers();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].bytes_in, 123u);
  EXPECT_EQ(got[1].used_bytes, 45u);
  EXPECT_EQ(got[1].errors, 2u);
  EXPECT_EQ(got[1].kind, "directory");
  EXPECT_EQ(got[1].path, last_path(info));
}

}  // namespace
