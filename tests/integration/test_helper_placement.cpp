// Where the runtime pins its helper threads (Config::helper_core), seen in Stats::helper_cores.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine/affinity.hpp"
#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::test::TempDir;

mlbs::Config two_tiers(const TempDir& dir, int helper_core, unsigned helpers) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1 << 20), mlbs::Tier::directory(dir / "slow")};
  cfg.helper_core = helper_core;
  cfg.helper_threads = helpers;
  return cfg;
}

// auto pins every helper to the core the placement rule picks for this process.
TEST(HelperPlacement, AutoPinsWhereTheRuleSays) {
  TempDir dir;
  mlbs::Runtime rt(two_tiers(dir, -1, 2));
  const auto allowed = mlbs::engine::allowed_cores();
  const auto want = mlbs::engine::auto_helper_cores(allowed, mlbs::engine::application_threads(allowed), 2);
  EXPECT_EQ(rt.stats().helper_cores, want);
  for (int c : rt.stats().helper_cores)  // an allowed core, or none when the application computes on all
    if (c != -1) EXPECT_NE(std::find(allowed.begin(), allowed.end(), c), allowed.end());
}

// Each helper, and the remover beside them, carries its name for the OS (top -H, perf, gdb) once the runtime is
// constructed.
TEST(HelperPlacement, HelpersAreNamedForTheOs) {
  TempDir dir;
  mlbs::Runtime rt(two_tiers(dir, -2, 3));
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    names.insert(name);
  }
  for (const char* want : {"mlbs-helper-0", "mlbs-helper-1", "mlbs-helper-2", "mlbs-remover"})
    EXPECT_EQ(names.count(want), 1u) << want;
}

// none leaves the helpers where the OS puts them.
TEST(HelperPlacement, NoneDoesNotPin) {
  TempDir dir;
  mlbs::Runtime rt(two_tiers(dir, -2, 2));
  EXPECT_EQ(rt.stats().helper_cores, (std::vector<int>{-1, -1}));
}

// An explicit core pins every helper there, and the helpers still move data.
TEST(HelperPlacement, ExplicitCorePinsAllHelpers) {
  TempDir dir;
  const int core = mlbs::engine::allowed_cores().front();
  mlbs::Runtime rt(two_tiers(dir, core, 2));
  EXPECT_EQ(rt.stats().helper_cores, (std::vector<int>{core, core}));
  mlbs::Store<float> u(rt, "u", 1 << 16);  // 256 KiB records, 4 of them in 1 MiB of DRAM
  for (std::uint64_t id = 0; id < 12; ++id) {
    std::fill(u.begin(), u.end(), float(id));
    u.write(id);
  }
  u.flush();
  for (std::uint64_t id = 0; id < 12; ++id) {
    u.read(id);
    EXPECT_EQ(u[0], float(id));
  }
}

// Stats::helper_cpu_ns counts the helpers' own CPU time as they work: it grows while records go down and come back
// (copies, checksums), and stays within the CPU time the whole process used.
TEST(HelperPlacement, HelpersCpuTimeIsCounted) {
  TempDir dir;
  mlbs::Runtime rt(two_tiers(dir, mlbs::Config{}.helper_core, 2));
  mlbs::Store<float> u(rt, "u", 1 << 16);  // 256 KiB records, 4 of them in 1 MiB of DRAM
  for (std::uint64_t id = 0; id < 12; ++id) {
    std::fill(u.begin(), u.end(), float(id));
    u.write(id);
  }
  u.flush();
  const std::uint64_t after_writes = rt.stats().helper_cpu_ns;
  EXPECT_GT(after_writes, 0u) << "eight records or more were hashed and written down";
  for (std::uint64_t id = 12; id-- > 0;) {
    u.read(id);
    EXPECT_EQ(u[0], float(id));
  }
  const std::uint64_t after_reads = rt.stats().helper_cpu_ns;
  EXPECT_GT(after_reads, after_writes) << "records came back up";
  rusage self{};
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &self), 0);
  const auto ns = [](const timeval& t) {
    return std::uint64_t(t.tv_sec) * 1'000'000'000u + std::uint64_t(t.tv_usec) * 1000u;
  };
  EXPECT_LE(after_reads, ns(self.ru_utime) + ns(self.ru_stime) + 10'000'000u) << "rusage counts in ticks";
}

}  // namespace
