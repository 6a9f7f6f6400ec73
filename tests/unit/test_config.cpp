// Tests of the configuration layer: sizes, tier specs, schedules, TOML, the
// environment and validation (src/core/config.cpp, docs/configuration.md).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/features.hpp"
#include "mlbs/runtime.hpp"
#include "tiers/kinds.hpp"

namespace {

using mlbs::Config;
using mlbs::ConfigError;
using mlbs::Durability;
using mlbs::Schedule;
using mlbs::Tier;

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t TiB = 1ull << 40;

/// Runs `body`, which must throw ConfigError, and returns that error.
ConfigError config_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("<none>", "<none>");
}

/// Joins lines with '\n', so that element k of the list is TOML line k+1.
std::string toml(std::initializer_list<std::string_view> lines) {
  std::string text;
  for (const auto line : lines) (text += line) += '\n';
  return text;
}

/// A valid two-tier configuration to break one field of.
Config two_tiers() {
  Config cfg;
  cfg.tiers = {Tier::memory(64 * MiB), Tier::directory("/scratch/run")};
  return cfg;
}

/// Every MLBS_* variable from_env reads; saved, cleared, and restored per test.
class ConfigEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {"MLBS_CONFIG",      "MLBS_TIERS",          "MLBS_SCHEDULE",
                                          "MLBS_DURABILITY",  "MLBS_HELPER_CORE",    "MLBS_HELPER_THREADS",
                                          "MLBS_CHECKSUMS",   "MLBS_IO_CHUNK",       "MLBS_PAGE_CACHE",
                                          "MLBS_LAYOUT",      "MLBS_LIVE_CATALOG",   "MLBS_LIVE_RECORDS",
                                          "MLBS_READER_RETENTION", "MLBS_CODEC", "MLBS_COPY_AHEAD"};
  void SetUp() override {
    for (const char* name : kVars) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  static void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// A scratch folder for config files, removed afterwards.
class ConfigFile : public ConfigEnv {
 protected:
  void SetUp() override {
    ConfigEnv::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("mlbs_config_") + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    ConfigEnv::TearDown();
  }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  std::filesystem::path dir_;
};

// --- tiers as data ------------------------------------------------------------

// Tier::memory writes behind continuously (water marks 0/0); directories keep records (1/1).
TEST(ConfigTier, FactoriesSetKindAndWaterMarks) {
  const Tier mem = Tier::memory(2 * GiB);
  EXPECT_EQ(mem.kind, "memory");
  EXPECT_EQ(mem.capacity_bytes, 2 * GiB);
  EXPECT_EQ(mem.high_water, 0.0);
  EXPECT_EQ(mem.low_water, 0.0);
  const Tier dir = Tier::directory("/nvme/run", 64 * GiB);
  EXPECT_EQ(dir.kind, "directory");
  EXPECT_EQ(dir.path, "/nvme/run");
  EXPECT_EQ(dir.capacity_bytes, 64 * GiB);
  EXPECT_EQ(dir.high_water, 1.0);
  EXPECT_EQ(dir.low_water, 1.0);
  EXPECT_EQ(Tier::directory("/x").capacity_bytes, 0u);
}

// --- sizes --------------------------------------------------------------------

// Plain byte counts, binary and decimal units, spaces and any letter case parse exactly.
TEST(ConfigSize, ParsesUnits) {
  EXPECT_EQ(mlbs::parse_size("4096"), 4096u);
  EXPECT_EQ(mlbs::parse_size("0"), 0u);
  EXPECT_EQ(mlbs::parse_size("64GiB"), 64 * GiB);
  EXPECT_EQ(mlbs::parse_size("512 MiB"), 512 * MiB);
  EXPECT_EQ(mlbs::parse_size("1.5G"), GiB + GiB / 2);
  EXPECT_EQ(mlbs::parse_size("2KiB"), 2 * KiB);
  EXPECT_EQ(mlbs::parse_size("10MB"), 10'000'000u);
  EXPECT_EQ(mlbs::parse_size("3T"), 3 * TiB);
  EXPECT_EQ(mlbs::parse_size("1TB"), 1'000'000'000'000u);
  EXPECT_EQ(mlbs::parse_size("1Ki"), KiB);
  EXPECT_EQ(mlbs::parse_size("64gib"), 64 * GiB);
  EXPECT_EQ(mlbs::parse_size("1kb"), 1000u);
  EXPECT_EQ(mlbs::parse_size("4096B"), 4096u);
  EXPECT_EQ(mlbs::parse_size("  8 MiB  "), 8 * MiB);
  EXPECT_EQ(mlbs::parse_size("2.0"), 2u);
  EXPECT_EQ(mlbs::parse_size("18446744073709551615"), UINT64_MAX);
}

// Fractions of a unit are exact where representable and floored to whole bytes otherwise.
TEST(ConfigSize, FractionsAreExactOrFloored) {
  EXPECT_EQ(mlbs::parse_size("0.5KiB"), 512u);
  EXPECT_EQ(mlbs::parse_size("0.1KiB"), 102u);
  EXPECT_EQ(mlbs::parse_size("1.25TiB"), TiB + TiB / 4);
  EXPECT_EQ(mlbs::parse_size("2.5GB"), 2'500'000'000u);
}

// Empty, negative, garbage, unknown units, fractional bytes and overflow raise ConfigError naming the field.
TEST(ConfigSize, RejectsInvalid) {
  for (const char* bad : {"", "   ", "-1", "-1GiB", "abc", "GiB", "12XB", "1.", ".5", "1.5", "1.5B", "1 2",
                          "0x10", "1GiBB", "1.0000000001G", "18446744073709551616", "16777216TiB",
                          "17179869184.5GiB"}) {
    const ConfigError e = config_error([&] { mlbs::parse_size(bad, "io_chunk"); });
    EXPECT_EQ(e.field(), "io_chunk") << "input '" << bad << "'";
    EXPECT_EQ(e.error_code(), EINVAL);
  }
}

// format_bytes picks the largest binary unit and prints up to two decimals.
TEST(ConfigSize, FormatsBytesForHumans) {
  EXPECT_EQ(mlbs::format_bytes(0), "0 B");
  EXPECT_EQ(mlbs::format_bytes(1023), "1023 B");
  EXPECT_EQ(mlbs::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(mlbs::format_bytes(2 * GiB), "2 GiB");
  EXPECT_EQ(mlbs::format_bytes(GiB + GiB / 4), "1.25 GiB");
  EXPECT_EQ(mlbs::format_bytes(5 * TiB), "5 TiB");
  EXPECT_EQ(mlbs::format_bytes(4096 * TiB), "4096 TiB");
}

// --- tier specs ---------------------------------------------------------------

// The documented example yields memory, capped directory and unlimited directory tiers.
TEST(ConfigTierSpec, ParsesExample) {
  const auto tiers = mlbs::parse_tier_spec("mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run");
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].kind, "memory");
  EXPECT_EQ(tiers[0].capacity_bytes, 2 * GiB);
  EXPECT_EQ(tiers[0].high_water, 0.0);
  EXPECT_EQ(tiers[1].kind, "directory");
  EXPECT_EQ(tiers[1].path, "/nvme/run");
  EXPECT_EQ(tiers[1].capacity_bytes, 64 * GiB);
  EXPECT_EQ(tiers[1].high_water, 1.0);
  EXPECT_EQ(tiers[2].path, "/lustre/run");
  EXPECT_EQ(tiers[2].capacity_bytes, 0u);
}

// Long kind names are accepted and whitespace around entries is ignored.
TEST(ConfigTierSpec, AcceptsLongKindsAndSpaces) {
  const auto tiers = mlbs::parse_tier_spec(" memory:1 GiB , directory:/a ");
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0].capacity_bytes, GiB);
  EXPECT_EQ(tiers[1].path, "/a");
}

// A path may contain ':'; only a last part that parses as a size is taken as the capacity.
TEST(ConfigTierSpec, PathsMayContainColons) {
  auto tiers = mlbs::parse_tier_spec("mem:1MiB,dir:/data/run:a");
  EXPECT_EQ(tiers[1].path, "/data/run:a");
  EXPECT_EQ(tiers[1].capacity_bytes, 0u);
  tiers = mlbs::parse_tier_spec("mem:1MiB,dir:/data/run:a:10GB");
  EXPECT_EQ(tiers[1].path, "/data/run:a");
  EXPECT_EQ(tiers[1].capacity_bytes, 10'000'000'000u);
}

// A last part that starts with a digit but is no size is a quota typo (an error), not part of a folder name.
TEST(ConfigTierSpec, QuotaTypoIsAnError) {
  const ConfigError e = config_error([] { mlbs::parse_tier_spec("mem:1GiB,dir:/p:1PiX", "MLBS_TIERS"); });
  EXPECT_EQ(e.field(), "MLBS_TIERS[1]");
  EXPECT_NE(std::string(e.what()).find("quota"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("1PiX"), std::string::npos) << e.what();
  EXPECT_EQ(mlbs::parse_tier_spec("mem:1GiB,dir:/p:1PiB")[1].capacity_bytes, 1024 * TiB);
  EXPECT_EQ(mlbs::parse_tier_spec("mem:1GiB,dir:/p:2PB")[1].capacity_bytes, 2'000'000'000'000'000u);
}

// A path whose last ':'-part starts with a digit formats with an explicit quota, so it re-parses as the same path.
TEST(ConfigTierSpec, PathEndingLikeAQuotaRoundTrips) {
  for (const char* path : {"/p:1x", "/data/run:2024", "/p:5"}) {
    const std::string spec = mlbs::format_tier_spec({Tier::memory(GiB), Tier::directory(path)});
    const auto back = mlbs::parse_tier_spec(spec);
    EXPECT_EQ(back[1].path, path) << spec;
    EXPECT_EQ(back[1].capacity_bytes, 0u) << spec;
  }
}

// Errors name the entry as FIELD[index]: unknown kind, missing size or path, stray commas.
TEST(ConfigTierSpec, ErrorsNameTheEntry) {
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1GiB,tape:/x", "MLBS_TIERS"); }).field(), "MLBS_TIERS[1]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem,dir:/x", "MLBS_TIERS"); }).field(), "MLBS_TIERS[0]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:", "MLBS_TIERS"); }).field(), "MLBS_TIERS[0]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:lots,dir:/x"); }).field(), "tiers[0]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,dir"); }).field(), "tiers[1]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,dir::5GiB"); }).field(), "tiers[1]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,,dir:/x"); }).field(), "tiers[1]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,dir:/x,"); }).field(), "tiers[2]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("  "); }).field(), "tiers");
}

// format_tier_spec writes exact sizes, so parsing its output restores kind, path and capacity.
TEST(ConfigTierSpec, RoundTrips) {
  const std::vector<Tier> tiers = {Tier::memory(3 * GiB + 512), Tier::directory("/nvme/run", 64 * GiB),
                                   Tier::directory("/data:5"), Tier::directory("/x:y", 1000),
                                   Tier::directory("/lustre/run")};
  const std::string spec = mlbs::format_tier_spec(tiers);
  EXPECT_EQ(spec, "mem:3221225984,dir:/nvme/run:64GiB,dir:/data:5:0,dir:/x:y:1000,dir:/lustre/run");
  const auto back = mlbs::parse_tier_spec(spec);
  ASSERT_EQ(back.size(), tiers.size());
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    EXPECT_EQ(back[i].kind, tiers[i].kind) << i;
    EXPECT_EQ(back[i].path, tiers[i].path) << i;
    EXPECT_EQ(back[i].capacity_bytes, tiers[i].capacity_bytes) << i;
  }
  EXPECT_EQ(mlbs::format_tier_spec(mlbs::parse_tier_spec("mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run")),
            "mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run");
}

// A path containing ',' cannot be written as a spec and is reported, not mangled.
TEST(ConfigTierSpec, FormatRejectsCommaInPath) {
  const ConfigError e = config_error([] { (void)mlbs::format_tier_spec({Tier::memory(GiB), Tier::directory("/a,b")}); });
  EXPECT_EQ(e.field(), "tiers[1].path");
}

// A path with white space at either end (TOML allows it) would come back trimmed
// from a spec, so format refuses it (the round trip fuzz_config_toml checks).
TEST(ConfigTierSpec, FormatRejectsSurroundingSpaceInPath) {
  for (const char* path : {" /a", "/a ", "/a\t", "\n/a"}) {
    const ConfigError e = config_error([&] { (void)mlbs::format_tier_spec({Tier::memory(GiB), Tier::directory(path)}); });
    EXPECT_EQ(e.field(), "tiers[1].path") << path;
  }
  EXPECT_EQ(mlbs::format_tier_spec({Tier::memory(GiB), Tier::directory("/a b")}), "mem:1GiB,dir:/a b");
}

// "dir+io_uring:" / "dir+pread:" name a tier's I/O backend; format writes it back.
TEST(ConfigTierSpec, KindMayNameTheIoBackend) {
  const auto tiers = mlbs::parse_tier_spec("mem:1GiB,dir+io_uring:/nvme:8GiB,directory+pread:/a:b,dir+auto:/c");
  EXPECT_EQ(tiers[1].io_backend, mlbs::IoBackend::io_uring);
  EXPECT_EQ(tiers[1].path, "/nvme");
  EXPECT_EQ(tiers[1].capacity_bytes, 8 * GiB);
  EXPECT_EQ(tiers[2].io_backend, mlbs::IoBackend::pread);
  EXPECT_EQ(tiers[2].path, "/a:b");
  EXPECT_EQ(tiers[3].io_backend, mlbs::IoBackend::automatic);
  EXPECT_EQ(mlbs::format_tier_spec(tiers), "mem:1GiB,dir+io_uring:/nvme:8GiB,dir+pread:/a:b,dir:/c");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,dir+aio:/x", "MLBS_TIERS"); }).field(),
            "MLBS_TIERS[1].io_backend");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem+pread:1G,dir:/x"); }).field(), "tiers[0]");
}

// --- schedules and names ------------------------------------------------------

// Named schedules and comma lists of ids parse; anything else names the field.
TEST(ConfigSchedule, ParsesNamesAndExplicitOrder) {
  EXPECT_EQ(mlbs::parse_schedule("lifo").kind, Schedule::Kind::lifo);
  EXPECT_EQ(mlbs::parse_schedule("fifo").kind, Schedule::Kind::fifo);
  EXPECT_EQ(mlbs::parse_schedule(" unknown ").kind, Schedule::Kind::unknown);
  const Schedule s = mlbs::parse_schedule("3, 1,2");
  EXPECT_EQ(s.kind, Schedule::Kind::explicit_order);
  EXPECT_EQ(s.order, (std::vector<std::uint64_t>{3, 1, 2}));
  EXPECT_EQ(mlbs::parse_schedule("7").order, (std::vector<std::uint64_t>{7}));
  for (const char* bad : {"", "LIFO?", "3,x", "3,,1", "-1", "random", "lifo:", "lifo:0", "lifo:x", "fifo:", "fifo:0", "fifo:-2"})
    EXPECT_EQ(config_error([&] { mlbs::parse_schedule(bad, "MLBS_SCHEDULE"); }).field(), "MLBS_SCHEDULE") << bad;
}

// "lifo:N" is LIFO with a hint of N records per store.
TEST(ConfigSchedule, LifoWithARecordCountHint) {
  const Schedule s = mlbs::parse_schedule("lifo: 128");
  EXPECT_EQ(s.kind, Schedule::Kind::lifo);
  EXPECT_EQ(s.expected_records, 128u);
  EXPECT_EQ(mlbs::parse_schedule("lifo").expected_records, 0u);
  EXPECT_NE(std::string(config_error([&] { mlbs::parse_schedule("lifo:0", "schedule"); }).what()).find("lifo:N"),
            std::string::npos);
}

// "fifo:N" is FIFO with a hint of N records per store.
TEST(ConfigSchedule, FifoWithARecordCountHint) {
  const Schedule s = mlbs::parse_schedule("fifo:24");
  EXPECT_EQ(s.kind, Schedule::Kind::fifo);
  EXPECT_EQ(s.expected_records, 24u);
  EXPECT_EQ(mlbs::parse_schedule("fifo").expected_records, 0u);
  EXPECT_NE(std::string(config_error([&] { mlbs::parse_schedule("fifo:x", "schedule"); }).what()).find("fifo:N"),
            std::string::npos);
}

// to_string gives the names used in configs and reports.
TEST(ConfigSchedule, NamesKindsAndDurability) {
  EXPECT_EQ(mlbs::to_string(Schedule::Kind::fifo), "fifo");
  EXPECT_EQ(mlbs::to_string(Schedule::Kind::lifo), "lifo");
  EXPECT_EQ(mlbs::to_string(Schedule::Kind::explicit_order), "explicit");
  EXPECT_EQ(mlbs::to_string(Schedule::Kind::unknown), "unknown");
  EXPECT_EQ(mlbs::to_string(Durability::scratch), "scratch");
  EXPECT_EQ(mlbs::to_string(Durability::persistent), "persistent");
}

// --- TOML ---------------------------------------------------------------------

// Every key of the documented format lands in its field.
TEST(ConfigToml, ReadsEveryKey) {
  const Config cfg = Config::from_toml(toml({
      "schedule = \"fifo\"",
      "durability = \"persistent\"",
      "helper_core = 3",
      "helper_threads = 2",
      "checksums = false",
      "layout = \"file-per-record\"",
      "io_chunk = \"4MiB\"",
      "shutdown_timeout_ms = 1500",
      "page_cache = true",
      "[[tier]]",
      "kind = \"memory\"",
      "capacity = \"2GiB\"",
      "[[tier]]",
      "kind = \"dir\"",
      "path = \"/nvme/run\"",
      "capacity = 68719476736",
      "bandwidth = \"1GiB\"",
      "block = \"64KiB\"",
      "shared = true",
      "high_water = 0.9",
      "low_water = 0.5",
      "page_cache = true",
      "[[tier]]",
      "kind = \"directory\"",
      "path = \"/lustre/run\"",
  }));
  EXPECT_EQ(cfg.schedule.kind, Schedule::Kind::fifo);
  EXPECT_EQ(cfg.durability, Durability::persistent);
  EXPECT_EQ(cfg.helper_core, 3);
  EXPECT_EQ(cfg.helper_threads, 2u);
  EXPECT_FALSE(cfg.checksums);
  EXPECT_EQ(cfg.layout, mlbs::Layout::file_per_record);
  EXPECT_EQ(cfg.io_chunk_bytes, 4 * MiB);
  EXPECT_EQ(cfg.shutdown_timeout_ms, 1500u);
  EXPECT_TRUE(cfg.page_cache);
  ASSERT_EQ(cfg.tiers.size(), 3u);
  EXPECT_EQ(cfg.tiers[0].kind, "memory");
  EXPECT_EQ(cfg.tiers[0].capacity_bytes, 2 * GiB);
  EXPECT_EQ(cfg.tiers[0].high_water, 0.0);
  EXPECT_EQ(cfg.tiers[1].kind, "directory");
  EXPECT_EQ(cfg.tiers[1].path, "/nvme/run");
  EXPECT_EQ(cfg.tiers[1].capacity_bytes, 64 * GiB);
  EXPECT_EQ(cfg.tiers[1].bandwidth_bytes_per_s, GiB);
  EXPECT_EQ(cfg.tiers[1].block_bytes, 64 * KiB);
  EXPECT_TRUE(cfg.tiers[1].shared);
  EXPECT_EQ(cfg.tiers[1].high_water, 0.9);
  EXPECT_EQ(cfg.tiers[1].low_water, 0.5);
  EXPECT_TRUE(cfg.tiers[1].page_cache);
  EXPECT_FALSE(cfg.tiers[2].page_cache);
  EXPECT_EQ(cfg.tiers[2].path, "/lustre/run");
  EXPECT_EQ(cfg.tiers[2].capacity_bytes, 0u);
  EXPECT_EQ(cfg.tiers[2].high_water, 1.0);
  EXPECT_EQ(cfg.tiers[2].low_water, 1.0);
  EXPECT_EQ(cfg.tiers[2].block_bytes, 4096u);
}

// An empty document yields the defaults of Config{}.
TEST(ConfigToml, AbsentKeysKeepDefaults) {
  const Config cfg = Config::from_toml("");
  const Config def;
  EXPECT_EQ(cfg.schedule.kind, def.schedule.kind);
  EXPECT_EQ(cfg.durability, def.durability);
  EXPECT_EQ(cfg.helper_core, def.helper_core);
  EXPECT_EQ(cfg.helper_threads, def.helper_threads);
  EXPECT_EQ(cfg.checksums, def.checksums);
  EXPECT_EQ(cfg.io_chunk_bytes, def.io_chunk_bytes);
  EXPECT_EQ(cfg.shutdown_timeout_ms, def.shutdown_timeout_ms);
  EXPECT_EQ(mlbs::format_tier_spec(cfg.tiers), mlbs::format_tier_spec(def.tiers));
  EXPECT_FALSE(cfg.page_cache);
  EXPECT_FALSE(def.page_cache) << "tiers measure the device unless told otherwise";
  for (const Tier& tier : cfg.tiers) EXPECT_FALSE(tier.page_cache);
}

// live_catalog and live_records are read from TOML; a count out of range names the field and line.
TEST(ConfigToml, ReadsLiveCatalogSettings) {
  const Config def;
  EXPECT_TRUE(def.live_catalog);
  EXPECT_EQ(def.live_records, 65536u);
  const Config cfg = Config::from_toml("live_catalog = false\nlive_records = 100\n");
  EXPECT_FALSE(cfg.live_catalog);
  EXPECT_EQ(cfg.live_records, 100u);
  const ConfigError e = config_error([] { Config::from_toml("\nlive_records = 0\n", "l.toml"); });
  EXPECT_EQ(e.field(), "live_records");
  EXPECT_EQ(e.line(), 2u);
}

// reader_retention reads none / until-read; another word names the field, line and accepted values; it needs the live catalog.
TEST(ConfigToml, ReadsReaderRetention) {
  EXPECT_EQ(Config{}.reader_retention, mlbs::ReaderRetention::none);
  EXPECT_EQ(Config::from_toml("reader_retention = \"until-read\"").reader_retention,
            mlbs::ReaderRetention::until_read);
  const ConfigError bad = config_error([] { Config::from_toml("\nreader_retention = \"forever\"\n", "r.toml"); });
  EXPECT_EQ(bad.field(), "reader_retention");
  EXPECT_EQ(bad.line(), 2u);
  EXPECT_NE(std::string(bad.what()).find("until-read"), std::string::npos) << bad.what();
  const ConfigError off = config_error(
      [] { Config::from_toml("live_catalog = false\nreader_retention = \"until-read\"\n", "r.toml"); });
  EXPECT_EQ(off.field(), "reader_retention");
  EXPECT_NE(std::string(off.what()).find("live_catalog"), std::string::npos) << off.what();
}

// copy_ahead (on by default) is read from TOML as a boolean and from MLBS_COPY_AHEAD as a switch; a
// string names the field and line.
TEST(ConfigToml, ReadsCopyAhead) {
  EXPECT_TRUE(Config{}.copy_ahead);
  EXPECT_FALSE(Config::from_toml("copy_ahead = false").copy_ahead);
  const ConfigError bad = config_error([] { Config::from_toml("\ncopy_ahead = \"no\"\n", "c.toml"); });
  EXPECT_EQ(bad.field(), "copy_ahead");
  EXPECT_EQ(bad.line(), 2u);
}

TEST_F(ConfigEnv, CopyAheadSwitch) {
  ::setenv("MLBS_COPY_AHEAD", "0", 1);
  EXPECT_FALSE(Config::from_env().copy_ahead);
  ::setenv("MLBS_COPY_AHEAD", "maybe", 1);
  EXPECT_THROW(Config::from_env(), ConfigError);
}

// page_cache is read at the top level (every file tier) and per [[tier]].
TEST(ConfigToml, ReadsPageCacheSwitches) {
  EXPECT_TRUE(Config::from_toml("page_cache = true").page_cache);
  EXPECT_FALSE(Config::from_toml("page_cache = false").page_cache);
  const Config cfg = Config::from_toml(toml({
      "[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/nvme\"", "page_cache = true",
      "[[tier]]", "kind = \"dir\"", "path = \"/lustre\"",
  }));
  EXPECT_FALSE(cfg.page_cache);
  EXPECT_FALSE(cfg.tiers[0].page_cache);
  EXPECT_TRUE(cfg.tiers[1].page_cache);
  EXPECT_FALSE(cfg.tiers[2].page_cache);
}

// io_backend, queue_depth and io_request are read per directory [[tier]]; defaults otherwise.
TEST(ConfigToml, ReadsIoBackendKeys) {
  const Config cfg = Config::from_toml(toml({
      "[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/nvme\"", "io_backend = \"io_uring\"", "queue_depth = 32",
      "io_request = \"256KiB\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/lustre\"", "io_backend = \"pread\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/x\"",
  }));
  EXPECT_EQ(cfg.tiers[1].io_backend, mlbs::IoBackend::io_uring);
  EXPECT_EQ(cfg.tiers[1].queue_depth, 32u);
  EXPECT_EQ(cfg.tiers[1].io_request_bytes, 256 * KiB);
  EXPECT_EQ(cfg.tiers[2].io_backend, mlbs::IoBackend::pread);
  EXPECT_EQ(cfg.tiers[3].io_backend, mlbs::IoBackend::automatic);
  EXPECT_EQ(cfg.tiers[3].queue_depth, 8u);
  EXPECT_EQ(cfg.tiers[3].io_request_bytes, MiB);
  EXPECT_EQ(mlbs::to_string(mlbs::IoBackend::automatic), "auto");
  EXPECT_EQ(mlbs::parse_io_backend("io_uring"), mlbs::IoBackend::io_uring);
}

// layout is read at the top level (every directory tier) and per [[tier]] (that tier only); MLBS_LAYOUT overrides the top level.
TEST_F(ConfigFile, ReadsLayout) {
  const Config cfg = Config::from_toml(toml({
      "layout = \"log\"",
      "[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/nvme\"", "layout = \"file-per-record\"",
      "[[tier]]", "kind = \"dir\"", "path = \"/lustre\"",
  }));
  EXPECT_EQ(cfg.layout, mlbs::Layout::log);
  EXPECT_EQ(cfg.tiers[1].layout, mlbs::Layout::file_per_record);
  EXPECT_FALSE(cfg.tiers[2].layout.has_value());
  EXPECT_EQ(mlbs::parse_layout("file"), mlbs::Layout::file_per_record);
  EXPECT_EQ(mlbs::to_string(mlbs::Layout::log), "log");
  EXPECT_EQ(Config::from_env().layout, mlbs::Layout::file_per_record);
  set("MLBS_LAYOUT", "log");
  EXPECT_EQ(Config::from_env().layout, mlbs::Layout::log);
  // Not on the memory tier; a bad name names field and line.
  const ConfigError mem = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "layout = \"log\""}), "l.toml");
  });
  EXPECT_EQ(mem.field(), "tiers[0].layout");
  EXPECT_EQ(mem.line(), 4u);
  const ConfigError bad = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"dir\"",
                            "path = \"/x\"", "layout = \"tar\""}), "l.toml");
  });
  EXPECT_EQ(bad.field(), "tiers[1].layout");
  EXPECT_EQ(bad.line(), 7u);
  EXPECT_NE(std::string(bad.what()).find("expected file-per-record or log"), std::string::npos) << bad.what();
}

// A [[tier]]'s faults plan is read as text and checked: a bad rule names tiers[i].faults and its line, the memory tier has none.
TEST(ConfigTomlErrors, FaultPlans) {
  const Config ok = Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]",
                                            "kind = \"dir\"", "path = \"/x\"",
                                            "faults = \"write:ENOSPC@4, read:corrupt*1, any:delay=50ms, "
                                            "write:EDQUOT@2*3?/run/full@x*y\""}));
  EXPECT_EQ(ok.tiers[1].faults, "write:ENOSPC@4, read:corrupt*1, any:delay=50ms, write:EDQUOT@2*3?/run/full@x*y");
  for (const char* bad : {"write", "write:EBADF", "fsync:EIO", "read:short", "write:EIO@x", "write:EIO*0",
                          "any:delay=5", "write:EIO,,read:EIO", "remove:corrupt", "write:ENOSPC?"}) {
    const std::string text = toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"dir\"",
                                   "path = \"/x\""}) + "faults = \"" + bad + "\"\n";
    const ConfigError e = config_error([&] { Config::from_toml(text, "f.toml"); });
    EXPECT_EQ(e.field(), "tiers[1].faults") << bad;
    EXPECT_EQ(e.line(), 7u) << bad;
  }
  const ConfigError mem = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "faults = \"write:EIO\""}), "f.toml");
  });
  EXPECT_EQ(mem.field(), "tiers[0].faults");
}

// Bad I/O backend values, and io_uring together with the page cache, name field and line.
TEST(ConfigTomlErrors, BadIoBackendKeys) {
  struct Case {
    std::string line;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"io_backend = \"aio\"", "tiers[1].io_backend"},
      {"io_backend = 1", "tiers[1].io_backend"},
      {"queue_depth = 0", "tiers[1].queue_depth"},
      {"queue_depth = 257", "tiers[1].queue_depth"},
      {"io_request = \"1000\"", "tiers[1].io_request"},
      {"io_request = \"2GiB\"", "tiers[1].io_request"},
      {"page_cache = true\nio_backend = \"io_uring\"", "tiers[1].io_backend"},
  };
  for (const auto& c : cases) {
    const std::string text = toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"dir\"",
                                   "path = \"/x\""}) + c.line + "\n";
    const ConfigError e = config_error([&] { Config::from_toml(text, "io.toml"); });
    EXPECT_EQ(e.field(), c.field) << c.line;
    EXPECT_GE(e.line(), 7u) << c.line;
    EXPECT_EQ(e.source(), "io.toml") << c.line;
  }
  // Not on the memory tier.
  const ConfigError mem = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "queue_depth = 4"}), "io.toml");
  });
  EXPECT_EQ(mem.field(), "tiers[0].queue_depth");
  EXPECT_EQ(mem.line(), 4u);
  // The top-level page_cache contradicts an io_uring tier as well.
  Config cfg = two_tiers();
  cfg.page_cache = true;
  cfg.tiers[1].io_backend = mlbs::IoBackend::io_uring;
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[1].io_backend");
  cfg.tiers[1].io_backend = mlbs::IoBackend::automatic;
  EXPECT_NO_THROW(cfg.validate());
}

// page_cache must be a boolean, and concerns file tiers only.
TEST(ConfigTomlErrors, BadPageCache) {
  ConfigError e = config_error([] { Config::from_toml(toml({"", "page_cache = \"yes\""}), "p.toml"); });
  EXPECT_EQ(e.field(), "page_cache");
  EXPECT_EQ(e.line(), 2u);
  e = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"", "page_cache = true",
                            "[[tier]]", "kind = \"dir\"", "path = \"/p\""}),
                      "p.toml");
  });
  EXPECT_EQ(e.field(), "tiers[0].page_cache");
  EXPECT_EQ(e.line(), 4u);
}

// `tiers` as a spec string, schedule as an id array and helper_core = "auto" are accepted.
TEST(ConfigToml, ReadsSpecStringAndExplicitSchedule) {
  const Config cfg = Config::from_toml(toml({
      "tiers = \"mem:1GiB,dir:/nvme/run:64GiB,dir:/lustre/run\"",
      "schedule = [3, 1, 2]",
      "helper_core = \"auto\"",
      "io_chunk = 1048576",
  }));
  ASSERT_EQ(cfg.tiers.size(), 3u);
  EXPECT_EQ(cfg.tiers[1].capacity_bytes, 64 * GiB);
  EXPECT_EQ(cfg.schedule.kind, Schedule::Kind::explicit_order);
  EXPECT_EQ(cfg.schedule.order, (std::vector<std::uint64_t>{3, 1, 2}));
  EXPECT_EQ(cfg.helper_core, -1);
  EXPECT_EQ(Config::from_toml("helper_core = \"none\"").helper_core, -2);
  EXPECT_EQ(mlbs::parse_helper_core("auto"), -1);
  EXPECT_EQ(mlbs::parse_helper_core(" 3 "), 3);
  EXPECT_EQ(config_error([] { mlbs::parse_helper_core("1x", "--helper-core"); }).field(), "--helper-core");
  EXPECT_EQ(cfg.io_chunk_bytes, MiB);
  EXPECT_EQ(Config::from_toml("schedule = []").schedule.kind, Schedule::Kind::explicit_order);
  EXPECT_EQ(Config::from_toml("schedule = \"5,4\"").schedule.order, (std::vector<std::uint64_t>{5, 4}));
}

// Water marks given as integers are accepted as fractions.
TEST(ConfigToml, IntegerWaterMarks) {
  const Config cfg = Config::from_toml(toml({
      "[[tier]]", "kind = \"mem\"", "capacity = \"1GiB\"", "high_water = 1", "low_water = 0",
      "[[tier]]", "kind = \"dir\"", "path = \"/p\"",
  }));
  EXPECT_EQ(cfg.tiers[0].high_water, 1.0);
  EXPECT_EQ(cfg.tiers[0].low_water, 0.0);
}

// A TOML syntax error carries toml++'s line and the source name.
TEST(ConfigTomlErrors, SyntaxErrorHasLine) {
  const ConfigError e = config_error([] { Config::from_toml(toml({"checksums = true", "", "io_chunk = "}), "a.toml"); });
  EXPECT_EQ(e.field(), "syntax");
  EXPECT_EQ(e.source(), "a.toml");
  EXPECT_EQ(e.line(), 3u);
}

// Inputs on which toml++ 3.3.0 compiled from its headers asserts ("[[#") or
// reaches __builtin_unreachable (U+00A1..U+0499 where whitespace may stand),
// found by fuzz_config_toml: with the library mlbs links they are syntax
// errors with a line, not an abort (docs/fuzzing.md).
TEST(ConfigTomlErrors, InputsThatTripTomlPlusPlusAreSyntaxErrors) {
  for (const char* line : {"[[#", "[[[1]]]", "[[=", "[[[]]", "[\xc4\x9f", "a = 1 \xc4\x9f", "[a\xc2\xa7]"}) {
    const ConfigError e = config_error([&] { Config::from_toml(toml({"checksums = true", line}), "a.toml"); });
    EXPECT_EQ(e.field(), "syntax") << line;
    EXPECT_EQ(e.line(), 2u) << line;
  }
}

// An integer out of a field's range names the field's own range, not its C++ type's.
TEST(ConfigTomlErrors, RangeMessagesNameTheFieldsRange) {
  ConfigError e = config_error([] { Config::from_toml(toml({"helper_threads = 99999999999"}), "a.toml"); });
  EXPECT_EQ(e.field(), "helper_threads");
  EXPECT_NE(std::string(e.what()).find("(1 to 64)"), std::string::npos) << e.what();
  e = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"", "[[tier]]",
                            "kind = \"directory\"", "path = \"/x\"", "queue_depth = 99999999999"}),
                      "a.toml");
  });
  EXPECT_NE(std::string(e.what()).find("(1 to 256)"), std::string::npos) << e.what();
}

// A misspelt top-level key is an error naming the key and its line, not silently ignored.
TEST(ConfigTomlErrors, UnknownTopLevelKey) {
  const ConfigError e = config_error([] { Config::from_toml(toml({"checksums = true", "helper_thread = 2"}), "a.toml"); });
  EXPECT_EQ(e.field(), "helper_thread");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.source(), "a.toml");
  // A stray table counts as an unknown key too.
  EXPECT_EQ(config_error([] { Config::from_toml(toml({"", "[tiers_extra]", "a = 1"})); }).line(), 2u);
}

// A misspelt key inside [[tier]] names the tier index, the key and its line.
TEST(ConfigTomlErrors, UnknownTierKey) {
  const ConfigError e = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"", "[[tier]]", "kind = \"dir\"",
                            "path = \"/x\"", "capcity = \"2GiB\""}));
  });
  EXPECT_EQ(e.field(), "tiers[1].capcity");
  EXPECT_EQ(e.line(), 7u);
}

// A value of the wrong TOML type names the field and its line.
TEST(ConfigTomlErrors, WrongTypeHasLine) {
  ConfigError e = config_error([] { Config::from_toml(toml({"helper_threads = 2", "checksums = \"yes\""})); });
  EXPECT_EQ(e.field(), "checksums");
  EXPECT_EQ(e.line(), 2u);
  e = config_error([] { Config::from_toml(toml({"", "io_chunk = 1.5"})); });
  EXPECT_EQ(e.field(), "io_chunk");
  EXPECT_EQ(e.line(), 2u);
  e = config_error([] { Config::from_toml(toml({"tier = \"mem:1GiB\""})); });
  EXPECT_EQ(e.field(), "tier");
  EXPECT_EQ(e.line(), 1u);
  e = config_error([] { Config::from_toml(toml({"", "[tier]", "kind = \"memory\""})); });
  EXPECT_EQ(e.field(), "tier");
  EXPECT_EQ(e.line(), 2u);
}

// Bad values (sizes, enums, ranges, ids) name the field and the line of their node.
TEST(ConfigTomlErrors, BadValuesHaveLine) {
  struct Case {
    std::string text;
    std::string field;
    std::uint32_t line;
  };
  const std::vector<Case> cases = {
      {toml({"checksums = true", "io_chunk = \"8 MeB\""}), "io_chunk", 2},
      {toml({"io_chunk = -4096"}), "io_chunk", 1},
      {toml({"", "io_chunk = \"2GiB\""}), "io_chunk", 2},
      {toml({"", "durability = \"forever\""}), "durability", 2},
      {toml({"schedule = \"random\""}), "schedule", 1},
      {toml({"schedule = [", "  3,", "  -1,", "]"}), "schedule[1]", 3},
      {toml({"helper_core = \"first\""}), "helper_core", 1},
      {toml({"helper_core = -2"}), "helper_core", 1},
      {toml({"helper_threads = -1"}), "helper_threads", 1},
      {toml({"shutdown_timeout_ms = 99999999999"}), "shutdown_timeout_ms", 1},
      {toml({"layout = \"one-big-file\""}), "layout", 1},
      {toml({"a_comment_line_is_not = 1"}), "a_comment_line_is_not", 1},
      {toml({"", "tiers = \"mem:1GiB,tape:/x\""}), "tiers[1]", 2},
      {toml({"[[tier]]", "kind = \"memory\"", "capacity = \"huge\""}), "tiers[0].capacity", 3},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"tape\""}), "tiers[1].kind", 5},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "", "[[tier]]", "path = \"/x\""}), "tiers[1].kind", 5},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "path = \"/x\""}), "tiers[0].path", 4},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "shared = 1"}), "tiers[0].shared", 4},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "high_water = \"half\""}), "tiers[0].high_water", 4},
  };
  for (const auto& c : cases) {
    const ConfigError e = config_error([&] { Config::from_toml(c.text, "t.toml"); });
    EXPECT_EQ(e.field(), c.field) << c.text;
    EXPECT_EQ(e.line(), c.line) << c.text;
    EXPECT_EQ(e.source(), "t.toml") << c.text;
  }
}

// Giving both `tiers` and [[tier]] is an error at the later of the two.
TEST(ConfigTomlErrors, SpecAndTablesTogether) {
  const ConfigError e = config_error([] {
    Config::from_toml(toml({"tiers = \"mem:1GiB,dir:/x\"", "", "[[tier]]", "kind = \"memory\"", "capacity = 1024",
                            "[[tier]]", "kind = \"dir\"", "path = \"/y\""}));
  });
  EXPECT_EQ(e.field(), "tiers");
  EXPECT_EQ(e.line(), 3u);
}

// Validation failures in a file point at the offending node's line (or its [[tier]] header).
TEST(ConfigTomlErrors, ValidationErrorsHaveLine) {
  struct Case {
    std::string text;
    std::string field;
    std::uint32_t line;
  };
  const std::vector<Case> cases = {
      {toml({"checksums = true", "helper_threads = 100"}), "helper_threads", 2},
      {toml({"helper_threads = 0"}), "helper_threads", 1},
      {toml({"io_chunk = \"5000\""}), "io_chunk", 1},
      {toml({"", "tiers = \"mem:1GiB,dir:/x,dir:/x/\""}), "tiers[2].path", 2},
      {toml({"tiers = \"dir:/x,mem:1GiB\""}), "tiers[0].kind", 1},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"dir\""}), "tiers[1].path", 4},
      {toml({"[[tier]]", "kind = \"mem\"", "[[tier]]", "kind = \"dir\"", "path = \"/x\""}), "tiers[0].capacity", 1},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 0", "[[tier]]", "kind = \"dir\"", "path = \"/x\""}),
       "tiers[0].capacity", 3},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "[[tier]]", "kind = \"dir\"", "path = \"/x\"",
             "high_water = 0.5", "low_water = 0.8"}),
       "tiers[1].low_water", 8},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "block = 1000", "[[tier]]", "kind = \"dir\"",
             "path = \"/x\""}),
       "tiers[0].block", 4},
      {toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024"}), "tiers", 1},
  };
  for (const auto& c : cases) {
    const ConfigError e = config_error([&] { Config::from_toml(c.text, "v.toml"); });
    EXPECT_EQ(e.field(), c.field) << c.text;
    EXPECT_EQ(e.line(), c.line) << c.text;
    EXPECT_EQ(e.source(), "v.toml") << c.text;
  }
}

// --- files --------------------------------------------------------------------

// from_file reads a TOML file and names it as the source of errors.
TEST_F(ConfigFile, ReadsFileAndNamesItInErrors) {
  const std::string good = write("good.toml", toml({"tiers = \"mem:1GiB,dir:/nvme/run\"", "helper_threads = 4"}));
  EXPECT_EQ(Config::from_file(good).helper_threads, 4u);
  const std::string bad = write("bad.toml", toml({"helper_threads = 4", "checksum = true"}));
  const ConfigError e = config_error([&] { Config::from_file(bad); });
  EXPECT_EQ(e.field(), "checksum");
  EXPECT_EQ(e.source(), bad);
  EXPECT_EQ(e.line(), 2u);
}

// A missing file or a directory is a ConfigError naming the path.
TEST_F(ConfigFile, MissingFileIsAnError) {
  const std::string missing = (dir_ / "nope.toml").string();
  ConfigError e = config_error([&] { Config::from_file(missing); });
  EXPECT_EQ(e.field(), "config file");
  EXPECT_EQ(e.source(), missing);
  EXPECT_NE(std::string(e.what()).find("nope.toml"), std::string::npos);
  e = config_error([&] { Config::from_file(dir_.string()); });
  EXPECT_EQ(e.field(), "config file");
}

// The shipped example configuration parses and validates.
TEST(ConfigExample, ShippedExampleIsValid) {
  const auto example = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "examples" /
                       "mlbs.toml";
  if (!std::filesystem::exists(example)) GTEST_SKIP() << "no source tree at " << example;
  const Config cfg = Config::from_file(example.string());
  EXPECT_EQ(cfg.tiers.size(), 3u);
}

// --- environment --------------------------------------------------------------

// With no MLBS_* variables set, from_env returns the defaults.
TEST_F(ConfigEnv, DefaultsWithoutVariables) {
  const Config cfg = Config::from_env();
  EXPECT_EQ(mlbs::format_tier_spec(cfg.tiers), mlbs::format_tier_spec(Config{}.tiers));
  EXPECT_EQ(cfg.helper_threads, 1u);
}

// Each MLBS_* variable overrides its field; empty variables count as unset.
TEST_F(ConfigEnv, VariablesOverrideFields) {
  set("MLBS_TIERS", "mem:256MiB,dir:/nvme/run:1TiB,dir:/lustre/run");
  set("MLBS_SCHEDULE", "2,0,1");
  set("MLBS_DURABILITY", "persistent");
  set("MLBS_HELPER_CORE", "7");
  set("MLBS_HELPER_THREADS", "3");
  set("MLBS_CHECKSUMS", "off");
  set("MLBS_IO_CHUNK", "1MiB");
  set("MLBS_CONFIG", "");
  const Config cfg = Config::from_env();
  ASSERT_EQ(cfg.tiers.size(), 3u);
  EXPECT_EQ(cfg.tiers[0].capacity_bytes, 256 * MiB);
  EXPECT_EQ(cfg.tiers[1].capacity_bytes, TiB);
  EXPECT_EQ(cfg.schedule.order, (std::vector<std::uint64_t>{2, 0, 1}));
  EXPECT_EQ(cfg.durability, Durability::persistent);
  EXPECT_EQ(cfg.helper_core, 7);
  EXPECT_EQ(cfg.helper_threads, 3u);
  EXPECT_FALSE(cfg.checksums);
  EXPECT_EQ(cfg.io_chunk_bytes, MiB);
  set("MLBS_HELPER_CORE", "auto");
  EXPECT_EQ(Config::from_env().helper_core, -1);
}

// MLBS_CHECKSUMS accepts 1/0, true/false, on/off, yes/no in any case, and nothing else.
TEST_F(ConfigEnv, ChecksumSwitchWords) {
  for (const char* on : {"1", "true", "ON", "Yes"}) {
    set("MLBS_CHECKSUMS", on);
    EXPECT_TRUE(Config::from_env().checksums) << on;
  }
  for (const char* off : {"0", "false", "off", "NO"}) {
    set("MLBS_CHECKSUMS", off);
    EXPECT_FALSE(Config::from_env().checksums) << off;
  }
  set("MLBS_CHECKSUMS", "maybe");
  const ConfigError e = config_error([] { Config::from_env(); });
  EXPECT_EQ(e.field(), "MLBS_CHECKSUMS");
  EXPECT_EQ(e.source(), "environment");
}

// MLBS_CONFIG is read first and the variables override it.
TEST_F(ConfigFile, EnvOverridesConfigFile) {
  set("MLBS_CONFIG", write("env.toml", toml({"helper_threads = 4", "tiers = \"mem:1GiB,dir:/from/file\""})));
  set("MLBS_HELPER_THREADS", "2");
  const Config cfg = Config::from_env();
  EXPECT_EQ(cfg.helper_threads, 2u);
  EXPECT_EQ(cfg.tiers[1].path, "/from/file");
}

// An unreadable MLBS_CONFIG is named as such; errors inside it keep the file's line.
TEST_F(ConfigFile, EnvConfigFileErrors) {
  set("MLBS_CONFIG", (dir_ / "missing.toml").string());
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_CONFIG");
  const std::string bad = write("bad.toml", toml({"", "helper_threads = 99"}));
  set("MLBS_CONFIG", bad);
  const ConfigError e = config_error([] { Config::from_env(); });
  EXPECT_EQ(e.field(), "helper_threads");
  EXPECT_EQ(e.source(), bad);
  EXPECT_EQ(e.line(), 2u);
  // An override fixes the file's value.
  set("MLBS_HELPER_THREADS", "8");
  EXPECT_EQ(Config::from_env().helper_threads, 8u);
}

// MLBS_LIVE_CATALOG is a switch and MLBS_LIVE_RECORDS a count; bad values name the variable.
TEST_F(ConfigEnv, LiveCatalogVariables) {
  set("MLBS_LIVE_CATALOG", "off");
  set("MLBS_LIVE_RECORDS", "4096");
  const Config cfg = Config::from_env();
  EXPECT_FALSE(cfg.live_catalog);
  EXPECT_EQ(cfg.live_records, 4096u);
  set("MLBS_LIVE_RECORDS", "lots");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_LIVE_RECORDS");
  set("MLBS_LIVE_RECORDS", "99999999");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_LIVE_RECORDS");
}

// MLBS_READER_RETENTION takes the TOML words; a bad one names the variable.
TEST_F(ConfigEnv, ReaderRetentionVariable) {
  set("MLBS_READER_RETENTION", "until-read");
  EXPECT_EQ(Config::from_env().reader_retention, mlbs::ReaderRetention::until_read);
  set("MLBS_READER_RETENTION", "always");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_READER_RETENTION");
}

// MLBS_PAGE_CACHE is a switch that overrides the file's page_cache.
TEST_F(ConfigFile, PageCacheVariable) {
  EXPECT_FALSE(Config::from_env().page_cache);
  for (const char* on : {"1", "true", "ON", "yes"}) {
    set("MLBS_PAGE_CACHE", on);
    EXPECT_TRUE(Config::from_env().page_cache) << on;
  }
  set("MLBS_CONFIG", write("cached.toml", "page_cache = true\n"));
  set("MLBS_PAGE_CACHE", "off");
  EXPECT_FALSE(Config::from_env().page_cache);
  ::unsetenv("MLBS_PAGE_CACHE");
  EXPECT_TRUE(Config::from_env().page_cache);
  set("MLBS_PAGE_CACHE", "sometimes");
  const ConfigError e = config_error([] { Config::from_env(); });
  EXPECT_EQ(e.field(), "MLBS_PAGE_CACHE");
  EXPECT_EQ(e.source(), "environment");
}

// Malformed variables are errors naming the variable, with source "environment".
TEST_F(ConfigEnv, BadVariablesNameTheVariable) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"MLBS_SCHEDULE", "sideways"}, {"MLBS_DURABILITY", "temp"}, {"MLBS_HELPER_CORE", "x"},
      {"MLBS_HELPER_THREADS", "-2"}, {"MLBS_IO_CHUNK", "big"},    {"MLBS_HELPER_CORE", "-5"},
      {"MLBS_LAYOUT", "tar"}};
  for (const auto& [name, value] : cases) {
    set(name, value);
    const ConfigError e = config_error([] { Config::from_env(); });
    EXPECT_EQ(e.field(), name) << value;
    EXPECT_EQ(e.source(), "environment") << value;
    ::unsetenv(name);
  }
  set("MLBS_TIERS", "mem:1GiB,floppy:/a");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_TIERS[1]");
}

// Values that parse but fail validation are still blamed on the variable that set them.
TEST_F(ConfigEnv, ValidationBlamesTheVariable) {
  set("MLBS_HELPER_THREADS", "0");
  ConfigError e = config_error([] { Config::from_env(); });
  EXPECT_EQ(e.field(), "MLBS_HELPER_THREADS");
  EXPECT_EQ(e.source(), "environment");
  ::unsetenv("MLBS_HELPER_THREADS");
  set("MLBS_IO_CHUNK", "6KiB");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_IO_CHUNK");
  ::unsetenv("MLBS_IO_CHUNK");
  set("MLBS_TIERS", "mem:1GiB,dir:/a,dir:/b/../a");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_TIERS[2].path");
  set("MLBS_TIERS", "mem:1GiB");
  EXPECT_EQ(config_error([] { Config::from_env(); }).field(), "MLBS_TIERS");
}

// --- validation ---------------------------------------------------------------

// The defaults and a typical three-tier setup are valid; an empty explicit order is allowed.
TEST(ConfigValidate, AcceptsValidConfigs) {
  EXPECT_NO_THROW(Config{}.validate());
  Config cfg;
  cfg.tiers = {Tier::memory(2 * GiB), Tier::directory("/nvme/run", 64 * GiB), Tier::directory("/lustre/run")};
  cfg.schedule = Schedule::explicit_order({});
  cfg.helper_threads = 64;
  cfg.helper_core = 0;
  cfg.io_chunk_bytes = 4096;
  EXPECT_NO_THROW(cfg.validate());
}

// Tier list shape: at least two, memory first with a capacity, only one memory tier, known kinds, paths.
TEST(ConfigValidate, RejectsBadTierLists) {
  const auto field_of = [](Config cfg) { return config_error([&] { cfg.validate(); }).field(); };
  Config cfg = two_tiers();
  cfg.tiers.pop_back();
  EXPECT_EQ(field_of(cfg), "tiers");
  cfg = two_tiers();
  std::swap(cfg.tiers[0], cfg.tiers[1]);
  EXPECT_EQ(field_of(cfg), "tiers[0].kind");
  cfg = two_tiers();
  cfg.tiers[0].capacity_bytes = 0;
  EXPECT_EQ(field_of(cfg), "tiers[0].capacity");
  cfg = two_tiers();
  cfg.tiers.push_back(Tier::memory(GiB));
  EXPECT_EQ(field_of(cfg), "tiers[2].kind");
  cfg = two_tiers();
  cfg.tiers[1].kind = "tape";
  EXPECT_EQ(field_of(cfg), "tiers[1].kind");
  cfg = two_tiers();
  cfg.tiers[1].path.clear();
  EXPECT_EQ(field_of(cfg), "tiers[1].path");
}

// Directory paths that normalise to the same absolute path are duplicates.
TEST(ConfigValidate, RejectsDuplicateDirectories) {
  const auto dup = [](std::string a, std::string b) {
    Config cfg = two_tiers();
    cfg.tiers[1].path = std::move(a);
    cfg.tiers.push_back(Tier::directory(std::move(b)));
    return config_error([&] { cfg.validate(); }).field();
  };
  EXPECT_EQ(dup("/a/b", "/a/b"), "tiers[2].path");
  EXPECT_EQ(dup("/a/b", "/a/./c/../b/"), "tiers[2].path");
  EXPECT_EQ(dup("run", "./run"), "tiers[2].path");
  EXPECT_EQ(dup("run", std::filesystem::current_path().string() + "/run"), "tiers[2].path");
  Config distinct = two_tiers();
  distinct.tiers.push_back(Tier::directory("/scratch/run2"));
  EXPECT_NO_THROW(distinct.validate());
}

// Water marks must satisfy 0 <= low <= high <= 1; NaN is rejected.
TEST(ConfigValidate, RejectsBadWaterMarks) {
  const auto field_of = [](double high, double low) {
    Config cfg = two_tiers();
    cfg.tiers[1].high_water = high;
    cfg.tiers[1].low_water = low;
    return config_error([&] { cfg.validate(); }).field();
  };
  EXPECT_EQ(field_of(1.5, 0.5), "tiers[1].high_water");
  EXPECT_EQ(field_of(-0.1, 0.0), "tiers[1].high_water");
  EXPECT_EQ(field_of(0.5, 0.6), "tiers[1].low_water");
  EXPECT_EQ(field_of(0.5, -0.1), "tiers[1].low_water");
  EXPECT_EQ(field_of(std::nan(""), 0.0), "tiers[1].high_water");
  Config ok = two_tiers();
  ok.tiers[1].high_water = 0.8;
  ok.tiers[1].low_water = 0.8;
  EXPECT_NO_THROW(ok.validate());
}

// Block size must be a power of two of at least 512 bytes.
TEST(ConfigValidate, RejectsBadBlockSize) {
  for (const std::uint64_t block : {0ull, 256ull, 1000ull, 4097ull}) {
    Config cfg = two_tiers();
    cfg.tiers[1].block_bytes = block;
    EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[1].block") << block;
  }
  Config cfg = two_tiers();
  cfg.tiers[1].block_bytes = 512;
  EXPECT_NO_THROW(cfg.validate());
}

// helper_threads in 1..64, helper_core >= -1, io_chunk a positive multiple of 4096.
TEST(ConfigValidate, RejectsBadEngineSettings) {
  const auto field_of = [](const std::function<void(Config&)>& change) {
    Config cfg = two_tiers();
    change(cfg);
    return config_error([&] { cfg.validate(); }).field();
  };
  EXPECT_EQ(field_of([](Config& c) { c.helper_threads = 0; }), "helper_threads");
  EXPECT_EQ(field_of([](Config& c) { c.helper_threads = 65; }), "helper_threads");
  EXPECT_EQ(field_of([](Config& c) { c.helper_core = -3; }), "helper_core");
  EXPECT_EQ(field_of([](Config& c) { c.io_chunk_bytes = 0; }), "io_chunk");
  EXPECT_EQ(field_of([](Config& c) { c.io_chunk_bytes = 2048; }), "io_chunk");
  EXPECT_EQ(field_of([](Config& c) { c.io_chunk_bytes = 4096 + 512; }), "io_chunk");
}

// The page cache switch is for file tiers: on the memory tier it is an error.
TEST(ConfigValidate, PageCacheOnlyOnFileTiers) {
  Config cfg = two_tiers();
  cfg.page_cache = true;
  cfg.tiers[1].page_cache = true;
  EXPECT_NO_THROW(cfg.validate());
  cfg.tiers[0].page_cache = true;
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[0].page_cache");
}

// --- tier kinds -------------------------------------------------------------------

// Every kind's spellings name it; unknown-kind messages list the kinds the descriptors know.
TEST(ConfigTierKinds, SpellingsAndMessagesComeFromTheDescriptors) {
  for (const auto& kind : mlbs::tiers::tier_kinds()) {
    EXPECT_EQ(mlbs::tiers::find_tier_kind(kind.name), &kind);
    for (const auto& spelling : kind.spellings) EXPECT_EQ(mlbs::tiers::find_tier_kind(spelling), &kind) << spelling;
  }
  EXPECT_EQ(mlbs::tiers::find_tier_kind("tape"), nullptr);
  const ConfigError e = config_error([] { mlbs::parse_tier_spec("mem:1G,tape:/x"); });
  EXPECT_NE(std::string(e.what()).find("expected mem, dir or mpiio"), std::string::npos) << e.what();
}

// A key the kind does not take is refused where it is set: in TOML with its line, and by validate().
TEST(ConfigTierKinds, KeysAKindDoesNotTakeAreRefused) {
  const ConfigError toml_error = config_error([] {
    Config::from_toml(toml({"[[tier]]", "kind = \"mem\"", "capacity = 1024", "path = \"/x\""}), "k.toml");
  });
  EXPECT_EQ(toml_error.field(), "tiers[0].path");
  EXPECT_EQ(toml_error.line(), 4u);
  EXPECT_NE(std::string(toml_error.what()).find("the memory tier takes no path"), std::string::npos) << toml_error.what();
  Config cfg = two_tiers();
  cfg.tiers[0].bandwidth_bytes_per_s = 1000;
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[0].bandwidth");
  cfg = two_tiers();
  cfg.tiers[0].path = "/x";
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[0].path");
  if (MLBS_HAVE_MPI) {
    cfg.tiers = {Tier::memory(GiB), Tier::mpiio("/shared")};
    cfg.tiers[1].queue_depth = 16;
    const ConfigError e = config_error([&] { cfg.validate(); });
    EXPECT_EQ(e.field(), "tiers[1].queue_depth");
    EXPECT_NE(std::string(e.what()).find("an mpiio tier takes no queue_depth"), std::string::npos) << e.what();
  }
}

// --- the mpiio tier -------------------------------------------------------------

// "mpiio:PATH[:SIZE]" in a spec is an mpiio tier, and formats back the same way.
TEST(ConfigMpiio, TierSpecParsesAndRoundTrips) {
  const auto tiers = mlbs::parse_tier_spec("mem:1GiB,dir:/nvme:8GiB,mpiio:/lustre/run:2TiB");
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[2].kind, "mpiio");
  EXPECT_EQ(tiers[2].path, "/lustre/run");
  EXPECT_EQ(tiers[2].capacity_bytes, 2 * TiB);
  const std::vector<Tier> back = mlbs::parse_tier_spec(mlbs::format_tier_spec(tiers));
  EXPECT_EQ(back[2].kind, "mpiio");
  EXPECT_EQ(back[2].path, "/lustre/run");
  EXPECT_EQ(back[2].capacity_bytes, 2 * TiB);
  EXPECT_EQ(mlbs::format_tier_spec({Tier::memory(GiB), Tier::mpiio("/p")}), "mem:1GiB,mpiio:/p");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,mpiio:", "MLBS_TIERS"); }).field(), "MLBS_TIERS[1]");
  EXPECT_EQ(config_error([] { mlbs::parse_tier_spec("mem:1G,mpiio+pread:/x"); }).field(), "tiers[1]");
}

// kind = "mpiio" in a [[tier]] table is read like a directory tier's.
TEST(ConfigMpiio, TomlKind) {
  const std::string text = toml({"[[tier]]", "kind = \"memory\"", "capacity = \"1GiB\"", "[[tier]]",
                                 "kind = \"mpiio\"", "path = \"/lustre/run\"", "capacity = \"1TiB\""});
  if (!MLBS_HAVE_MPI) {
    const ConfigError e = config_error([&] { (void)Config::from_toml(text); });
    EXPECT_EQ(e.field(), "tiers[1].kind");
    EXPECT_NE(std::string(e.what()).find("built without MPI"), std::string::npos) << e.what();
    return;
  }
  const Config cfg = Config::from_toml(text);
  ASSERT_EQ(cfg.tiers.size(), 2u);
  EXPECT_EQ(cfg.tiers[1].kind, "mpiio");
  EXPECT_EQ(cfg.tiers[1].path, "/lustre/run");
  EXPECT_EQ(cfg.tiers[1].capacity_bytes, TiB);
}

// Anywhere but last, an mpiio tier is refused, naming tiers[i].kind.
TEST(ConfigMpiio, MustBeTheLastTier) {
  Config cfg;
  cfg.tiers = {Tier::memory(64 * MiB), Tier::mpiio("/shared/run"), Tier::directory("/lustre/run")};
  const ConfigError e = config_error([&] { cfg.validate(); });
  EXPECT_EQ(e.field(), "tiers[1].kind");
  if (MLBS_HAVE_MPI) EXPECT_NE(std::string(e.what()).find("last tier"), std::string::npos) << e.what();
}

// An mpiio tier takes neither a directory tier's I/O backend nor its layout.
TEST(ConfigMpiio, RefusesDirectoryOnlyFields) {
  if (!MLBS_HAVE_MPI) GTEST_SKIP() << "mlbs built without MPI";
  Config cfg;
  cfg.tiers = {Tier::memory(64 * MiB), Tier::mpiio("/shared/run")};
  EXPECT_NO_THROW(cfg.validate());
  cfg.tiers[1].io_backend = mlbs::IoBackend::pread;
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[1].io_backend");
  cfg.tiers[1].io_backend = mlbs::IoBackend::automatic;
  cfg.tiers[1].layout = mlbs::Layout::log;
  EXPECT_EQ(config_error([&] { cfg.validate(); }).field(), "tiers[1].layout");
}

// Without MPI initialized there is no group of ranks: the Runtime refuses the
// tier with a TierError naming it (this suite runs without MPI_Init).
TEST(ConfigMpiio, RuntimeWithoutMpiRefusesTheTier) {
  if (!MLBS_HAVE_MPI) GTEST_SKIP() << "mlbs built without MPI";
  Config cfg;
  cfg.tiers = {Tier::memory(MiB), Tier::mpiio("/tmp")};
  try {
    mlbs::Runtime rt(cfg);
    ADD_FAILURE() << "a Runtime with an mpiio tier started without MPI";
  } catch (const mlbs::TierError& e) {
    EXPECT_NE(e.context().tier.find("mpiio"), std::string::npos) << e.context().tier;
    EXPECT_NE(std::string(e.what()).find("needs MPI"), std::string::npos) << e.what();
  }
}

}  // namespace
