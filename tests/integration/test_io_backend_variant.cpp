// The integration suite runs once per directory-tier I/O backend and layout
// (MLBS_TEST_VARIANT, see tests/CMakeLists.txt). This file applies the
// variant, skips the io_uring runs where io_uring cannot be set up, and
// checks that the backend and layout asked for are what the tiers really run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "mlbs/mlbs.hpp"
#include "support/io_backend.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/io_select.hpp"

namespace {

/// Why this run cannot exercise the io_uring backend; empty if it can.
std::string io_uring_missing() {
  if (!mlbs::test::io_uring_variant()) return {};
  if (!mlbs::tiers::io_uring_compiled()) return "built without io_uring";
  if (int err = mlbs::tiers::io_uring_setup_error())
    return std::string("io_uring unavailable here: ") + std::strerror(err);
  return {};
}

/// Skips every test of the io_uring run when io_uring is missing. gtest
/// reports tests skipped by an environment as passed, so the line CTest
/// recognises as a skip (SKIP_REGULAR_EXPRESSION) is printed as well.
class IoBackendEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const std::string why = io_uring_missing(); !why.empty()) {
      std::printf("[  SKIPPED ] the io_uring run of this suite: %s\n", why.c_str());
      GTEST_SKIP() << why;
    }
  }
};

// Before main(): no thread is running yet to race with setenv.
const bool variant_applied = mlbs::test::apply_test_variant();
const auto* const registered = ::testing::AddGlobalTestEnvironment(new IoBackendEnvironment);

// Directory tiers run the backend this suite run names (pread or io_uring+O_DIRECT).
TEST(IoBackendVariant, TiersRunTheBackendOfThisRun) {
  mlbs::test::TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1 << 20), mlbs::Tier::directory(dir / "fast"),
               mlbs::Tier::directory(dir / "slow")};
  mlbs::Runtime rt(cfg);
  const auto variant = mlbs::test::io_backend_variant();
  const mlbs::Stats stats = rt.stats();
  for (std::size_t t = 1; t < 3; ++t) {
    const auto& ts = stats.tiers[t];
    if (variant == "pread") EXPECT_EQ(ts.io_backend, "pread") << "tier " << t;
    if (variant == "io_uring") EXPECT_EQ(ts.io_backend, "io_uring+O_DIRECT") << "tier " << t;
    if (variant.empty()) EXPECT_FALSE(ts.io_backend.empty());
  }
}

// Directory tiers lay records out as this suite run names: a log variant stores them in logs, a file variant in .rec files.
TEST(IoBackendVariant, TiersUseTheLayoutOfThisRun) {
  mlbs::test::TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1 << 20), mlbs::Tier::directory(dir / "slow")};
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<char> s(rt, "v", 100000);
    for (std::uint64_t id = 0; id < 30; ++id) s.write(id);  // 3 MB through 1 MiB of DRAM
    s.flush();
    std::size_t logs = 0, rec = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() / "slow")) {
      logs += e.path().extension() == ".mlbs";
      rec += e.path().extension() == ".rec";
    }
    const std::size_t stored = mlbs::test::stored_records(dir.path() / "slow");
    EXPECT_GE(stored, 20u);
    if (mlbs::test::layout_variant() == "log") {
      EXPECT_EQ(rec, 0u);
      EXPECT_GE(logs, 1u);
      EXPECT_LE(logs, cfg.helper_threads) << "one log per helper";
    } else if (mlbs::test::layout_variant() == "file") {
      EXPECT_EQ(rec, stored);
      EXPECT_EQ(logs, 0u);
    }
  }
  EXPECT_EQ(mlbs::test::stored_records(dir.path()), 0u) << "scratch left records behind";
}

}  // namespace
