// A running store's live catalog (docs/live-catalog.md) as another process
// sees it: records and their states while the writer works, erases, a closed
// store, recovery, the setting that turns it off, and mlbs-inspect --live.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catalog/live.hpp"
#include "mlbs/mlbs.hpp"
#include "support/inspect_tool.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::catalog::RecordState;
using mlbs::catalog::live::RecordView;
using mlbs::catalog::live::View;
using mlbs::test::TempDir;

constexpr std::size_t kElems = 4096;  // 16 KiB records

mlbs::Config config(const TempDir& dir, mlbs::Durability d = mlbs::Durability::scratch) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(8 * kElems * sizeof(float)), mlbs::Tier::directory(dir / "slow")};
  cfg.durability = d;
  return cfg;
}

void write(mlbs::Store<float>& u, std::uint64_t id) {
  u.resize(kElems);
  for (std::size_t i = 0; i < kElems; ++i) u[i] = float(id * 7 + i);
  u.write(id);
}

/// Waits (on the segment's futex, no sleeping) until `pred(view)` holds; false after 30 s.
template <class Pred>
bool until(const View& v, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const std::uint32_t seen = v.changes();
    if (pred(v)) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    v.wait_change(seen, std::chrono::milliseconds(500));
  }
}

// A record written shows in DRAM, then on the file tier once written behind; an erase shows as erased.
TEST(LiveStore, RecordsAndTheirStatesWhileTheWriterRuns) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wave", kElems);
  auto v = View::open(cfg.tiers.back().path, "wave", 0);
  EXPECT_EQ(v->info().fingerprint, mlbs::catalog::live::config_fingerprint(cfg));
  EXPECT_FALSE(v->info().persistent);
  v->attach_reader();  // a reader's view: the writer writes every record behind for it
  write(u, 3);
  ASSERT_TRUE(v->find(3));
  EXPECT_EQ(v->find(3)->size, kElems * sizeof(float));
  ASSERT_TRUE(until(*v, [](const View& view) {
    auto r = view.find(3);
    return r && (r->copies & mlbs::catalog::bit(1));
  })) << "the record never reached the file tier";
  EXPECT_EQ(v->find(3)->state, RecordState::on_tier);
  EXPECT_TRUE(v->find(3)->has_checksum) << "a record leaving DRAM has its checksum";
  u.erase(3);
  EXPECT_EQ(v->find(3)->state, RecordState::erased);
  ASSERT_TRUE(until(*v, [](const View& view) { return view.tiers().at(1).bytes_in > 0; }));
  EXPECT_TRUE(v->writer_alive());
}

// Closing the store ends its publication: a view held open sees it closed, a new one finds nothing.
TEST(LiveStore, ClosedStoreIsGone) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  std::unique_ptr<View> v;
  {
    mlbs::Store<float> u(rt, "wave", kElems);
    write(u, 1);
    v = View::open(cfg.tiers.back().path, "wave", 0);
  }
  EXPECT_TRUE(v->closed());
  EXPECT_THROW(View::open(cfg.tiers.back().path, "wave", 0), mlbs::UnknownIdError);
}

// Persistent: flushed records are durable in the view; a store recovered by the next runtime publishes them again.
TEST(LiveStore, PersistentRecordsAreDurableAndRecoveredOnes) {
  TempDir dir;
  const mlbs::Config cfg = config(dir, mlbs::Durability::persistent);
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "ckpt", kElems);
    for (std::uint64_t id = 0; id < 4; ++id) write(u, id);
    u.flush();
    auto v = View::open(cfg.tiers.back().path, "ckpt", 0);
    for (std::uint64_t id = 0; id < 4; ++id) EXPECT_EQ(v->find(id)->state, RecordState::durable) << id;
  }
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "ckpt", kElems);
  auto v = View::open(cfg.tiers.back().path, "ckpt", 0);
  EXPECT_EQ(v->records().size(), 4u);
  for (const RecordView& r : v->records()) EXPECT_EQ(r.state, RecordState::durable) << r.id;
}

// Config::live_catalog = false publishes nothing.
TEST(LiveStore, TurnedOffPublishesNothing) {
  TempDir dir;
  mlbs::Config cfg = config(dir);
  cfg.live_catalog = false;
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "quiet", kElems);
  write(u, 1);
  EXPECT_THROW(View::open(cfg.tiers.back().path, "quiet", 0), mlbs::UnknownIdError);
}

// A second runtime opening the same scratch store on the same paths runs unpublished; the first stays readable.
TEST(LiveStore, SecondWriterOfTheSameNameRunsUnpublished) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime a(cfg), b(cfg);
  mlbs::Store<float> ua(a, "twin", kElems), ub(b, "twin", kElems);
  write(ua, 1);
  write(ub, 2);
  auto v = View::open(cfg.tiers.back().path, "twin", 0);
  EXPECT_TRUE(v->find(1));
  EXPECT_FALSE(v->find(2));
}

// Views copying the catalog while the writer writes, moves and erases never see a record whose fields disagree.
TEST(LiveStore, ConcurrentViewsSeeConsistentRecords) {
  TempDir dir;
  const mlbs::Config cfg = config(dir);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "busy", kElems);
  auto v = View::open(cfg.tiers.back().path, "busy", 0);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> bad{0}, seen{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (const RecordView& r : v->records()) {
        ++seen;
        if (r.size != kElems * sizeof(float) || r.generation == 0) ++bad;
      }
    }
  });
  for (std::uint64_t id = 0; id < 300; ++id) {
    write(u, id);
    if (id >= 8) u.erase(id - 8);
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0u) << "of " << seen.load();
  EXPECT_GT(seen.load(), 0u);
}

// mlbs-inspect --live (and --json) prints a running store's records with their states.
TEST(LiveStore, InspectLive) {
  const char* tool = mlbs::test::inspect_tool();
  if (!tool) GTEST_SKIP() << "set MLBS_INSPECT to the mlbs-inspect binary";
  TempDir dir;
  const mlbs::Config cfg = config(dir, mlbs::Durability::persistent);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "snap", kElems);
  for (std::uint64_t id = 0; id < 3; ++id) write(u, id);
  u.flush();
  const std::string out = dir / "live.out";
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string("'") + tool + "' " + args + " > '" + out + "' 2>&1";
    const int status = std::system(cmd.c_str());
    std::ifstream f(out);
    std::stringstream text;
    text << f.rdbuf();
    return std::make_pair(WEXITSTATUS(status), text.str());
  };
  const std::string slow = cfg.tiers.back().path;
  auto [rc, text] = run("--live '" + slow + "' snap");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("3 durable"), std::string::npos) << text;
  EXPECT_NE(text.find("running"), std::string::npos) << text;
  std::tie(rc, text) = run("--live --json '" + slow + "' snap");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("\"state\": \"durable\""), std::string::npos) << text;
  std::tie(rc, text) = run("--live '" + slow + "' nosuchstore");
  EXPECT_EQ(rc, 2) << text;
  EXPECT_NE(text.find("nosuchstore"), std::string::npos) << text;
}

}  // namespace
