// The codec stage in the engine (docs/codecs.md): records encoded on their
// way out of DRAM come back exact (lossless) or within the bound (ZFP),
// tiers hold the stored bytes, incompressible data is bypassed, damage is a
// CorruptionError, readers in another runtime decode, bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "mlbs/mlbs.hpp"
#include "support/codecs.hpp"
#include "support/temp_dir.hpp"

namespace {

using mlbs::test::TempDir;
using namespace std::chrono_literals;

constexpr std::size_t kElems = 64 * 1024;  // 256 KiB records

/// DRAM for 3 records, a fast tier for 4, a slow one without limit.
mlbs::Config tiers(const TempDir& dir, const std::string& codec) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kElems * sizeof(float)),
               mlbs::Tier::directory(dir / "fast", 4 * kElems * sizeof(float)),
               mlbs::Tier::directory(dir / "slow")};
  cfg.codec = codec;
  return cfg;
}

/// A wave packet in a field of zeros: compresses well, losslessly too.
float wave(std::uint64_t id, std::size_t i) {
  const std::size_t centre = (id * 977) % kElems;
  const double d = (double(i) - double(centre)) / 300.0;
  return std::abs(d) < 3 ? float(std::sin(d * 4 + double(id)) * std::exp(-d * d)) : 0.0f;
}

void fill_wave(mlbs::Store<float>& u, std::uint64_t id) {
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = wave(id, i);
}

// zstd: every record back bit-exact through three tiers; the file tiers hold frames a fraction of the records.
TEST(CodecEngine, LosslessRecordsComeBackExactAndTiersHoldTheFrames) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "zstd:1"));
  const std::uint64_t n = 24;
  {
    mlbs::Store<float> u(rt, "u", kElems);
    for (std::uint64_t id = 0; id < n; ++id) {
      fill_wave(u, id);
      u.write(id);
    }
    const mlbs::RecordInfo oldest = u.info(0);
    ASSERT_EQ(oldest.tiers.size(), 1u);
    EXPECT_GT(oldest.tiers[0], 0) << "the oldest record is below DRAM";
    EXPECT_GT(oldest.stored_bytes, 0u);
    EXPECT_LT(oldest.stored_bytes, kElems * sizeof(float) / 4);
    for (std::uint64_t id = n; id-- > 0;) {
      u.read(id);
      for (std::size_t i = 0; i < kElems; ++i) ASSERT_EQ(u[i], wave(id, i)) << "id " << id << " element " << i;
    }
  }
  const mlbs::Stats s = rt.stats();
  EXPECT_GE(s.encoded_records, n - 3);
  EXPECT_LT(s.encoded_bytes * 4, s.encoded_raw_bytes);
  EXPECT_GT(s.encode_ns, 0u);
  EXPECT_GT(s.decode_ns, 0u);
  // What reached the devices is the frames, not the records.
  EXPECT_LT(s.tiers[1].bytes_in + s.tiers[2].bytes_in, s.encoded_raw_bytes / 2);
  EXPECT_EQ(s.tiers[1].used_bytes, 0u);
  EXPECT_EQ(s.tiers[2].used_bytes, 0u);
}

// Random bytes do not compress: stored raw, exact, and after a few attempts the store stops trying for a while.
TEST(CodecEngine, IncompressibleRecordsAreStoredRawAndBypassed) {
  REQUIRE_CODEC("lz4");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "lz4"));
  std::mt19937 rng(3);
  const std::uint64_t n = 40;
  std::vector<std::vector<std::uint32_t>> sent;
  {
    mlbs::Store<std::uint32_t> u(rt, "noise", kElems);
    for (std::uint64_t id = 0; id < n; ++id) {
      for (std::size_t i = 0; i < kElems; ++i) u[i] = rng();
      sent.emplace_back(u.begin(), u.end());
      u.write(id);
    }
    for (std::uint64_t id = n; id-- > 0;) {
      u.read(id);
      ASSERT_TRUE(std::equal(u.begin(), u.end(), sent[id].begin())) << id;
    }
  }
  const mlbs::Stats s = rt.stats();
  EXPECT_EQ(s.encoded_records, 0u);
  EXPECT_GT(s.raw_records, 0u);
  EXPECT_GT(s.bypassed_records, s.raw_records) << "the bypass should skip most records";
}

// ZFP in fixed-accuracy mode: every value back within the tolerance; float64 too.
TEST(CodecEngine, ZfpKeepsTheErrorBound) {
  REQUIRE_CODEC("zfp");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "zfp:accuracy=0.001"));
  const std::uint64_t n = 12;
  mlbs::Store<float> u(rt, "f", kElems);
  for (std::uint64_t id = 0; id < n; ++id) {
    fill_wave(u, id);
    u.write(id);
  }
  for (std::uint64_t id = n; id-- > 0;) {
    u.read(id);
    for (std::size_t i = 0; i < kElems; ++i) ASSERT_NEAR(u[i], wave(id, i), 0.001) << "id " << id << " element " << i;
  }
  EXPECT_GT(rt.stats().encoded_records, 0u);

  mlbs::Store<double> w(rt, "d", kElems / 2);
  for (std::uint64_t id = 0; id < n; ++id) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = wave(id, i);
    w.write(id);
  }
  for (std::uint64_t id = n; id-- > 0;) {
    w.read(id);
    for (std::size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(w[i], wave(id, i), 0.001) << "id " << id;
  }
}

// ZFP on a store of integers is refused when the store is made, naming it; lossless codecs take any store.
TEST(CodecEngine, ZfpOnAnIntegerStoreIsRefusedAtConstruction) {
  REQUIRE_CODEC("zfp");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "zfp:precision=20"));
  try {
    mlbs::Store<int> u(rt, "counts", 16);
    FAIL() << "accepted";
  } catch (const mlbs::InvalidArgumentError& e) {
    EXPECT_EQ(e.context().store, "counts");
    EXPECT_NE(std::string(e.what()).find("float or double"), std::string::npos) << e.what();
  }
  mlbs::Store<float> ok(rt, "counts", 16);  // the name is free: nothing was made
}

// A frame damaged on the device is a CorruptionError naming store and id, never other bytes.
TEST(CodecEngine, DamagedFrameIsACorruptionError) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "zstd:1");
  cfg.tiers[1].faults = cfg.tiers[2].faults = "read:corrupt";  // every read from a file tier flips a byte
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  const std::uint64_t n = 12;
  for (std::uint64_t id = 0; id < n; ++id) {
    fill_wave(u, id);
    u.write(id);
  }
  std::size_t corrupt = 0;
  for (std::uint64_t id = n; id-- > 0;) {
    try {
      u.read(id);
      for (std::size_t i = 0; i < kElems; ++i) ASSERT_EQ(u[i], wave(id, i)) << "wrong bytes for id " << id;
    } catch (const mlbs::CorruptionError& e) {
      ++corrupt;
      EXPECT_EQ(e.context().store, "u");
      EXPECT_EQ(e.context().id, id);
    }
  }
  EXPECT_GT(corrupt, 0u) << "records read from the slow tier were damaged";
  EXPECT_GT(rt.stats().checksum_failures, 0u);
}

// A reader in another runtime decodes the writer's frames: the exact bytes.
TEST(CodecEngine, ReaderDecodesTheWritersFrames) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "zstd:3");
  cfg.schedule = mlbs::Schedule::unknown();  // written behind at once: readers read file tiers
  cfg.tiers[1].layout = cfg.tiers[2].layout = mlbs::Layout::file_per_record;  // readers skip log layouts
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wave", kElems);
  mlbs::Reader<float> r(cfg, "wave");
  for (std::uint64_t id = 0; id < 4; ++id) {
    fill_wave(u, id);
    u.write(id);
  }
  for (std::uint64_t id = 0; id < 4; ++id) {
    ASSERT_TRUE(r.wait(id, 30s)) << id;
    const std::vector<float> got = r.read(id);
    ASSERT_EQ(got.size(), kElems);
    for (std::size_t i = 0; i < kElems; ++i) ASSERT_EQ(got[i], wave(id, i)) << "id " << id << " element " << i;
  }
  EXPECT_GT(rt.stats().encoded_records, 0u);
}

// Bad codecs in TOML and MLBS_CODEC name the field, line or variable; persistent runtimes refuse a codec for now.
TEST(CodecEngine, BadConfigurationIsAConfigError) {
  try {
    mlbs::Config::from_toml("tiers = \"mem:64MiB,dir:/tmp\"\ncodec = \"zstd:99\"\n", "run.toml");
    FAIL() << "accepted zstd:99";
  } catch (const mlbs::ConfigError& e) {
    EXPECT_EQ(e.field(), "codec");
    EXPECT_EQ(e.line(), 2u);
  }
  ::setenv("MLBS_CODEC", "brotli", 1);
  try {
    mlbs::Config::from_env();
    ::unsetenv("MLBS_CODEC");
    FAIL() << "accepted brotli";
  } catch (const mlbs::ConfigError& e) {
    ::unsetenv("MLBS_CODEC");
    EXPECT_NE(std::string(e.what()).find("MLBS_CODEC"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown codec 'brotli'"), std::string::npos) << e.what();
  }
  REQUIRE_CODEC("lz4");
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "lz4");
  cfg.durability = mlbs::Durability::persistent;
  EXPECT_THROW(cfg.validate(), mlbs::ConfigError);
  EXPECT_EQ(mlbs::Config::from_toml("codec = \"zstd\"").codec, "zstd:1");
}

}  // namespace
