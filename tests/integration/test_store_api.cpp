// The public Store<T> API end to end: the vector-like working buffer, record
// semantics (write/read/erase/contains/ids), records of many sizes crossing
// all three tiers, every error case with the context its message must name,
// on-disk cleanliness of scratch stores, and the counters of Runtime::stats().
// A few races between the helper threads are staged deterministically with a
// gate in the directory backend (no sleeping; bounded waits only).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "catalog/checksum.hpp"
#include "mlbs/mlbs.hpp"
#include "support/backend_override.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/wrappers/wrapped.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::expect_error;
using mlbs::test::stored_records;
using mlbs::test::TempDir;

constexpr std::size_t kPage = 4096;
constexpr std::size_t kElems = 4096;                        // 16 KiB float records
constexpr std::uint64_t kRecBytes = kElems * sizeof(float);

/// DRAM of ~3 records, a fast tier with a quota of ~4 records, an unlimited
/// slow tier (the layout of test_three_tiers.cpp).
mlbs::Config three_tiers(const TempDir& dir, mlbs::Schedule schedule,
                         std::uint64_t record_bytes = kRecBytes,
                         mlbs::Durability durability = mlbs::Durability::scratch) {
  const std::uint64_t slot = (record_bytes + kPage - 1) / kPage * kPage;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * slot), mlbs::Tier::directory(dir / "fast", 4 * record_bytes),
               mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = std::move(schedule);
  cfg.durability = durability;
  cfg.copy_ahead = false;  // scratch: one file copy per record at rest (the tests count files)
  return cfg;
}

float value(std::uint64_t id, std::size_t i) { return float(id * 100000 + i); }

void fill(mlbs::Store<float>& u, std::uint64_t id) {
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = value(id, i);
}

void expect_floats(const mlbs::Store<float>& u, std::uint64_t id, std::size_t n) {
  ASSERT_EQ(u.size(), n) << "id " << id;
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(u[i], value(id, i)) << "id " << id << " element " << i;
}

char byte_of(std::uint64_t id, std::size_t i) {
  return static_cast<char>((id * 131 + i * 7 + (i >> 9) * 13 + 1) & 0xff);
}

void fill_bytes(mlbs::Store<char>& c, std::uint64_t id, std::size_t n) {
  c.resize(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = byte_of(id, i);
}

void expect_bytes(const mlbs::Store<char>& c, std::uint64_t id, std::size_t n) {
  ASSERT_EQ(c.size(), n) << "id " << id;
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], byte_of(id, i)) << "id " << id << " byte " << i << " of " << n;
}

/// Every record copy stored below `dir` in either layout, as
/// <tier>/<space>/<id>-<generation>.rec (relative paths).
std::set<std::string> rec_files(const fs::path& dir) {
  std::set<std::string> out;
  for (const fs::path& p : mlbs::tiers::list_stored_objects(dir)) out.insert(fs::relative(p, dir).string());
  return out;
}

// ============================================================================
// the vector-like working buffer
// ============================================================================

// size(), operator[], at(), data(), front()/back(), empty(), clear(), pop_back().
TEST(StoreApi, VectorAccessors) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<int> v(rt, "vec", 5);
  EXPECT_EQ(v.size(), 5u);
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.name(), "vec");
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], 0) << "value-initialised";
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = int(i * 10);
  EXPECT_EQ(v.at(3), 30);
  v.at(4) = 44;
  EXPECT_EQ(v[4], 44);
  EXPECT_EQ(v.data(), &v[0]);
  EXPECT_EQ(v.data()[2], 20);
  EXPECT_EQ(v.front(), 0);
  EXPECT_EQ(v.back(), 44);
  const mlbs::Store<int>& cv = v;
  EXPECT_EQ(cv.at(1), 10);
  EXPECT_EQ(cv.data(), v.data());
  expect_error<mlbs::InvalidArgumentError>([&] { (void)v.at(5); }, {"store 'vec'", "5"}, EINVAL);
  expect_error<mlbs::InvalidArgumentError>([&] { (void)cv.at(100); }, {"store 'vec'"});
  EXPECT_THROW((void)v.at(std::numeric_limits<std::size_t>::max()), std::exception);
  v.pop_back();
  EXPECT_EQ(v.size(), 4u);
  EXPECT_THROW((void)v.at(4), mlbs::Error);
  v.clear();
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.size(), 0u);
  EXPECT_THROW((void)v.at(0), mlbs::InvalidArgumentError);
}

// resize() zero-fills grown elements even where the memory held old values.
TEST(StoreApi, ResizeZeroFillsGrownElements) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<double> v(rt, "resize", 8);
  for (auto& x : v) x = 7.5;
  v.resize(3);
  EXPECT_EQ(v.size(), 3u);
  v.resize(8);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(v[i], 7.5);
  for (std::size_t i = 3; i < 8; ++i) EXPECT_EQ(v[i], 0.0) << "element " << i << " not zeroed";
  v.resize(100000);  // reallocation keeps the prefix, zeroes the rest
  EXPECT_EQ(v.size(), 100000u);
  EXPECT_GE(v.capacity(), 100000u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(v[i], 7.5);
  EXPECT_TRUE(std::all_of(v.begin() + 3, v.end(), [](double x) { return x == 0.0; }));
  v.resize(10, -1.0);
  v.resize(12, 2.0);
  EXPECT_EQ(v[9], 0.0);
  EXPECT_EQ(v[10], 2.0);
  EXPECT_EQ(v[11], 2.0);
  // After a read the buffer is the record's slot, old values beyond size():
  // growing within it zero-fills, growing past it zeroes the fresh memory.
  v.resize(8);
  std::fill(v.begin(), v.end(), 7.5);
  v.write(1);
  v.read(1);
  v.resize(4);
  v.resize(8);
  EXPECT_TRUE(std::all_of(v.begin() + 4, v.end(), [](double x) { return x == 0.0; }));
  std::fill(v.begin(), v.end(), 7.5);
  v.resize(4);
  v.resize(v.capacity() + 1);
  EXPECT_TRUE(std::all_of(v.begin(), v.begin() + 4, [](double x) { return x == 7.5; }));
  EXPECT_TRUE(std::all_of(v.begin() + 4, v.end(), [](double x) { return x == 0.0; }));
}

// push_back() grows an empty store element by element, keeping earlier values.
TEST(StoreApi, PushBackGrows) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<std::uint32_t> v(rt, "push");
  EXPECT_TRUE(v.empty());
  for (std::uint32_t i = 0; i < 20000; ++i) {
    v.push_back(i * 3u);
    ASSERT_EQ(v.size(), i + 1);
    ASSERT_GE(v.capacity(), v.size());
  }
  for (std::uint32_t i = 0; i < 20000; ++i) ASSERT_EQ(v[i], i * 3u);
  v.reserve(50000);
  EXPECT_GE(v.capacity(), 50000u);
  EXPECT_EQ(v.size(), 20000u);
  EXPECT_EQ(v[19999], 19999u * 3u);
}

// begin()/end() work with the standard algorithms, const and non-const.
TEST(StoreApi, IteratorsWithStdAlgorithms) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<int> v(rt, "iter", 1000);
  std::iota(v.begin(), v.end(), 1);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0LL), 1000LL * 1001 / 2);
  EXPECT_EQ(std::distance(v.begin(), v.end()), 1000);
  std::reverse(v.begin(), v.end());
  EXPECT_EQ(v.front(), 1000);
  EXPECT_EQ(v.back(), 1);
  std::sort(v.begin(), v.end());
  EXPECT_TRUE(std::is_sorted(v.cbegin(), v.cend()));
  EXPECT_EQ(*std::find(v.begin(), v.end(), 500), 500);
  EXPECT_EQ(std::find(v.begin(), v.end(), 5000), v.end());
  const mlbs::Store<int>& cv = v;
  EXPECT_EQ(std::count_if(cv.begin(), cv.end(), [](int x) { return x % 2 == 0; }), 500);
  std::vector<int> copy(cv.begin(), cv.end());
  EXPECT_EQ(copy.size(), 1000u);
  EXPECT_EQ(copy[999], 1000);
  int n = 0;
  for (int& x : v) x = n++;
  EXPECT_EQ(v[999], 999);
}

// A moved-from store is empty (as a moved-from std::vector) and refuses record calls.
TEST(StoreApi, MoveTransfersTheStore) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> a(rt, "moved", kElems);
  fill(a, 1);
  a.write(1);
  mlbs::Store<float> b(std::move(a));
  EXPECT_EQ(b.name(), "moved");
  EXPECT_TRUE(b.contains(1));
  b.read(1);
  expect_floats(b, 1, kElems);
  EXPECT_THROW(a.write(2), mlbs::Error);
  EXPECT_THROW((void)a.contains(1), mlbs::Error);
  // size() and data() of the moved-from store must agree (size 0, like std::vector),
  // or a loop over a.size() dereferences a null data().
  EXPECT_TRUE(a.size() == 0 || a.data() != nullptr)
      << "moved-from store reports size " << a.size() << " with a null data()";
}

// ============================================================================
// records
// ============================================================================

// resize()/push_back() between writes: every record keeps the size it had when
// written, and read() restores that size and those bytes.
TEST(StoreApi, EachRecordKeepsItsOwnSize) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::unknown(), 6 * kPage));
  mlbs::Store<float> u(rt, "sizes", 10);
  std::vector<std::size_t> sizes;
  auto write_now = [&](std::uint64_t id) {
    fill(u, id);
    u.write(id);
    sizes.push_back(u.size());
  };
  write_now(0);                               // 10
  u.resize(1000);  write_now(1);              // 1000
  u.push_back(1.f); u.push_back(2.f); write_now(2);  // 1002
  u.resize(kElems); write_now(3);             // exactly 4 pages
  u.resize(5 * 1024 + 3); write_now(4);       // > 5 pages
  u.clear(); write_now(5);                    // empty record
  u.resize(1); write_now(6);
  for (int k = 0; k < 3000; ++k) u.push_back(float(k));
  write_now(7);                               // 3001
  // Writing copies: changing the buffer afterwards changes no record.
  std::fill(u.begin(), u.end(), -1.f);
  u.resize(7);

  for (std::uint64_t id : {4, 0, 7, 5, 2, 6, 1, 3}) {
    u.read(id);
    expect_floats(u, id, sizes[id]);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_FALSE(u.contains(id)) << "scratch read releases the record";
  }
  EXPECT_TRUE(u.ids().empty());
}

// StoreCore::read_exact (the fixed-shape read of the Python package): a record
// of another size is refused before it is consumed, in DRAM and on a file tier.
TEST(StoreApi, ReadExactRefusesAnotherSizeAndKeepsTheRecord) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::fifo(), 8 * kPage));
  mlbs::detail::StoreCore core(rt, "exact");
  std::vector<std::byte> bytes(3 * kPage, std::byte{5});
  for (std::uint64_t id = 0; id < 4; ++id) core.write(id, bytes.data(), bytes.size());   // two fit in DRAM
  core.flush();
  EXPECT_GT(rt.stats().tiers[1].bytes_in + rt.stats().tiers[2].bytes_in, 0u) << "nothing spilled";
  mlbs::detail::Block buf;
  for (std::uint64_t id = 0; id < 4; ++id) {
    EXPECT_THROW(core.read_exact(id, buf, bytes.size() + 4), mlbs::SizeMismatchError) << "id " << id;
    EXPECT_TRUE(core.contains(id)) << "a refused read consumed record " << id;
    core.read_exact(id, buf, bytes.size());
    ASSERT_GE(buf.capacity(), bytes.size());
    EXPECT_EQ(std::memcmp(buf.data(), bytes.data(), bytes.size()), 0) << "id " << id;
  }
}

// StoreCore::lend_slot / write_lent / return_slot (mlbs-run's chunk buffers): a lent slot filled in place
// becomes the record without a copy; lent slots count against DRAM and at most half of it is lent (the rest
// stays for writes that copy a chunk out of a lent slot: borrowers never wait on each other), and a refused
// write_lent leaves the slot with the caller.
TEST(StoreApi, LentSlotsBecomeRecordsWithoutACopy) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::fifo(), kPage));  // DRAM of three pages
  mlbs::detail::StoreCore core(rt, "lent");
  auto a = core.lend_slot(kPage);
  ASSERT_TRUE(a);
  EXPECT_FALSE(core.lend_slot(kPage)) << "a second page would lend more than half of DRAM";
  {
    mlbs::Store<char> s(rt, "beside", kPage);
    s.write(1);
    s.write(2);
    EXPECT_TRUE(s.contains(2)) << "the DRAM not lent takes writes";
  }
  std::memset(a->data(), 0x5a, kPage / 2);
  const std::byte* filled = a->data();
  core.write_lent(1, *a, kPage / 2);
  EXPECT_FALSE(*a) << "the slot is the record's now";
  EXPECT_EQ(core.info(1).size_bytes, kPage / 2);
  auto b = core.lend_slot(kPage);
  ASSERT_TRUE(b) << "nothing is lent any more";
  EXPECT_THROW(core.write_lent(2, *b, 2 * kPage), mlbs::InvalidArgumentError);
  EXPECT_THROW(core.write_lent(1, *b, kPage), mlbs::DuplicateIdError);
  ASSERT_TRUE(*b) << "a refused write_lent took the slot";
  core.return_slot(std::move(*b));
  auto c = core.lend_slot(kPage);
  ASSERT_TRUE(c) << "the returned slot is room again";
  core.return_slot(std::move(*c));
  mlbs::detail::Block out;
  core.read_exact(1, out, kPage / 2);
  EXPECT_NE(out.data(), filled) << "(a read copies or swaps: either way the bytes are the ones written in place)";
  EXPECT_TRUE(std::all_of(out.data(), out.data() + kPage / 2, [](std::byte x) { return x == std::byte{0x5a}; }));
}

// The same with byte records of odd sizes through a Store<char>.
TEST(StoreApi, OddByteSizesRoundTrip) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::fifo(), 3 * kPage));
  mlbs::Store<char> c(rt, "odd");
  const std::vector<std::size_t> sizes = {1, 3, 4095, 4096, 4097, 0, 7, 3 * kPage - 1, 3 * kPage, 5};
  for (std::uint64_t id = 0; id < sizes.size(); ++id) {
    fill_bytes(c, id, sizes[id]);
    c.write(id);
  }
  for (std::uint64_t id = 0; id < sizes.size(); ++id) {
    c.read(id);
    expect_bytes(c, id, sizes[id]);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

struct ScheduleCase {
  const char* name;
  std::function<mlbs::Schedule(const std::vector<std::uint64_t>&)> schedule;
  std::function<std::vector<std::uint64_t>(std::size_t)> read_order;
};

class StoreApiSizes : public ::testing::TestWithParam<int> {};

std::vector<ScheduleCase> schedule_cases() {
  auto fifo_order = [](std::size_t n) {
    std::vector<std::uint64_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
  };
  auto lifo_order = [=](std::size_t n) {
    auto v = fifo_order(n);
    std::reverse(v.begin(), v.end());
    return v;
  };
  auto shuffled = [=](std::size_t n) {
    auto v = fifo_order(n);
    std::mt19937_64 rng(12345);
    std::shuffle(v.begin(), v.end(), rng);
    return v;
  };
  return {
      {"lifo", [](const auto&) { return mlbs::Schedule::lifo(); }, lifo_order},
      {"fifo", [](const auto&) { return mlbs::Schedule::fifo(); }, fifo_order},
      {"explicit", [](const auto& order) { return mlbs::Schedule::explicit_order(order); }, shuffled},
      {"unknown", [](const auto&) { return mlbs::Schedule::unknown(); }, shuffled},
  };
}

// Records of sizes 1 B .. 5 pages + 123 B cross DRAM, the quota'd fast tier and
// the slow tier under each schedule and come back byte-exact.
TEST_P(StoreApiSizes, DifferentSizesCrossAllTiersByteExact) {
  const ScheduleCase sc = schedule_cases()[GetParam()];
  SCOPED_TRACE(sc.name);
  constexpr std::size_t kMax = 5 * kPage + 123;
  const std::size_t n = 40;
  std::mt19937_64 rng(99);
  std::vector<std::size_t> sizes(n);
  for (auto& s : sizes) s = 1 + rng() % kMax;
  sizes[3] = kMax;
  sizes[4] = 1;
  const auto order = sc.read_order(n);

  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, sc.schedule(order), kMax));
  {
    mlbs::Store<char> c(rt, "mixed");
    for (std::uint64_t id = 0; id < n; ++id) {
      fill_bytes(c, id, sizes[id]);
      c.write(id);
    }
    c.flush();
    auto s = rt.stats();
    EXPECT_GT(s.tiers[1].bytes_in, 0u);
    EXPECT_GT(s.tiers[2].bytes_in, 0u) << "nothing reached the slow tier";
    EXPECT_LE(s.tiers[1].used_bytes, 4 * kMax);
    for (std::uint64_t id : order) {
      c.read(id);
      expect_bytes(c, id, sizes[id]);
      if (HasFatalFailure()) return;
    }
    EXPECT_TRUE(c.ids().empty());
  }
  auto s = rt.stats();
  EXPECT_EQ(s.writes, n);
  EXPECT_EQ(s.reads, n);
  EXPECT_LE(s.tiers[1].peak_used_bytes, 4 * kMax);
  EXPECT_EQ(stored_records(dir.path()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Schedules, StoreApiSizes, ::testing::Range(0, 4),
                         [](const auto& info) { return std::string(schedule_cases()[info.param].name); });

// contains() and ids(): ids ascending whatever the write order, read releases.
TEST(StoreApi, ContainsAndIdsAscending) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::unknown()));
  mlbs::Store<float> u(rt, "ids", 16);
  const std::vector<std::uint64_t> written = {42, 7, 1000, 3, 0, std::numeric_limits<std::uint64_t>::max(), 8};
  EXPECT_TRUE(u.ids().empty());
  for (auto id : written) {
    EXPECT_FALSE(u.contains(id));
    fill(u, id % 1000);
    u.write(id);
    EXPECT_TRUE(u.contains(id));
  }
  auto sorted = written;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(u.ids(), sorted);
  EXPECT_FALSE(u.contains(5));
  EXPECT_FALSE(u.contains(43));
  u.read(1000);
  sorted.erase(std::find(sorted.begin(), sorted.end(), 1000u));
  EXPECT_FALSE(u.contains(1000));
  EXPECT_EQ(u.ids(), sorted);
  u.erase(0);
  sorted.erase(sorted.begin());
  EXPECT_EQ(u.ids(), sorted);
}

// Scratch: a read releases the record unless an explicit schedule reads it again.
TEST(StoreApi, ScratchReadReleasesUnlessScheduledAgain) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::explicit_order({1, 2, 1, 3, 3, 3})));
  mlbs::Store<float> u(rt, "again", kElems);
  for (std::uint64_t id : {1, 2, 3, 4}) {
    fill(u, id);
    u.write(id);
  }
  u.read(1);
  expect_floats(u, 1, kElems);
  EXPECT_TRUE(u.contains(1)) << "1 is read again later";
  u.read(2);
  EXPECT_FALSE(u.contains(2));
  u.read(1);
  expect_floats(u, 1, kElems);
  EXPECT_FALSE(u.contains(1)) << "last scheduled use of 1";
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(u.contains(3));
    u.read(3);
    expect_floats(u, 3, kElems);
  }
  EXPECT_FALSE(u.contains(3));
  u.read(4);  // not in the schedule at all: released at once
  expect_floats(u, 4, kElems);
  EXPECT_FALSE(u.contains(4));
  EXPECT_THROW(u.read(1), mlbs::UnknownIdError);
}

// erase() of a record still in DRAM: gone at once, the id may be written again.
TEST(StoreApi, EraseRecordInDram) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> u(rt, "erase", kElems);
  fill(u, 1);
  u.write(1);
  fill(u, 2);
  u.write(2);
  u.erase(1);
  EXPECT_FALSE(u.contains(1));
  EXPECT_EQ(u.ids(), std::vector<std::uint64_t>{2});
  expect_error<mlbs::UnknownIdError>([&] { u.read(1); }, {"store 'erase'", "id 1"}, ENOENT);
  expect_error<mlbs::UnknownIdError>([&] { u.erase(1); }, {"store 'erase'", "id 1"}, ENOENT);
  u.flush();
  EXPECT_EQ(stored_records(dir.path()), 1u) << "only record 2 has a file";
  // The id is free again.
  fill(u, 11);
  u.write(1);
  EXPECT_TRUE(u.contains(1));
  u.read(1);
  expect_floats(u, 11, kElems);
  u.read(2);
  expect_floats(u, 2, kElems);
}

// Erasing or releasing a record and writing its id again at once keeps the new
// record, even while a helper is still copying the old one down.
TEST(StoreApi, RewriteRightAfterEraseOrReadKeepsTheNewRecord) {
  TempDir dir;
  constexpr std::size_t kBig = 1 << 20;  // 4 MiB: the copy down takes a while
  constexpr std::uint64_t kBigBytes = kBig * sizeof(float);
  mlbs::Config cfg;
  // FIFO: the two oldest records keep DRAM, so each new big record is copied
  // down at once (placement does not want it in DRAM); one spare page is left.
  cfg.tiers = {mlbs::Tier::memory(3 * kBigBytes + kPage), mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = mlbs::Schedule::fifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "rewrite", kBig);
  fill(u, 100);
  u.write(100);
  fill(u, 101);
  u.write(101);
  for (std::uint64_t round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    u.resize(kBig);
    u[0] = float(round);
    u.write(7);
    // Compute a little while the helper copies record 7 down (as a solver would).
    std::fill(u.begin() + 1, u.begin() + 65536, float(round));
    if (round % 2) {
      u.erase(7);
    } else {
      u.read(7);
      ASSERT_EQ(u[0], float(round));
    }
    // A small new record under the same id: written long before the old
    // record's copy down ends.
    u.resize(16);
    u[0] = float(round + 1000);
    u.write(7);
    ASSERT_TRUE(u.contains(7)) << "the record just written is lost";
    u.read(7);
    ASSERT_EQ(u.size(), 16u);
    ASSERT_EQ(u[0], float(round + 1000));
  }
  u.flush();  // helpers idle: retired records' slots are back in the pool
  auto s = rt.stats();
  EXPECT_EQ(s.live_records, 2u);
  EXPECT_LE(s.tiers[0].used_bytes, 2 * kBigBytes) << "DRAM budget leaked";
  u.read(100);
  expect_floats(u, 100, kBig);
  u.read(101);
  expect_floats(u, 101, kBig);
  u.flush();
  EXPECT_EQ(rt.stats().tiers[0].used_bytes, 0u) << "DRAM budget leaked";
}

// Write-behind (memory tier water marks 0/0, the default) gives records that
// DRAM keeps a file copy as soon as a file tier has room, without flush().
// Observed at a point where the helpers are known to be idle: a write that
// throws CapacityError.
TEST(StoreApi, WriteBehindCopiesDramRecordsDownWithoutFlush) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kPage), mlbs::Tier::directory(dir / "slow", kPage)};
  cfg.schedule = mlbs::Schedule::lifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wb", kPage / sizeof(float));
  std::uint64_t accepted = 0;
  for (; accepted < 10; ++accepted) {
    fill(u, accepted);
    try {
      u.write(accepted);
    } catch (const mlbs::CapacityError&) {
      break;
    }
  }
  // 3 DRAM pages and 1 slow page hold 4 records at most; whether the 4th fits
  // depends on which record the write-behind had sent to the slow page when
  // it arrived (one that DRAM no longer wants frees its slot; the newest does not).
  ASSERT_GE(accepted, 3u);
  ASSERT_LE(accepted, 4u) << "more records accepted than 4 pages hold";
  bool on_slow = false;
  for (std::uint64_t id = 0; id < accepted; ++id) {
    const auto tiers = u.info(id).tiers;
    on_slow |= std::find(tiers.begin(), tiers.end(), 1) != tiers.end();
  }
  EXPECT_TRUE(on_slow) << "no record got its file copy: write-behind did not run";
  EXPECT_GT(rt.stats().tiers[1].bytes_in, 0u) << "nothing was ever written behind";
  for (std::uint64_t id = accepted; id-- > 0;) {
    u.read(id);
    expect_floats(u, id, kPage / sizeof(float));
  }
}

// erase() of a record that was pushed down to the slow tier removes its file.
TEST(StoreApi, EraseRecordOnSlowTierRemovesItsFile) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> u(rt, "deep", kElems);
  for (std::uint64_t id = 0; id < 16; ++id) {
    fill(u, id);
    u.write(id);
  }
  u.flush();
  std::uint64_t victim = ~0ull;
  for (std::uint64_t id = 0; id < 16 && victim == ~0ull; ++id) {
    const auto info = u.info(id);
    if (info.tiers == std::vector<int>{2}) victim = id;
  }
  ASSERT_NE(victim, ~0ull) << "no record reached the slow tier alone";
  const auto before = rec_files(dir.path());
  EXPECT_EQ(before.size(), 16u) << "scratch: one file copy per record at rest";
  u.erase(victim);
  EXPECT_FALSE(u.contains(victim));
  u.flush();
  const auto after = rec_files(dir.path());
  std::vector<std::string> gone, appeared;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(gone));
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(appeared));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].rfind("slow", 0), 0u) << gone[0] << " is not on the slow tier";
  EXPECT_TRUE(appeared.empty());
  EXPECT_EQ(stored_records(dir.path()), u.ids().size());
  for (std::uint64_t id = 16; id-- > 0;) {
    if (id == victim) continue;
    u.read(id);
    expect_floats(u, id, kElems);
  }
}

// --- a gate in the directory backend ------------------------------------------
// Holds the helper that removes (or creates) one record's file on one tier until
// the test opens the gate, and reports when a file of that record is created on
// that tier, so races between helpers can be staged deterministically.
struct TierGate {
  enum class Hold { remove, create };
  std::mutex mu;
  std::condition_variable cv;
  Hold hold = Hold::remove;
  int tier = -1;
  std::uint64_t id = 0;
  bool armed = false, held = false, open = false, created = false;

  void arm(Hold what, int t, std::uint64_t i) {
    std::lock_guard l(mu);
    hold = what;
    tier = t;
    id = i;
    armed = true;
    held = open = created = false;
  }
  /// Called by the helper about to remove (or create) the file of `i` on tier `t`.
  void pass(Hold what, int t, std::uint64_t i) {
    std::unique_lock l(mu);
    if (!armed || what != hold || t != tier || i != id) return;
    armed = false;
    held = true;
    cv.notify_all();
    cv.wait(l, [&] { return open; });
  }
  /// Called once a file of `i` exists on tier `t`.
  void on_created(int t, std::uint64_t i) {
    std::lock_guard l(mu);
    if (t == tier && i == id && held) {
      created = true;
      cv.notify_all();
    }
  }
  /// Bounded waits: a correct engine may never do what a buggy one does.
  bool wait_held(std::chrono::milliseconds limit) {
    std::unique_lock l(mu);
    return cv.wait_for(l, limit, [&] { return held; });
  }
  bool wait_created(std::chrono::milliseconds limit) {
    std::unique_lock l(mu);
    return cv.wait_for(l, limit, [&] { return created; });
  }
  void release() {
    std::lock_guard l(mu);
    armed = false;
    open = true;
    cv.notify_all();
  }
};

TierGate& tier_gate() {
  static TierGate g;
  return g;
}

class GatedDirectoryBackend final : public mlbs::tiers::WrappedBackend {
 public:
  GatedDirectoryBackend(int index, const mlbs::Tier& desc)
      : WrappedBackend(mlbs::tiers::make_directory_backend(index, desc)) {}

 private:
  using ObjectRef = mlbs::tiers::ObjectRef;
  std::unique_ptr<mlbs::tiers::ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override {
    tier_gate().pass(TierGate::Hold::create, index(), ref.id);
    auto w = WrappedBackend::do_create(ref, size);  // the file exists from here on
    tier_gate().on_created(index(), ref.id);
    return w;
  }
  void do_remove(const ObjectRef& ref) override {
    tier_gate().pass(TierGate::Hold::remove, index(), ref.id);
    WrappedBackend::do_remove(ref);
  }
};

/// While alive, "directory" tiers go through GatedDirectoryBackend (construct
/// it before the Runtime); the gate is inert until armed.
struct GatedDirectories {
  mlbs::test::BackendOverride override_{"directory", [](int index, const mlbs::Tier& desc, const mlbs::core::Group*) {
    return std::unique_ptr<mlbs::tiers::Backend>(std::make_unique<GatedDirectoryBackend>(index, desc));
  }};
  ~GatedDirectories() { tier_gate().release(); }  // before the built-in factory comes back
};

// Persistent, two helpers: a record erased while a helper still copies it to
// the last tier, then written again under the same id. The old generation's
// journal entry may land after the new one's; recovery must still list the id
// with the new bytes (and never resurrect the erased generation).
TEST(StoreApi, PersistentRewriteOfAnIdErasedDuringItsCopySurvivesReopen) {
  GatedDirectories gated;
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(4 * kRecBytes), mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = mlbs::Schedule::fifo();
  cfg.durability = mlbs::Durability::persistent;
  cfg.helper_threads = 2;
  const std::uint64_t A = 5;
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "journal", kElems);
    tier_gate().arm(TierGate::Hold::create, 1, A);
    fill(u, 1);
    u.write(A);  // generation 1: a helper starts making it durable and is held
    ASSERT_TRUE(tier_gate().wait_held(std::chrono::seconds(10))) << "record never went to the last tier";
    u.erase(A);
    fill(u, 2);
    u.write(A);  // generation 2, made durable by the other helper
    u.flush();
    tier_gate().release();  // generation 1's copy and journal entry finish now, after generation 2's
  }
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "journal");
  ASSERT_EQ(u.ids(), std::vector<std::uint64_t>{A}) << "the record written after the erase was lost";
  u.read(A);
  expect_floats(u, 2, kElems);
}

// Scratch, one helper: a read record's file removal held in the device (an
// unlink on a busy file system) while the helpers have nothing else to do
// holds up no fetch wanted after it. The remover runs removals beside the
// helpers, so the helper still fetches the next records; once the removal
// is let go, no file is left.
TEST(StoreApi, ARemovalHeldInTheDeviceHoldsUpNoFetch) {
  GatedDirectories gated;
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(2 * kRecBytes), mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = mlbs::Schedule::lifo();
  cfg.helper_threads = 1;
  cfg.copy_ahead = false;
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  constexpr std::uint64_t n = 8;
  for (std::uint64_t id = 0; id < n; ++id) {
    fill(u, id);
    u.write(id);
  }
  u.flush();  // every record is on the slow tier (written behind), 6 and 7 also in DRAM
  ASSERT_EQ(stored_records(dir / "slow"), n);
  tier_gate().arm(TierGate::Hold::remove, 1, 5);
  for (std::uint64_t id : {7, 6, 5}) {
    u.read(id);
    expect_floats(u, id, kElems);
  }
  // 4 and 3 fill DRAM, then nothing is to be copied and 5's file is removed.
  ASSERT_TRUE(tier_gate().wait_held(std::chrono::seconds(30))) << "record 5's file was never removed";
  // Reading 4 frees a slot for 2, which must be fetched while 5's removal is
  // held. The reads run on another thread, so that an engine that waits
  // behind the removal fails this test instead of hanging it.
  auto reads = std::async(std::launch::async, [&] {
    for (std::uint64_t id = 5; id-- > 0;) {
      u.read(id);
      expect_floats(u, id, kElems);
    }
  });
  const bool done = reads.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  tier_gate().release();
  reads.get();
  EXPECT_TRUE(done) << "the fetches waited behind record 5's removal";
  u.flush();  // scratch: returns once the removals are done too
  EXPECT_EQ(stored_records(dir / "slow"), 0u);
}

// ============================================================================
// errors
// ============================================================================

// Writing an id the store holds: DuplicateIdError, the record keeps its bytes.
TEST(StoreApi, DuplicateWriteThrowsAndKeepsTheRecord) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> u(rt, "u", kElems);
  fill(u, 7);
  u.write(7);
  fill(u, 8);
  expect_error<mlbs::DuplicateIdError>([&] { u.write(7); }, {"store 'u'", "id 7"}, EEXIST);
  try {
    u.write(7);
  } catch (const std::runtime_error& e) {  // the hierarchy DESIGN §3 promises
    EXPECT_NE(std::string(e.what()).find("mlbs:"), std::string::npos);
  }
  EXPECT_EQ(rt.stats().writes, 1u);
  u.read(7);
  expect_floats(u, 7, kElems);
}

// Reading or erasing an id the store does not hold: UnknownIdError; the
// working buffer is left untouched.
TEST(StoreApi, UnknownIdThrows) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> u(rt, "u", 100);
  fill(u, 3);
  expect_error<mlbs::UnknownIdError>([&] { u.read(7); }, {"store 'u'", "id 7"}, ENOENT);
  expect_error<mlbs::UnknownIdError>([&] { u.erase(7); }, {"store 'u'", "id 7"}, ENOENT);
  expect_error<mlbs::UnknownIdError>([&] { (void)u.info(7); }, {"store 'u'", "id 7"});
  expect_floats(u, 3, 100);
  EXPECT_EQ(rt.stats().reads, 0u);
}

// A persistent record whose byte size is not a whole number of elements of the
// reopening store's type: SizeMismatchError, and the record stays readable.
TEST(StoreApi, SizeMismatchOnRecoveryWithAnotherType) {
  TempDir dir;
  auto cfg = three_tiers(dir, mlbs::Schedule::fifo(), kRecBytes, mlbs::Durability::persistent);
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<char> c(rt, "mix");
    fill_bytes(c, 7, 6);
    c.write(7);
    c.flush();
  }
  mlbs::Runtime rt(cfg);
  {
    mlbs::Store<float> f(rt, "mix");
    EXPECT_EQ(f.ids(), std::vector<std::uint64_t>{7});
    f.resize(3, 1.5f);
    expect_error<mlbs::SizeMismatchError>([&] { f.read(7); }, {"store 'mix'", "id 7"}, EMSGSIZE);
    EXPECT_EQ(f.size(), 3u) << "failed read changed the working buffer";
    EXPECT_EQ(f[2], 1.5f);
    EXPECT_TRUE(f.contains(7)) << "a failed read must not lose the record";
  }
  {
    mlbs::Store<std::uint16_t> h(rt, "mix");
    h.read(7);
    EXPECT_EQ(h.size(), 3u);
  }
  mlbs::Store<char> c(rt, "mix");
  c.read(7);
  expect_bytes(c, 7, 6);
}

// A record larger than the DRAM budget: CapacityError at write, store usable after.
TEST(StoreApi, RecordLargerThanDramIsCapacityError) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));  // DRAM: 3 * 16 KiB
  mlbs::Store<float> u(rt, "u", 3 * kElems + 1);
  expect_error<mlbs::CapacityError>([&] { u.write(7); }, {"store 'u'", "id 7"}, ENOSPC);
  EXPECT_FALSE(u.contains(7));
  EXPECT_TRUE(u.ids().empty());
  u.resize(kElems);
  fill(u, 7);
  u.write(7);  // the id was not taken by the failed write
  u.read(7);
  expect_floats(u, 7, kElems);
}

// A record smaller than DRAM that needs a bigger slot than DRAM holds: the CapacityError says slots are whole blocks.
TEST(StoreApi, RecordWhoseSlotExceedsDramNamesTheSlot) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(512), mlbs::Tier::directory(dir / "slow")};
  mlbs::Runtime rt(cfg);
  mlbs::Store<char> u(rt, "u", 100);
  expect_error<mlbs::CapacityError>([&] { u.write(1); }, {"needs a DRAM slot of 4 KiB", "budget is 512 B"}, ENOSPC);
}

// DRAM, fast and slow tiers all with quotas and full, no read pending: write
// throws CapacityError instead of waiting forever, and loses no accepted record.
TEST(StoreApi, AllTiersFullWriteThrowsInsteadOfHanging) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecBytes), mlbs::Tier::directory(dir / "fast", 4 * kRecBytes),
               mlbs::Tier::directory(dir / "slow", 4 * kRecBytes)};
  cfg.schedule = mlbs::Schedule::lifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  std::uint64_t accepted = 0;
  bool threw = false;
  for (; accepted < 40; ++accepted) {
    fill(u, accepted);
    try {
      u.write(accepted);
    } catch (const mlbs::CapacityError& e) {
      threw = true;
      const std::string what = e.what();
      EXPECT_NE(what.find("store 'u'"), std::string::npos) << what;
      EXPECT_NE(what.find("id " + std::to_string(accepted)), std::string::npos) << what;
      break;
    }
  }
  ASSERT_TRUE(threw) << "40 records fit in 3 + 4 + 4 records of quota";
  EXPECT_GE(accepted, 8u);
  EXPECT_LE(accepted, 11u);
  EXPECT_FALSE(u.contains(accepted));
  EXPECT_EQ(u.ids().size(), accepted);
  auto s = rt.stats();
  for (int t = 0; t < 3; ++t) EXPECT_LE(s.tiers[t].used_bytes, s.tiers[t].capacity_bytes) << "tier " << t;
  // Reading frees room: the refused id can then be written.
  u.read(accepted - 1);
  expect_floats(u, accepted - 1, kElems);
  fill(u, accepted);
  u.write(accepted);
  u.read(accepted);
  expect_floats(u, accepted, kElems);
  for (std::uint64_t id = accepted - 1; id-- > 0;) {
    u.read(id);
    expect_floats(u, id, kElems);
    if (HasFatalFailure()) return;
  }
}

// A read whose record sits on a file tier while DRAM is full of records that no
// quota lets move down must not wait forever: it either delivers the record or
// throws CapacityError. (Bounded by a watchdog; the runtime's shutdown wakes it.)
// Staged with one helper and a flush() after each write, so the state is exact:
// X (the whole DRAM budget) goes to the slow tier and fills its quota, then three
// small records fill DRAM with nowhere to go.
TEST(StoreApi, ReadDoesNotHangWhenNoTierCanMakeRoom) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kPage), mlbs::Tier::directory(dir / "slow", 3 * kPage)};
  cfg.schedule = mlbs::Schedule::fifo();
  cfg.helper_threads = 1;
  auto rt = std::make_unique<mlbs::Runtime>(cfg);
  mlbs::Store<char> c(*rt, "u");
  const std::uint64_t X = 100;
  fill_bytes(c, X, 3 * kPage);
  c.write(X);
  c.flush();
  std::uint64_t small = 0;
  for (; small < 10; ++small) {
    fill_bytes(c, small, kPage);
    try {
      c.write(small);
      c.flush();
    } catch (const mlbs::CapacityError&) {
      break;
    }
  }
  ASSERT_EQ(small, 3u) << "setup: three one-page records should fill DRAM";
  ASSERT_EQ(c.info(X).tiers, std::vector<int>{1}) << "setup: X should sit on the slow tier alone";
  auto reader = std::async(std::launch::async, [&] {
    try {
      c.read(X);
      expect_bytes(c, X, 3 * kPage);
      return std::string("delivered");
    } catch (const mlbs::CapacityError&) {
      return std::string("capacity");
    } catch (const std::exception& e) {
      return std::string("other: ") + e.what();
    }
  });
  if (reader.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "read(" << X << ") still blocked after 5 s: DRAM is full of records no quota "
                  << "lets move down, and the read waits forever";
    rt.reset();  // shutdown wakes the blocked reader
  }
  const std::string outcome = reader.get();
  EXPECT_TRUE(outcome == "delivered" || outcome == "capacity") << outcome;
  if (!rt) return;
  for (std::uint64_t id = 0; id < small; ++id) {  // the small records are intact
    c.read(id);
    expect_bytes(c, id, kPage);
  }
}

// A directory tier whose parent folder is missing: TierError at construction,
// naming the path; a missing tier folder under an existing parent is created.
TEST(StoreApi, MissingParentFolderIsTierError) {
  TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecBytes), mlbs::Tier::directory(dir / "fast", 4 * kRecBytes),
               mlbs::Tier::directory(dir / "no/such/slow")};
  expect_error<mlbs::TierError>([&] { mlbs::Runtime rt(cfg); }, {"no/such", "tier 2"});
  EXPECT_FALSE(fs::exists(dir / "no")) << "no tree created at a mistyped path";
  cfg.tiers[2] = mlbs::Tier::directory(dir / "slow");
  mlbs::Runtime rt(cfg);
  EXPECT_TRUE(fs::is_directory(dir / "slow"));
}

// A tier path through a file: TierError naming that file as not a folder (not "parent folder does not exist").
TEST(StoreApi, TierPathThroughAFileNamesTheFile) {
  TempDir dir;
  std::ofstream(dir / "plain").put('x');
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecBytes), mlbs::Tier::directory(dir / "plain/sub/slow")};
  expect_error<mlbs::TierError>([&] { mlbs::Runtime rt(cfg); }, {"plain is a file, not a folder", "tier 1"}, ENOTDIR);
}

// Two runtimes of one process, same tier paths, same store name: disjoint records.
TEST(StoreApi, TwoRuntimesWithSamePathsDoNotShareRecords) {
  TempDir dir;
  mlbs::Runtime rt1(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Runtime rt2(three_tiers(dir, mlbs::Schedule::lifo()));
  mlbs::Store<float> a(rt1, "shared", kElems);
  mlbs::Store<float> b(rt2, "shared", kElems);
  // Enough records that both push files to both directory tiers.
  for (std::uint64_t id = 0; id < 12; ++id) {
    fill(a, id);
    a.write(id);
    fill(b, id + 500);
    b.write(id);
  }
  fill(a, 99);
  a.write(99);
  a.flush();
  b.flush();
  EXPECT_TRUE(a.contains(99));
  EXPECT_FALSE(b.contains(99));
  EXPECT_EQ(b.ids().size(), 12u);
  EXPECT_EQ(stored_records(dir.path()), 25u);
  a.read(99);
  expect_floats(a, 99, kElems);
  for (std::uint64_t id = 12; id-- > 0;) {
    a.read(id);
    expect_floats(a, id, kElems);
    b.read(id);
    expect_floats(b, id + 500, kElems);
    if (HasFatalFailure()) return;
  }
  a.flush();  // released records' files are removed by the helpers
  b.flush();
  EXPECT_EQ(stored_records(dir.path()), 0u);
}

// The same store name twice in one runtime: StoreBusyError, until the first closes.
TEST(StoreApi, SameStoreNameTwiceIsBusy) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  {
    mlbs::Store<float> u(rt, "u", 4);
    expect_error<mlbs::StoreBusyError>([&] { mlbs::Store<float> again(rt, "u"); }, {"store 'u'"}, EBUSY);
    expect_error<mlbs::StoreBusyError>([&] { mlbs::Store<char> other_type(rt, "u"); }, {"store 'u'"});
    mlbs::Store<float> other(rt, "v", 4);  // other names are fine
    u.write(1);
    other.write(1);
  }
  mlbs::Store<float> reopened(rt, "u");
  EXPECT_TRUE(reopened.ids().empty()) << "a closed scratch store's records are gone";
}

// Malformed store names: InvalidArgumentError naming the name.
TEST(StoreApi, BadStoreNamesAreRejected) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  for (const std::string& name :
       std::vector<std::string>{"a/b", "", ".", "..", "../up", "with space", std::string(201, 'x')}) {
    SCOPED_TRACE("name '" + name + "'");
    expect_error<mlbs::InvalidArgumentError>([&] { mlbs::Store<float> s(rt, name); },
                                             {name.empty() ? "''" : "'" + name + "'"}, EINVAL);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "fast" / "up"));
  mlbs::Store<float> ok(rt, "Good.name-1_x", 2);
  ok.write(1);
  EXPECT_TRUE(ok.contains(1));
}

// ============================================================================
// cleanliness and counters
// ============================================================================

// Destroying a scratch store, even with copies in flight, leaves no *.rec file.
TEST(StoreApi, ScratchStoreDestructionLeavesNoFiles) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::fifo()));
  for (int round = 0; round < 3; ++round) {
    {
      mlbs::Store<float> u(rt, "tmp", kElems);
      for (std::uint64_t id = 0; id < 20; ++id) {
        fill(u, id);
        u.write(id);
      }
      if (round == 1) u.flush();
      if (round == 2) {
        u.read(0);
        u.read(1);
      }
    }  // no flush: the store closes with write-behind still running
    EXPECT_EQ(stored_records(dir.path()), 0u) << "round " << round;
    auto s = rt.stats();
    EXPECT_EQ(s.live_records, 0u);
    EXPECT_EQ(s.tiers[1].used_bytes, 0u);
    EXPECT_EQ(s.tiers[2].used_bytes, 0u);
  }
}

// Runtime::stats(): write/read counts, quota respected at its peak, O(1) swaps
// when the working buffer and the record have the same size.
TEST(StoreApi, StatsCountersAndQuota) {
  TempDir dir;
  mlbs::Runtime rt(three_tiers(dir, mlbs::Schedule::lifo()));
  const std::uint64_t n = 16;
  {
    mlbs::Store<float> u(rt, "stats", kElems);
    for (std::uint64_t id = 0; id < n; ++id) {
      fill(u, id);
      u.write(id);
    }
    auto s = rt.stats();
    EXPECT_EQ(s.writes, n);
    EXPECT_EQ(s.reads, 0u);
    EXPECT_EQ(s.live_records, n);
    ASSERT_EQ(s.tiers.size(), 3u);
    EXPECT_EQ(s.tiers[0].kind, "memory");
    EXPECT_EQ(s.tiers[1].capacity_bytes, 4 * kRecBytes);
    EXPECT_LE(s.tiers[0].used_bytes, 3 * kRecBytes);
    EXPECT_GT(s.tiers[0].peak_used_bytes, 0u) << "DRAM peak never recorded";
    EXPECT_LE(s.tiers[0].peak_used_bytes, 3 * kRecBytes);
    for (std::uint64_t id = n; id-- > 0;) {
      u.read(id);
      expect_floats(u, id, kElems);
    }
    s = rt.stats();
    EXPECT_EQ(s.reads, n);
    EXPECT_EQ(s.writes, n);
    EXPECT_EQ(s.live_records, 0u);
    EXPECT_GT(s.buffer_swaps, 0u) << "same-size reads should swap blocks";
    EXPECT_LE(s.buffer_swaps, n);
    EXPECT_GT(s.tiers[1].peak_used_bytes, 0u);
    EXPECT_LE(s.tiers[1].peak_used_bytes, 4 * kRecBytes);
    EXPECT_GT(s.tiers[2].bytes_in, 0u);
    EXPECT_GT(s.writebacks, 0u);
    EXPECT_GE(s.tiers[0].bytes_in, n * kRecBytes);
    EXPECT_GE(s.tiers[0].bytes_out, n * kRecBytes);
    EXPECT_EQ(s.checksum_failures, 0u);
    // A read into a buffer of another size copies instead of swapping.
    const auto swaps = s.buffer_swaps;
    u.resize(10);
    fill(u, 50);
    u.write(50);
    u.resize(kElems * 2);
    u.read(50);
    expect_floats(u, 50, 10);
    EXPECT_EQ(rt.stats().buffer_swaps, swaps);
  }
}

// write() gives a record its checksum as it copies it (the pieces kind, hashed by the copying threads): a
// record that never left DRAM has it; with checksums off it has none. The hashing is timed as part of the
// copy (Stats::copy_hash_ns within copy_ns), and not at all without checksums.
TEST(StoreApi, WriteHashesWhatItCopies) {
  for (const bool checksums : {true, false}) {
    TempDir dir;
    mlbs::Config cfg;
    cfg.tiers = {mlbs::Tier::memory(64 << 20), mlbs::Tier::directory(dir / "slow")};
    cfg.checksums = checksums;
    // Else the idle tier may take a copy ahead of the record (architecture.md, "Into the one file tier").
    cfg.copy_ahead = false;
    mlbs::Runtime rt(cfg);
    mlbs::Store<std::uint8_t> s(rt, "s", (2 << 20) + 13);  // three pieces, the last short
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(i * 7 + i / 4099);
    s.write(1);
    const mlbs::RecordInfo info = s.info(1);
    EXPECT_EQ(info.tiers, std::vector<int>{0}) << "no helper copied it (nothing to make room for)";
    EXPECT_EQ(info.has_checksum, checksums);
    if (checksums) EXPECT_EQ(info.checksum, mlbs::catalog::record_checksum(s.data(), s.size()));
    const mlbs::Stats st = rt.stats();
    EXPECT_LE(st.copy_hash_ns, st.copy_ns);
    if (checksums)
      EXPECT_GT(st.copy_hash_ns, 0u);
    else
      EXPECT_EQ(st.copy_hash_ns, 0u);
  }
}

}  // namespace
