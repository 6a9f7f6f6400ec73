// The integration suite runs once per directory-tier I/O backend
// (MLBS_TEST_IO_BACKEND, see tests/CMakeLists.txt). This file skips the
// io_uring run where io_uring cannot be set up, and checks that the backend
// asked for is the one the tiers really run.
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

}  // namespace
