// Randomized property test of the Store API against a model (std::map<id, bytes>).
//
// Every case draws, from its own seed, a configuration (schedule fifo / lifo /
// unknown / explicit with repeats, DRAM of 1-4 largest records, a fast tier
// quota of 0-6 records or unlimited or no fast tier at all, 1-2 helpers, small
// I/O chunks, water marks, sometimes persistent durability) and a random
// interleaving of write / read / erase / contains / ids / flush. After every
// read every byte is compared with the model; at the end ids() must equal the
// model, quotas must hold, the counters must match, and a scratch store must
// leave no file behind (a persistent one must recover exactly the model).
//
// Replay one case:   MLBS_PROPERTY_SEED=<case seed> MLBS_PROPERTY_CASES=1
// More/fewer cases:  MLBS_PROPERTY_CASES=<n>    (default 2000)
// Trace each op:     MLBS_PROPERTY_VERBOSE=1    (prints every operation as it starts)
// Keep going:        MLBS_PROPERTY_KEEP_GOING=1 (report every failing case, not just the first)
// Hang limit:        MLBS_PROPERTY_HANG_S=<s>   (default 20 s per case)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mlbs/mlbs.hpp"
#include "support/io_backend.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::test::stored_records;
using mlbs::test::TempDir;

constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kDefaultSeed = 0x6d6c6273;  // "mlbs"
constexpr std::uint64_t kDefaultCases = 2000;

/// SplitMix64: small, fast, and every seed gives a good stream.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  std::uint64_t range(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(unsigned percent) { return below(100) < percent; }
};

std::optional<std::uint64_t> env_u64(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::strtoull(v, nullptr, 0);
}

// ---------------------------------------------------------------------------
// one case's parameters
// ---------------------------------------------------------------------------

struct Params {
  std::uint64_t seed = 0;
  bool bytes = false;                 ///< Store<char> (odd sizes) instead of Store<float>
  std::size_t max_record = 0;         ///< largest record, bytes
  std::size_t mem_records = 0;        ///< DRAM budget in largest records (slots)
  bool three_tiers = true;
  int fast_records = -1;              ///< fast quota in largest records; -1 unlimited
  bool fast_high_water = false;       ///< fast tier high_water 0.5 (scratch: fill cap)
  bool mem_water = false;             ///< memory water marks 0.5/0.25 instead of 0/0
  mlbs::Schedule schedule;
  unsigned helpers = 1;
  bool checksums = true;
  std::uint64_t io_chunk = 8ull << 20;
  bool persistent = false;
  std::vector<std::uint64_t> universe;  ///< the ids this case uses
  std::size_t ops = 0;
  bool copy_ahead = true;             ///< Config::copy_ahead (scratch: a record may have a second, backing copy)

  std::string describe() const {
    std::ostringstream o;
    o << "seed " << seed << " (replay: MLBS_PROPERTY_SEED=" << seed << " MLBS_PROPERTY_CASES=1): "
      << (bytes ? "Store<char>" : "Store<float>") << ", max record " << max_record << " B, DRAM "
      << mem_records << " records, " << (three_tiers ? "3 tiers" : "2 tiers");
    if (three_tiers)
      o << ", fast quota " << (fast_records < 0 ? std::string("unlimited") : std::to_string(fast_records) + " records")
        << (fast_high_water ? " (high water 0.5)" : "");
    o << (mem_water ? ", DRAM water 0.5/0.25" : "") << ", schedule " << mlbs::to_string(schedule.kind);
    if (schedule.kind == mlbs::Schedule::Kind::explicit_order) {
      o << " [";
      for (std::size_t i = 0; i < schedule.order.size(); ++i) o << (i ? "," : "") << schedule.order[i];
      o << "]";
    }
    o << ", " << helpers << " helper(s), checksums " << (checksums ? "on" : "off") << ", io chunk "
      << io_chunk << ", " << (persistent ? "persistent" : "scratch") << ", ids {";
    for (std::size_t i = 0; i < universe.size(); ++i) o << (i ? "," : "") << universe[i];
    o << "}, " << ops << " ops" << (copy_ahead ? "" : ", no copy ahead");
    return o.str();
  }
};

Params draw(std::uint64_t seed) {
  Rng rng{seed};
  Params p;
  p.seed = seed;
  p.bytes = rng.chance(40);
  const std::size_t pages = rng.range(1, 5);
  p.max_record = pages * kPage + (p.bytes && rng.chance(50) ? rng.range(1, 777) : 0);
  p.mem_records = rng.range(1, 4);
  p.three_tiers = rng.chance(75);
  if (p.three_tiers) p.fast_records = rng.chance(20) ? -1 : int(rng.range(0, 6));
  p.fast_high_water = p.three_tiers && rng.chance(15);
  p.mem_water = rng.chance(15);
  p.helpers = unsigned(rng.range(1, 2));
  p.checksums = !rng.chance(15);
  p.io_chunk = rng.chance(40) ? kPage * rng.range(1, 2) : 8ull << 20;
  p.persistent = rng.chance(4);

  // Ids: small consecutive numbers or scattered 64-bit values.
  const std::size_t n_ids = rng.range(2, 14);
  const bool scattered = rng.chance(30);
  while (p.universe.size() < n_ids) {
    const std::uint64_t id = scattered ? rng.next() >> rng.below(64) : p.universe.size() * 3 + rng.below(3);
    if (std::find(p.universe.begin(), p.universe.end(), id) == p.universe.end()) p.universe.push_back(id);
  }

  switch (rng.below(4)) {
    case 0: p.schedule = mlbs::Schedule::fifo(); break;
    case 1: p.schedule = mlbs::Schedule::lifo(); break;
    case 2: p.schedule = mlbs::Schedule::unknown(); break;
    default: {
      // A random permutation of (part of) the ids, with repeats.
      std::vector<std::uint64_t> order = p.universe;
      for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
      order.resize(rng.range(1, order.size()));
      const std::size_t repeats = rng.below(order.size() + 3);
      for (std::size_t k = 0; k < repeats; ++k)
        order.insert(order.begin() + std::ptrdiff_t(rng.below(order.size() + 1)),
                     p.universe[rng.below(p.universe.size())]);
      p.schedule = mlbs::Schedule::explicit_order(std::move(order));
    }
  }
  p.ops = rng.range(8, p.persistent ? 30 : 90);
  p.copy_ahead = rng.chance(50);  // drawn last: earlier seeds keep their other parameters
  return p;
}

mlbs::Config config_for(const Params& p, const fs::path& root) {
  const std::uint64_t slot = (p.max_record + kPage - 1) / kPage * kPage;
  mlbs::Config cfg;
  // Correctness, not speed: skip the per-record fdatasync + DONTNEED that
  // keeps benchmarks honest (it tripled this test's time). The io_uring run
  // needs no sync per record, and needs the page cache off to use O_DIRECT.
  cfg.page_cache = !mlbs::test::io_uring_variant();
  mlbs::Tier mem = mlbs::Tier::memory(p.mem_records * slot);
  if (p.mem_water) {
    mem.high_water = 0.5;
    mem.low_water = 0.25;
  }
  cfg.tiers = {mem};
  if (p.three_tiers) {
    // A quota of "0 records" is one byte: every non-empty record skips the tier.
    const std::uint64_t quota =
        p.fast_records < 0 ? 0 : p.fast_records == 0 ? 1 : std::uint64_t(p.fast_records) * p.max_record;
    mlbs::Tier fast = mlbs::Tier::directory((root / "fast").string(), quota);
    if (p.fast_high_water) fast.high_water = fast.low_water = 0.5;
    cfg.tiers.push_back(fast);
  }
  cfg.tiers.push_back(mlbs::Tier::directory((root / "slow").string()));
  cfg.schedule = p.schedule;
  cfg.durability = p.persistent ? mlbs::Durability::persistent : mlbs::Durability::scratch;
  cfg.helper_threads = p.helpers;
  cfg.checksums = p.checksums;
  cfg.io_chunk_bytes = p.io_chunk;
  cfg.shutdown_timeout_ms = 20000;
  cfg.copy_ahead = p.copy_ahead;
  return cfg;
}

// ---------------------------------------------------------------------------
// running a case against the model
// ---------------------------------------------------------------------------

using Bytes = std::vector<unsigned char>;

template <class T>
void expect_equal(const mlbs::Store<T>& s, const Bytes& want, std::uint64_t id, const std::string& when) {
  const std::size_t have = s.size() * sizeof(T);
  ASSERT_EQ(have, want.size()) << when << ": record " << id << " came back with the wrong size";
  if (have && std::memcmp(s.data(), want.data(), have) != 0) {
    const auto* got = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t i = 0;
    while (got[i] == want[i]) ++i;
    FAIL() << when << ": record " << id << " differs at byte " << i << " of " << have << " (got "
           << int(got[i]) << ", want " << int(want[i]) << ")";
  }
}

/// The case's runtime, which the watchdog may shut down from its own thread to
/// wake an application call that hangs (a waiting read or write then throws
/// ShutdownError and the case fails with its seed and operation log).
class RuntimeSlot {
 public:
  mlbs::Runtime& open(const mlbs::Config& cfg) {
    auto fresh = std::make_unique<mlbs::Runtime>(cfg);
    std::lock_guard lock(mu_);
    rt_ = std::move(fresh);
    return *rt_;
  }
  void close() {
    std::unique_ptr<mlbs::Runtime> old;
    std::lock_guard lock(mu_);
    old = std::move(rt_);
  }
  /// Watchdog thread: shuts the runtime down; Stores keep the engine alive.
  void break_hang() {
    close();
    broken_ = true;
  }
  bool broken() const { return broken_; }

 private:
  std::mutex mu_;
  std::unique_ptr<mlbs::Runtime> rt_;
  std::atomic<bool> broken_{false};
};

template <class T>
class CaseRunner {
 public:
  CaseRunner(const Params& p, const fs::path& root, RuntimeSlot& slot, std::vector<std::string>& log)
      : p_(p), root_(root), slot_(slot), log_(log), rng_{p.seed ^ 0xa5a5a5a5a5a5a5a5ull} {
    if (p.schedule.kind == mlbs::Schedule::Kind::explicit_order)
      for (auto id : p.schedule.order) ++remaining_[id];
  }

  void run() {
    const std::string name = "prop";
    mlbs::Runtime* rt = &slot_.open(config_for(p_, root_));
    {
      mlbs::Store<T> s(*rt, name);
      for (std::size_t op = 0; op < p_.ops; ++op) {
        step(s, op);
        if (::testing::Test::HasFatalFailure()) return;
      }
      ASSERT_NO_FATAL_FAILURE(final_checks(s, *rt));
    }
    if (!p_.persistent) {
      EXPECT_EQ(stored_records(root_), 0u) << "scratch store left record files behind";
      return;
    }
    // Persistent: a new runtime recovers exactly the model.
    note("end: new runtime, recovery");
    slot_.close();
    rt = &slot_.open(config_for(p_, root_));
    mlbs::Store<T> s(*rt, name);
    ASSERT_EQ(s.ids(), model_ids()) << "recovered ids differ from the model";
    for (auto& [id, bytes] : model_) {
      s.read(id);
      ASSERT_NO_FATAL_FAILURE(expect_equal(s, bytes, id, "after recovery"));
    }
  }

 private:
  std::vector<std::uint64_t> model_ids() const {
    std::vector<std::uint64_t> ids;
    for (auto& [id, b] : model_) ids.push_back(id);
    return ids;
  }
  std::uint64_t any_id() { return p_.universe[rng_.below(p_.universe.size())]; }
  std::uint64_t model_id() {
    auto it = model_.begin();
    std::advance(it, std::ptrdiff_t(rng_.below(model_.size())));
    return it->first;
  }
  std::optional<std::uint64_t> absent_id() {
    for (int k = 0; k < 8; ++k) {
      const std::uint64_t id = rng_.chance(80) ? any_id() : rng_.next();
      if (!model_.count(id)) return id;
    }
    return std::nullopt;
  }
  /// "id: tiers" of every record the model holds, for failure messages.
  std::string where(const mlbs::Store<T>& s) const {
    std::string out = "tiers per record:";
    for (auto& [id, b] : model_) {
      out += " " + std::to_string(id) + ":{";
      try {
        for (int t : s.info(id).tiers) out += std::to_string(t) + ",";
      } catch (const std::exception& e) {
        out += e.what();
      }
      out += "}";
    }
    return out;
  }
  void note(std::string line) {
    static const bool verbose = std::getenv("MLBS_PROPERTY_VERBOSE") != nullptr;
    if (verbose) {
      std::fprintf(stderr, "  %s\n", line.c_str());
      std::fflush(stderr);
    }
    log_.push_back(std::move(line));
  }
  std::string tag(std::size_t op, const char* what, std::uint64_t id) {
    return "op " + std::to_string(op) + " " + what + "(" + std::to_string(id) + ")";
  }

  /// Fills the working buffer with a fresh random size and random bytes,
  /// sometimes by resize(), sometimes by push_back() from what is there.
  void refill(mlbs::Store<T>& s) {
    std::size_t elems;
    const std::size_t max_elems = p_.max_record / sizeof(T);
    const unsigned shape = unsigned(rng_.below(100));
    if (shape < 3)
      elems = 0;
    else if (shape < 35)
      elems = rng_.range(1, p_.max_record / kPage) * kPage / sizeof(T);  // whole pages
    else if (shape < 45)
      elems = rng_.range(1, std::min<std::size_t>(16, max_elems));  // tiny
    else
      elems = rng_.range(1, max_elems);
    if (rng_.chance(15) && elems >= s.size() && elems - s.size() < 64) {
      while (s.size() < elems) s.push_back(T{});
    } else {
      s.resize(elems);
    }
    auto* out = reinterpret_cast<unsigned char*>(s.data());
    const std::size_t n = elems * sizeof(T);
    for (std::size_t i = 0; i < n; i += 8) {
      const std::uint64_t v = rng_.next();
      std::memcpy(out + i, &v, std::min<std::size_t>(8, n - i));
    }
  }

  void step(mlbs::Store<T>& s, std::size_t op) {
    const unsigned pick = unsigned(rng_.below(100));
    if (pick < 42) {  // write
      const std::uint64_t id = any_id();
      refill(s);
      note(tag(op, "write", id) + " " + std::to_string(s.size() * sizeof(T)) + " B");
      if (model_.count(id)) {
        EXPECT_THROW(s.write(id), mlbs::DuplicateIdError) << tag(op, "write", id) << " of a held id";
        return;
      }
      s.write(id);
      ++writes_;
      const auto* b = reinterpret_cast<const unsigned char*>(s.data());
      model_[id] = Bytes(b, b + s.size() * sizeof(T));
    } else if (pick < 72) {  // read
      if (model_.empty() || rng_.chance(8)) {
        if (auto id = absent_id()) {
          note(tag(op, "read", *id) + " (absent)");
          EXPECT_THROW(s.read(*id), mlbs::UnknownIdError) << tag(op, "read", *id) << " of an absent id";
        }
        return;
      }
      const std::uint64_t id = model_id();
      note(tag(op, "read", id));
      s.read(id);
      ++reads_;
      ASSERT_NO_FATAL_FAILURE(expect_equal(s, model_[id], id, tag(op, "read", id)));
      // Scratch: a read releases the record unless the explicit schedule names it again.
      bool keep = p_.persistent;
      if (auto it = remaining_.find(id); it != remaining_.end() && it->second > 0) keep |= --it->second > 0;
      if (!keep) model_.erase(id);
      EXPECT_EQ(s.contains(id), keep) << tag(op, "read", id) << (keep ? " released a record read again later"
                                                                      : " did not release the record");
    } else if (pick < 84) {  // erase
      if (model_.empty() || rng_.chance(15)) {
        if (auto id = absent_id()) {
          note(tag(op, "erase", *id) + " (absent)");
          EXPECT_THROW(s.erase(*id), mlbs::UnknownIdError) << tag(op, "erase", *id) << " of an absent id";
        }
        return;
      }
      const std::uint64_t id = model_id();
      note(tag(op, "erase", id));
      s.erase(id);
      model_.erase(id);
      EXPECT_FALSE(s.contains(id)) << tag(op, "erase", id);
    } else if (pick < 93) {  // contains
      const std::uint64_t id = any_id();
      note(tag(op, "contains", id));
      EXPECT_EQ(s.contains(id), model_.count(id) == 1) << tag(op, "contains", id);
    } else if (pick < 97) {  // ids
      note("op " + std::to_string(op) + " ids()");
      EXPECT_EQ(s.ids(), model_ids()) << "op " << op << " ids()";
    } else {  // flush
      note("op " + std::to_string(op) + " flush()");
      s.flush();
      // Scratch, last tier unlimited: at rest every record has one file copy (two with copy ahead).
      if (!p_.persistent) expect_file_copies(s, "op " + std::to_string(op) + " flush()");
    }
  }

  /// Scratch, at rest: one file per live record, or up to two with copy
  /// ahead (a record on a tier that may give it up keeps a copy below).
  void expect_file_copies(const mlbs::Store<T>& s, const std::string& when) {
    const std::size_t files = stored_records(root_);
    if (!p_.copy_ahead) {
      EXPECT_EQ(files, model_.size()) << when << ": files on disk vs live records; " << where(s);
      return;
    }
    EXPECT_GE(files, model_.size()) << when << ": files on disk vs live records; " << where(s);
    EXPECT_LE(files, 2 * model_.size()) << when << ": files on disk vs live records; " << where(s);
  }

  void final_checks(mlbs::Store<T>& s, mlbs::Runtime& rt) {
    note("end: ids(), contains()");
    ASSERT_EQ(s.ids(), model_ids()) << "ids() at the end";
    for (auto& [id, b] : model_) EXPECT_TRUE(s.contains(id)) << "contains(" << id << ") at the end";
    note("end: flush()");
    s.flush();
    const mlbs::Stats st = rt.stats();
    const mlbs::Config& cfg = rt.config();
    ASSERT_EQ(st.tiers.size(), cfg.tiers.size());
    for (std::size_t t = 0; t < st.tiers.size(); ++t) {
      const std::uint64_t cap = cfg.tiers[t].capacity_bytes;
      if (!cap) continue;
      EXPECT_LE(st.tiers[t].used_bytes, cap) << "tier " << t << " over its quota";
      EXPECT_LE(st.tiers[t].peak_used_bytes, cap) << "tier " << t << " peak over its quota";
    }
    EXPECT_EQ(st.writes, writes_);
    EXPECT_EQ(st.reads, reads_);
    EXPECT_EQ(st.live_records, model_.size());
    EXPECT_EQ(st.checksum_failures, 0u);
    if (!p_.persistent) expect_file_copies(s, "end");
    // Everything still readable, byte-exact, in the model's order.
    if (rng_.chance(50))
      for (auto& [id, bytes] : model_) {
        note("end: read(" + std::to_string(id) + ")");
        s.read(id);
        ASSERT_NO_FATAL_FAILURE(expect_equal(s, bytes, id, "final read"));
        if (p_.persistent) continue;
        if (auto it = remaining_.find(id); it != remaining_.end() && it->second > 0) --it->second;
      }
  }

  const Params& p_;
  fs::path root_;
  RuntimeSlot& slot_;
  std::vector<std::string>& log_;
  Rng rng_;
  std::map<std::uint64_t, Bytes> model_;
  std::map<std::uint64_t, std::uint64_t> remaining_;  ///< explicit schedule: uses left per id
  std::uint64_t writes_ = 0, reads_ = 0;
};

/// The running test's assertion results so far.
const ::testing::TestResult& results() {
  return *::testing::UnitTest::GetInstance()->current_test_info()->result();
}

/// The failed assertions among results from `first` on, one per line: the
/// case's report repeats them after its operation log, so that the tail of
/// a long CI log still says what went wrong.
std::string failures_since(int first) {
  std::string out;
  const ::testing::TestResult& r = results();
  for (int i = first; i < r.total_part_count(); ++i)
    if (const ::testing::TestPartResult& part = r.GetTestPartResult(i); part.failed())
      out += "    " + std::string(part.summary()) + "\n";
  return out;
}

/// Watches for a case that runs far too long (a hang would otherwise stall the
/// whole suite without saying which seed): prints the case, shuts its runtime
/// down so the blocked call throws, and aborts if even that does not end it.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds per_case) : limit_(per_case) {
    thread_ = std::jthread([this](std::stop_token st) {
      std::unique_lock lock(mu_);
      while (!st.stop_requested()) {
        const std::uint64_t seen = generation_;
        if (cv_.wait_for(lock, st, limit_, [&] { return generation_ != seen; }) || st.stop_requested())
          continue;
        std::fprintf(stderr, "\nproperty case hung for %llds, shutting its runtime down: %s\n",
                     static_cast<long long>(limit_.count()), current_.c_str());
        std::fflush(stderr);
        RuntimeSlot* slot = slot_;
        lock.unlock();
        if (slot) slot->break_hang();
        lock.lock();
        if (!cv_.wait_for(lock, st, std::chrono::seconds(30), [&] { return generation_ != seen; }) &&
            !st.stop_requested()) {
          std::fprintf(stderr, "property case still hung after its runtime was shut down: aborting\n");
          std::abort();
        }
      }
    });
  }
  /// A new case begins (or, with slot == nullptr, the last one ended).
  void start(std::string what, RuntimeSlot* slot) {
    std::lock_guard lock(mu_);
    current_ = std::move(what);
    slot_ = slot;
    ++generation_;
    cv_.notify_all();
  }

 private:
  std::chrono::seconds limit_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::uint64_t generation_ = 0;
  std::string current_;
  RuntimeSlot* slot_ = nullptr;
  std::jthread thread_;  // last: stopped and joined first
};

// Randomized schedules, budgets and operation mixes agree with the model, case by case.
TEST(Property, RandomOperationsMatchTheModel) {
  const std::uint64_t base = env_u64("MLBS_PROPERTY_SEED").value_or(kDefaultSeed);
  const std::uint64_t cases = env_u64("MLBS_PROPERTY_CASES").value_or(kDefaultCases);
  TempDir dir;  // one folder for every case: tiers are reused, stores are namespaced
  const bool keep_going = std::getenv("MLBS_PROPERTY_KEEP_GOING") != nullptr;
  Watchdog watchdog(std::chrono::seconds(env_u64("MLBS_PROPERTY_HANG_S").value_or(20)));
  std::uint64_t failed = 0;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t done = 0, ops = 0, persistent = 0;
  for (std::uint64_t k = 0; k < cases; ++k) {
    const Params p = draw(base + k);
    RuntimeSlot slot;
    watchdog.start(p.describe(), &slot);
    SCOPED_TRACE(p.describe());
    std::vector<std::string> log;
    const int parts_before = results().total_part_count();
    try {
      if (p.bytes)
        CaseRunner<char>(p, dir.path(), slot, log).run();
      else
        CaseRunner<float>(p, dir.path(), slot, log).run();
    } catch (const std::exception& e) {
      ADD_FAILURE() << (slot.broken() ? "HUNG (the watchdog shut the runtime down) in " : "unexpected exception in ")
                    << (log.empty() ? "no op" : log.back()) << ": " << e.what();
    }
    slot.close();
    watchdog.start("between cases", nullptr);
    if (p.persistent) {  // the next persistent case must not recover this one's records
      std::error_code ec;
      fs::remove_all(dir.path() / "slow" / "prop", ec);
      ++persistent;
    }
    ++done;
    ops += p.ops;
    if (const std::string failures = failures_since(parts_before); !failures.empty()) {
      std::string all;
      for (const auto& line : log) all += "    " + line + "\n";
      ADD_FAILURE() << "case " << k << " failed; operations so far:\n" << all << "  what failed:\n" << failures;
      ++failed;
      if (!keep_going) break;  // one failing case is enough to replay
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ property ] %llu cases (%llu persistent, %llu failed), %llu operations, base seed %llu, %.1f s\n",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(persistent),
              static_cast<unsigned long long>(failed),
              static_cast<unsigned long long>(ops), static_cast<unsigned long long>(base), secs);
}

}  // namespace
