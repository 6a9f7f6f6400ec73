// The codec stage in the engine (docs/codecs.md): records encoded on their
// way out of DRAM come back exact (lossless) or within the bound (ZFP),
// tiers hold the stored bytes, incompressible data is bypassed, damage is a
// CorruptionError, readers in another runtime decode, bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
  cfg.codec_when = mlbs::CodecWhen::always;  // these tests are about what encoding does
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

/// Writes the waves of ids from .. to - 1.
void write_waves(mlbs::Store<float>& u, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t id = from; id < to; ++id) {
    fill_wave(u, id);
    u.write(id);
  }
}

/// Reads record `id`: its wave, bit for bit (lossless codecs and raw records).
::testing::AssertionResult reads_wave(mlbs::Store<float>& u, std::uint64_t id) {
  u.read(id);
  for (std::size_t i = 0; i < kElems; ++i)
    if (u[i] != wave(id, i))
      return ::testing::AssertionFailure() << "id " << id << " element " << i << ": " << u[i] << " != " << wave(id, i);
  return ::testing::AssertionSuccess();
}

// codec_when = needed: records that leave DRAM while the application has not waited are stored raw;
// once it waits for the tiers (here a read of a record that has left DRAM: a wait whatever the timing),
// the records after it are encoded.
TEST(CodecEngine, NeededEncodesOnlyOnceTheApplicationWaits) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "zstd:1");
  cfg.codec_when = mlbs::CodecWhen::needed;
  cfg.schedule = mlbs::Schedule::unknown();  // every write goes down behind the application
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  // Two writes into free DRAM (no wait), written behind: both raw.
  write_waves(u, 0, 2);
  u.flush();
  mlbs::Stats s = rt.stats();
  ASSERT_EQ(s.write_stalls, 0u);
  EXPECT_EQ(s.unneeded_records, 2u);
  EXPECT_EQ(s.encoded_records, 0u);
  // Record 2 leaves DRAM (3 records fit) before it is read: the read waits for it.
  write_waves(u, 2, 8);
  u.flush();
  ASSERT_TRUE(reads_wave(u, 2));
  ASSERT_GT(rt.stats().read_stalls, 0u);
  const std::uint64_t n = 24;
  write_waves(u, 8, n);
  u.flush();
  s = rt.stats();
  EXPECT_GT(s.encoded_records, 0u);
  EXPECT_EQ(s.encoded_records + s.unneeded_records + s.raw_records + s.bypassed_records, n)
      << "every record went down once, and was counted once";
  for (std::uint64_t id = n; id-- > 0;)
    if (id != 2) ASSERT_TRUE(reads_wave(u, id));
}

// codec_when = needed also keeps a frame only when the bytes it saves would take longer at the slowest
// tier's rate than the encoding took: behind a tier capped at 64 GiB/s no frame is worth it; at 16 MiB/s they are.
TEST(CodecEngine, NeededKeepsFramesOnlyWhenTheySaveTierTime) {
  REQUIRE_CODEC("zstd");
  for (const std::uint64_t cap : {64ull << 30, 16ull << 20}) {
    SCOPED_TRACE(cap);
    TempDir dir;
    mlbs::Config cfg;
    cfg.tiers = {mlbs::Tier::memory(3 * kElems * sizeof(float)), mlbs::Tier::directory(dir / "slow")};
    cfg.tiers[1].bandwidth_bytes_per_s = cap;
    cfg.codec = "zstd:1";  // codec_when = needed, the default
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "u", kElems);
    write_waves(u, 0, 6);
    // The oldest record is below DRAM (3 records fit): reading it waits, whatever the timing, and
    // opens the codec's window for the writes that follow.
    ASSERT_TRUE(reads_wave(u, 0));
    write_waves(u, 6, 18);
    const mlbs::Stats s = rt.stats();
    ASSERT_GT(s.read_stalls, 0u);
    if (cap > (1ull << 30)) {
      EXPECT_EQ(s.encoded_records, 0u) << "a frame saving microseconds is not worth its encoding";
      EXPECT_GT(s.raw_records, 0u);
    } else {
      EXPECT_GT(s.encoded_records, 0u);
    }
    for (std::uint64_t id = 18; id-- > 1;) ASSERT_TRUE(reads_wave(u, id));
  }
}

// StoreOptions: a store's own codec overrides the runtime's (a codec where the runtime has none, "none"
// where it has one); byte stores said to hold floats get ZFP; wrong element kinds and bad specs are refused
// naming the store.
TEST(CodecEngine, StoreOptionsChooseTheCodecPerStore) {
  REQUIRE_CODEC("zstd");
  REQUIRE_CODEC("zfp");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "zfp:accuracy=0.001"));
  const std::uint64_t n = 12;
  mlbs::Store<float> exact(rt, "exact", mlbs::StoreOptions{"zstd:1"}, kElems);
  mlbs::Store<float> raw(rt, "raw", mlbs::StoreOptions{"none"}, kElems);
  mlbs::StoreOptions said_float;
  said_float.elements = mlbs::StoreOptions::Elements::float32;
  mlbs::Store<std::byte> bytes(rt, "bytes", said_float, kElems * sizeof(float));  // the runtime's ZFP
  for (std::uint64_t id = 0; id < n; ++id) {
    fill_wave(exact, id);
    fill_wave(raw, id);
    for (std::size_t i = 0; i < kElems; ++i) {
      const float v = wave(id, i);
      std::memcpy(bytes.data() + i * sizeof v, &v, sizeof v);
    }
    exact.write(id);
    raw.write(id);
    bytes.write(id);
  }
  EXPECT_GT(exact.info(0).stored_bytes, 0u);
  EXPECT_EQ(raw.info(0).stored_bytes, 0u) << "codec none: stored raw under a runtime with ZFP";
  EXPECT_GT(bytes.info(0).stored_bytes, 0u);
  for (std::uint64_t id = n; id-- > 0;) {
    exact.read(id);
    raw.read(id);
    bytes.read(id);
    for (std::size_t i = 0; i < kElems; ++i) {
      ASSERT_EQ(exact[i], wave(id, i)) << "zstd is lossless; id " << id;
      ASSERT_EQ(raw[i], wave(id, i));
      float v;
      std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
      ASSERT_NEAR(v, wave(id, i), 0.001) << "ZFP's bound; id " << id;
    }
  }
  try {
    mlbs::Store<int> wrong(rt, "ints", said_float, 4);
    FAIL() << "accepted an int store said to hold floats";
  } catch (const mlbs::InvalidArgumentError& e) {
    EXPECT_EQ(e.context().store, "ints");
  }
  try {
    mlbs::Store<float> bad(rt, "bad", mlbs::StoreOptions{"zstd:99"}, 4);
    FAIL() << "accepted zstd:99";
  } catch (const mlbs::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("store 'bad'"), std::string::npos) << e.what();
  }
}

// Persistent: records stored as frames survive the runtime; a runtime without a codec recovers and reads
// them bit-exact (the journal names each frame); a damaged frame is skipped at recovery, never served.
TEST(CodecEngine, PersistentFramesAreRecoveredAndDecoded) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Config cfg = tiers(dir, "zstd:1");
  cfg.durability = mlbs::Durability::persistent;
  const std::uint64_t n = 10;
  std::uint64_t stored_before = 0;
  {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "kept", kElems);
    write_waves(u, 0, n);
    u.flush();
    EXPECT_EQ(rt.stats().encoded_records, n) << "every record reaches the persistent tier as a frame";
    stored_before = u.info(n - 1).stored_bytes;
    ASSERT_GT(stored_before, 0u);
  }
  // The newest frame damaged on the device: recovery skips that record, the others read back.
  // (A file-per-record layout names it <id as 16 hex digits>-<generation>.rec; a log layout has no such file.)
  std::filesystem::path newest;
  std::size_t record_files = 0;
  char prefix[24];
  std::snprintf(prefix, sizeof prefix, "%016llx-", static_cast<unsigned long long>(n - 1));
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir / "slow")) {
    if (f.path().extension() != ".rec") continue;
    ++record_files;
    if (f.path().filename().string().rfind(prefix, 0) == 0) newest = f.path();
  }
  ASSERT_TRUE(record_files == 0 || !newest.empty());
  cfg.codec = "none";
  if (!newest.empty()) {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');
  }
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "kept", kElems);
  const std::vector<std::uint64_t> ids = u.ids();
  EXPECT_EQ(ids.size(), newest.empty() ? n : n - 1) << "a damaged frame is not recovered";
  for (std::uint64_t id : ids) {
    EXPECT_GT(u.info(id).stored_bytes, 0u);
    ASSERT_TRUE(reads_wave(u, id));
  }
}

// zstd: every record back bit-exact through three tiers; the file tiers hold frames a fraction of the records.
TEST(CodecEngine, LosslessRecordsComeBackExactAndTiersHoldTheFrames) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  mlbs::Runtime rt(tiers(dir, "zstd:1"));
  const std::uint64_t n = 24;
  {
    mlbs::Store<float> u(rt, "u", kElems);
    write_waves(u, 0, n);
    const mlbs::RecordInfo oldest = u.info(0);
    ASSERT_GE(oldest.tiers.size(), 1u);  // two with a copy ahead on the slow tier
    for (int t : oldest.tiers) EXPECT_GT(t, 0) << "the oldest record is below DRAM";
    EXPECT_GT(oldest.stored_bytes, 0u);
    EXPECT_LT(oldest.stored_bytes, kElems * sizeof(float) / 4);
    for (std::uint64_t id = n; id-- > 0;) ASSERT_TRUE(reads_wave(u, id));
  }
  const mlbs::Stats s = rt.stats();
  EXPECT_GE(s.encoded_records, n - 3);
  EXPECT_LT(s.encoded_bytes * 4, s.encoded_raw_bytes);
  EXPECT_GT(s.encode_ns, 0u);
  EXPECT_GT(s.decode_ns, 0u);
  // What reached the devices is the frames, not the records.
  EXPECT_LT(s.tiers[1].bytes_in + s.tiers[2].bytes_in, s.encoded_raw_bytes / 2);
  // ...and the tiers say which records those frames were.
  EXPECT_GE(s.tiers[1].raw_bytes_in + s.tiers[2].raw_bytes_in, s.encoded_raw_bytes);
  EXPECT_GT(s.tiers[1].raw_bytes_out, s.tiers[1].bytes_out);
  EXPECT_EQ(s.tiers[0].raw_bytes_in, s.tiers[0].bytes_in) << "DRAM holds records as they are";
  EXPECT_EQ(s.tiers[1].codec_ns + s.tiers[2].codec_ns, s.encode_ns + s.decode_ns) << "codec time, per tier";
  EXPECT_EQ(s.tiers[1].used_bytes, 0u);
  EXPECT_EQ(s.tiers[2].used_bytes, 0u);
}

/// zstd:1 over a fast tier with room for barely one raw record (and many frames), no copy ahead.
mlbs::Config fast_tier_for_one_raw_record(const TempDir& dir) {
  mlbs::Config cfg = tiers(dir, "zstd:1");
  cfg.tiers[1].capacity_bytes = kElems * sizeof(float) + kElems * sizeof(float) / 20;
  cfg.copy_ahead = false;
  return cfg;
}

// A record not encoded yet is planned at what the store's frames take lately: a fast tier with room
// for barely one raw record takes the records' frames instead of sending them to the slow tier (planned
// raw, the third would not have fitted), and they all come back exact.
TEST(CodecEngine, RecordsArePlannedAtTheirFramesNotTheirSize) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  const mlbs::Config cfg = fast_tier_for_one_raw_record(dir);
  mlbs::Runtime rt(cfg);
  const std::uint64_t n = 12;
  mlbs::Store<float> u(rt, "u", kElems);
  write_waves(u, 0, n);
  u.flush();
  int on_fast = 0;
  for (std::uint64_t id = 0; id < n; ++id) {
    const mlbs::RecordInfo info = u.info(id);
    on_fast += std::find(info.tiers.begin(), info.tiers.end(), 1) != info.tiers.end();
  }
  std::printf("records with a copy on the fast tier: %d of %llu\n", on_fast, static_cast<unsigned long long>(n));
  EXPECT_GE(on_fast, 6) << "the fast tier holds a frame of all but the first few records below DRAM";
  EXPECT_LE(rt.stats().tiers[1].peak_used_bytes, cfg.tiers[1].capacity_bytes);
  for (std::uint64_t id = n; id-- > 0;) ASSERT_TRUE(reads_wave(u, id));
}

// A record whose frame turns out larger than planned (noise after waves: planned at the waves' share,
// stored raw) takes the rest of the room when its copy is made; where that room is not there, the copy is
// given up (a stall, no error) and the record is planned again at what it takes: it goes to the slow tier
// and comes back exact.
TEST(CodecEngine, AFrameLargerThanPlannedIsPlannedAgainAtItsSize) {
  REQUIRE_CODEC("zstd");
  TempDir dir;
  const mlbs::Config cfg = fast_tier_for_one_raw_record(dir);
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "u", kElems);
  write_waves(u, 0, 8);
  u.flush();  // five frames on the fast tier: far less room left than one raw record, the share known
  std::mt19937 rng(5);
  std::vector<float> noise(kElems);
  for (float& x : noise) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::copy(noise.begin(), noise.end(), u.begin());
  u.write(100);
  write_waves(u, 8, 11);  // pushes the noise out of DRAM
  u.flush();
  const mlbs::RecordInfo info = u.info(100);
  EXPECT_EQ(info.tiers, std::vector<int>{2}) << "the raw record does not fit the fast tier";
  EXPECT_GE(rt.stats().tiers[1].stalls, 1u) << "its copy there was given up";
  EXPECT_LE(rt.stats().tiers[1].peak_used_bytes, cfg.tiers[1].capacity_bytes);
  for (std::uint64_t id = 11; id-- > 8;) ASSERT_TRUE(reads_wave(u, id));
  u.read(100);
  EXPECT_TRUE(std::equal(u.begin(), u.end(), noise.begin()));
  for (std::uint64_t id = 8; id-- > 0;) ASSERT_TRUE(reads_wave(u, id));
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
  write_waves(u, 0, n);
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
  write_waves(u, 0, n);
  std::size_t corrupt = 0;
  for (std::uint64_t id = n; id-- > 0;) {
    try {
      ASSERT_TRUE(reads_wave(u, id)) << "wrong bytes, not an error";
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
  write_waves(u, 0, 4);
  for (std::uint64_t id = 0; id < 4; ++id) {
    ASSERT_TRUE(r.wait(id, 30s)) << id;
    const std::vector<float> got = r.read(id);
    ASSERT_EQ(got.size(), kElems);
    for (std::size_t i = 0; i < kElems; ++i) ASSERT_EQ(got[i], wave(id, i)) << "id " << id << " element " << i;
  }
  EXPECT_GT(rt.stats().encoded_records, 0u);
}

// Bad codecs in TOML and MLBS_CODEC name the field, line or variable.
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
  EXPECT_EQ(mlbs::Config::from_toml("codec = \"zstd\"").codec, "zstd:1");
  EXPECT_EQ(mlbs::Config::from_toml("codec_when = \"always\"").codec_when, mlbs::CodecWhen::always);
  try {
    mlbs::Config::from_toml("codec = \"lz4\"\ncodec_when = \"sometimes\"\n", "run.toml");
    FAIL() << "accepted codec_when = sometimes";
  } catch (const mlbs::ConfigError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_NE(std::string(e.what()).find("expected needed or always"), std::string::npos) << e.what();
  }
}

}  // namespace
