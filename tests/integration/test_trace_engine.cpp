// What the engine traces (helper operations per tier, the application's
// copies and waits), that tracing off records nothing, and that directory
// tiers keep their files out of the page cache unless told otherwise
// (docs/tracing.md).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"
#include "support/trace_json.hpp"
#include "tiers/directory/directory_backend.hpp"

namespace {

namespace fs = std::filesystem;
namespace trace = mlbs::trace;
using mlbs::test::TempDir;
using nlohmann::json;
using mlbs::test::spans;
using mlbs::test::thread_names;

constexpr std::size_t kElems = 4096;  // 16 KiB records
constexpr std::uint64_t kRecBytes = kElems * sizeof(float);

/// Tracing on and empty for the test; off and empty afterwards.
class TraceEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    trace::clear();
    trace::enable();
  }
  void TearDown() override {
    trace::enable(false);
    trace::clear();
  }
};

std::uint64_t bytes_of(const json& e) { return e.contains("args") ? e["args"].value("bytes", 0ull) : 0; }
/// The record a helper's span names in its arguments, if any.
std::optional<std::uint64_t> id_of(const json& e) {
  if (!e.contains("args") || !e["args"].contains("id")) return std::nullopt;
  return e["args"]["id"].get<std::uint64_t>();
}

mlbs::Config three_tiers(const TempDir& dir) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecBytes), mlbs::Tier::directory(dir / "fast", 4 * kRecBytes),
               mlbs::Tier::directory(dir / "slow")};
  cfg.schedule = mlbs::Schedule::lifo();
  return cfg;
}

/// Writes ids 0..n-1 and reads them back in reverse, checking the bytes.
void lifo_round_trip(mlbs::Store<float>& u, std::uint64_t n) {
  for (std::uint64_t id = 0; id < n; ++id) {
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = float(id * 100000 + i);
    u.write(id);
  }
  for (std::uint64_t id = n; id-- > 0;) {
    u.read(id);
    ASSERT_EQ(u[7], float(id * 100000 + 7)) << "id " << id;
  }
}

// A three-tier LIFO run traces every helper operation in its tier's category,
// with bytes, on named helper threads, and one "copy into slot" per write; the
// spans agree with the counters.
TEST_F(TraceEngine, ThreeTierLifoTracesHelperOpsAndCopies) {
  TempDir dir;
  const std::uint64_t n = 24;
  mlbs::Stats st;
  {
    mlbs::Runtime rt(three_tiers(dir));
    {
      mlbs::Store<float> u(rt, "wavefield", kElems);
      lifo_round_trip(u, n);
    }  // closing the store waits for its copies in flight: their spans are recorded
    st = rt.stats();
  }
  trace::enable(false);
  const json doc = json::parse(trace::chrome_json());
  const auto all = spans(doc);
  const auto names = thread_names(doc);

  // A copy the first read stopped is named so ("copy 1->2 cancelled").
  const std::regex copy_name(R"((writeback|copy|prefetch|demand) (\d+)->(\d+)( cancelled)?)");
  const std::regex remove_name(R"(remove (\d+))");
  std::map<std::string, std::uint64_t> per_category;
  std::uint64_t slot_copies = 0, down = 0, prefetch_to_dram = 0, demand = 0, cancelled = 0;
  std::map<std::uint64_t, unsigned> moves_of;  // record id -> helper copies that name it
  for (const json& e : all) {
    const std::string name = e.at("name"), cat = e.at("cat");
    ++per_category[cat];
    std::smatch m;
    if (std::regex_match(name, m, copy_name)) {
      const int src = std::stoi(m[2]), dst = std::stoi(m[3]);
      EXPECT_EQ(cat, "tier" + std::to_string(dst > 0 ? dst : src)) << name;
      EXPECT_EQ(bytes_of(e), kRecBytes) << name;
      const auto id = id_of(e);
      EXPECT_TRUE(id && *id < n) << name << " names the record it moved";
      if (id) ++moves_of[*id];
      EXPECT_EQ(names.at(e.at("tid").get<int>()).rfind("helper ", 0), 0u) << name << " off a helper";
      EXPECT_EQ(m[1] == "writeback", src == 0) << name << ": writebacks leave DRAM, copies join file tiers";
      if (m[4].matched) {
        // Copies ahead, and copies out of DRAM the reads made useless (Engine::turn()).
        EXPECT_TRUE(m[1] == "copy" || m[1] == "writeback") << name << ": only copies down are cancelled";
        ++cancelled;
        continue;
      }
      if (dst > src) ++down;
      if (m[1] == "prefetch" && dst == 0) ++prefetch_to_dram;
      if (m[1] == "demand") ++demand;
    } else if (std::regex_match(name, m, remove_name)) {
      EXPECT_EQ(cat, "tier" + std::string(m[1])) << name;
      EXPECT_TRUE(id_of(e) && *id_of(e) < n) << name << " names the record whose copy it removed";
    } else if (name == "copy into slot") {
      EXPECT_EQ(cat, "copy");
      EXPECT_EQ(bytes_of(e), kRecBytes);
      ++slot_copies;
    } else {
      EXPECT_TRUE(cat == "copy" || cat == "read_block" || cat == "write_block") << name << " in " << cat;
    }
  }
  EXPECT_GT(per_category["tier1"], 0u);
  EXPECT_GT(per_category["tier2"], 0u);
  EXPECT_EQ(slot_copies, n);
  EXPECT_EQ(down, st.writebacks);
  EXPECT_EQ(cancelled, st.cancelled_copies);
  EXPECT_EQ(prefetch_to_dram, st.prefetches);
  EXPECT_EQ(demand, st.demand_fetches);
  // DRAM holds 3 of the 24 records: the other 21 at least went down, each span naming its own.
  EXPECT_GE(moves_of.size(), n - 3);
  std::set<std::string> named;
  for (const auto& [tid, name] : names) named.insert(name);
  EXPECT_TRUE(named.count("helper 0"));
}

// Writes that wait for a slot and reads that wait for a record are traced,
// one span per stall, on the application's thread.
TEST_F(TraceEngine, BlockedWritesAndReadsAreTraced) {
  TempDir dir;
  constexpr std::size_t kBig = 64 * 1024;  // 256 KiB records
  constexpr std::uint64_t kBigBytes = kBig * sizeof(float);
  mlbs::Config cfg;
  mlbs::Tier slow = mlbs::Tier::directory(dir / "slow");
  slow.bandwidth_bytes_per_s = 32ull << 20;  // 8 ms per record: the writer outruns it
  cfg.tiers = {mlbs::Tier::memory(2 * kBigBytes), slow};
  cfg.schedule = mlbs::Schedule::lifo();
  const std::uint64_t n = 8;
  mlbs::Stats st;
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "blocked", kBig);
    lifo_round_trip(u, n);
    st = rt.stats();
  }
  trace::enable(false);
  ASSERT_GT(st.write_stalls, 0u) << "two DRAM slots and a throttled tier must block the writer";
  const json doc = json::parse(trace::chrome_json());
  std::uint64_t write_blocks = 0, read_blocks = 0;
  std::set<int> app_tids;
  for (const json& e : spans(doc)) {
    if (e.at("cat") == "write_block") {
      EXPECT_EQ(e.at("name"), "write blocked");
      EXPECT_EQ(bytes_of(e), kBigBytes);
      EXPECT_GT(e.at("dur").get<double>(), 0.0);
      app_tids.insert(e.at("tid").get<int>());
      ++write_blocks;
    }
    if (e.at("name") == "read blocked") {
      EXPECT_EQ(e.at("cat"), "read_block");
      app_tids.insert(e.at("tid").get<int>());
      ++read_blocks;
    }
    if (e.at("name") == "copy into slot") app_tids.insert(e.at("tid").get<int>());
  }
  EXPECT_EQ(write_blocks, st.write_stalls);
  EXPECT_EQ(read_blocks, st.read_stalls);
  EXPECT_EQ(app_tids.size(), 1u) << "the application's spans are on its own thread";
}

// With tracing off, a whole run records no event.
TEST_F(TraceEngine, OffRecordsNothing) {
  trace::enable(false);
  TempDir dir;
  {
    mlbs::Runtime rt(three_tiers(dir));
    mlbs::Store<float> u(rt, "quiet", kElems);
    lifo_round_trip(u, 12);
  }
  EXPECT_EQ(trace::event_count(), 0u);
}

// --- page cache -------------------------------------------------------------------

/// Fraction of a file's pages in the page cache (mincore of a fresh mapping);
/// nullopt where that cannot be observed.
std::optional<double> resident_fraction(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return std::nullopt;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return std::nullopt;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  const bool ok = ::mincore(map, size, vec.data()) == 0;
  ::munmap(map, size);
  if (!ok) return std::nullopt;
  std::size_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return double(resident) / double(vec.size());
}

/// Skips the test where dropping pages cannot be observed: tmpfs keeps files
/// in memory whatever we advise, and some systems lack mincore on files.
bool page_cache_observable(const fs::path& dir, std::string& why) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) == 0 && fs.f_type == 0x01021994 /* TMPFS_MAGIC */) {
    why = "the test folder is on tmpfs, which has no page cache to leave";
    return false;
  }
  const fs::path probe = dir / "mincore-probe";
  { std::ofstream(probe) << std::string(8192, 'x'); }
  const bool ok = resident_fraction(probe).has_value();
  fs::remove(probe);
  if (!ok) why = "mincore() cannot report on files here";
  return ok;
}

constexpr double kTolerance = 0.05;  // pages the kernel may keep (e.g. in flight)

class PageCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!page_cache_observable(dir_.path(), why)) GTEST_SKIP() << why;
  }
  TempDir dir_;
};

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 13 + 5) & 0xff);
  return v;
}

// A file the directory backend has written (page_cache = false, the default)
// is on the device and not in the page cache.
TEST_F(PageCache, WrittenFileLeavesThePageCache) {
  mlbs::tiers::DirectoryBackend tier(1, mlbs::Tier::directory(dir_ / "t"));
  ASSERT_FALSE(tier.desc().page_cache);
  tier.probe();
  tier.create_space("s");
  const std::string space = "s", store = "u";
  const auto data = pattern(4 << 20);
  auto w = tier.create({space, 1, 1, store}, data.size());
  w->write(0, data.data(), data.size());
  w->commit(false);
  const auto resident = resident_fraction(tier.object_path({space, 1, 1, store}));
  ASSERT_TRUE(resident);
  EXPECT_LE(*resident, kTolerance);
}

// A file read through the backend leaves the page cache once its reader is done.
TEST_F(PageCache, ReadFileLeavesThePageCache) {
  mlbs::Tier cached_desc = mlbs::Tier::directory(dir_ / "t");
  cached_desc.page_cache = true;
  mlbs::tiers::DirectoryBackend cached(1, cached_desc);
  mlbs::tiers::DirectoryBackend honest(1, mlbs::Tier::directory(dir_ / "t"));
  cached.probe();
  cached.create_space("s");
  const std::string space = "s", store = "u";
  const auto data = pattern(4 << 20);
  std::vector<std::byte> back(data.size());
  auto w = cached.create({space, 1, 1, store}, data.size());
  w->write(0, data.data(), data.size());
  w->commit(true);  // durable: clean pages, which a reader's advice can drop
  const fs::path file = cached.object_path({space, 1, 1, store});
  cached.open({space, 1, 1, store}, data.size())->read(0, back.data(), back.size());
  const auto before = resident_fraction(file);
  ASSERT_TRUE(before);
  if (*before < 0.5) GTEST_SKIP() << "the kernel did not keep the file cached to begin with";
  {
    auto r = honest.open({space, 1, 1, store}, data.size());
    r->read(0, back.data(), back.size());
  }
  EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size()), 0);
  const auto after = resident_fraction(file);
  ASSERT_TRUE(after);
  EXPECT_LE(*after, kTolerance);
}

/// Writes `n` records of 1 MiB through a runtime whose DRAM holds two, then
/// flushes (every record then has its file) and returns the largest resident
/// fraction among the files.
double max_resident_after_flush(const TempDir& dir, bool page_cache, std::uint64_t n) {
  constexpr std::size_t kMiBFloats = (1 << 20) / sizeof(float);
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(2 << 20), mlbs::Tier::directory(dir / "disk")};
  cfg.page_cache = page_cache;
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "honest", kMiBFloats);
  for (std::uint64_t id = 0; id < n; ++id) {
    std::fill(u.begin(), u.end(), float(id));
    u.write(id);
  }
  u.flush();
  double worst = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "disk"))
    if (e.path().extension() == ".rec" || e.path().extension() == ".mlbs")  // a record's file, or a log
      worst = std::max(worst, resident_fraction(e.path()).value_or(1.0));
  EXPECT_EQ(mlbs::test::stored_records(dir / "disk"), n);
  for (std::uint64_t id = n; id-- > 0;) {
    u.read(id);
    EXPECT_EQ(u[12345], float(id));
  }
  return worst;
}

// Through the engine: by default no record file stays in the page cache;
// Config::page_cache = true reaches the directory tiers and leaves it alone.
TEST_F(PageCache, EngineTiersFollowConfig) {
  EXPECT_LE(max_resident_after_flush(dir_, false, 6), kTolerance);
  EXPECT_GT(max_resident_after_flush(dir_, true, 6), 0.5)
      << "with page_cache = true freshly written files stay cached";
}

}  // namespace
