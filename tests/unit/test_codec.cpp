// Tests of the codec stage's parts (src/codec/): spec parsing, each codec,
// the chunked frame (parallel, raw fallback, damage) and the adaptive bypass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "codec/bypass.hpp"
#include "codec/share.hpp"
#include "codec/codec.hpp"
#include "codec/frame.hpp"
#include "codec/need.hpp"
#include "codec/spec.hpp"
#include "mlbs/errors.hpp"
#include "support/codecs.hpp"

namespace {

namespace codec = mlbs::codec;
using codec::Element;
using codec::Spec;

/// A smooth field with zeros around it, as an early RTM wavefield is.
std::vector<float> wavefield(std::size_t n) {
  std::vector<float> v(n, 0.0f);
  for (std::size_t i = n / 4; i < n / 2; ++i) v[i] = static_cast<float>(std::sin(double(i) * 0.01) * 3.0);
  return v;
}

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(static_cast<unsigned char>(rng()));
  return v;
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

/// Encodes and decodes `raw` through a frame; returns {frame size, decoded}.
std::pair<std::size_t, std::vector<std::byte>> round_trip(const codec::Codec& c, std::span<const std::byte> raw,
                                                          unsigned threads = 1,
                                                          std::size_t chunk = codec::kChunkBytes) {
  std::vector<std::byte> frame(codec::frame_bound(c, raw.size(), chunk));
  const std::size_t n = codec::encode_frame(c, raw, frame, threads, chunk);
  std::vector<std::byte> out(raw.size());
  codec::decode_frame(std::span(frame).first(n), out, threads, {});
  return {n, out};
}

/// ||decoded - field|| / ||field|| for floats decoded into bytes.
double rel_l2_error(const std::vector<float>& field, const std::vector<std::byte>& decoded) {
  std::vector<float> back(field.size());
  std::memcpy(back.data(), decoded.data(), std::min(decoded.size(), back.size() * sizeof(float)));
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < field.size(); ++i) {
    err += (double(back[i]) - field[i]) * (double(back[i]) - field[i]);
    norm += double(field[i]) * field[i];
  }
  return std::sqrt(err / norm);
}

// --- spec ---

// Every accepted form parses to its fields and prints back to itself.
TEST(CodecSpec, AcceptedFormsRoundTrip) {
  for (const char* text : {"none", "lz4", "zstd:1", "zstd:19", "zfp:accuracy=0.001", "zfp:precision=20",
                           "zfp:rate=8", "zfp:rate=2.5"}) {
    const std::string name = std::string(text).substr(0, std::string(text).find(':'));
    if (!mlbs::test::codec_built(name) && name != "none") continue;
    const Spec s = codec::parse(text);
    EXPECT_EQ(codec::to_string(s), text);
    EXPECT_EQ(codec::parse(codec::to_string(s)), s);
  }
}

// zstd without a level takes level 1.
TEST(CodecSpec, ZstdDefaultsToLevelOne) {
  REQUIRE_CODEC("zstd");
  EXPECT_EQ(codec::parse("zstd").level, 1);
  EXPECT_EQ(codec::parse("zfp:precision=20").zfp_mode, codec::ZfpMode::precision);
}

// Bad specs are ConfigErrors naming the field, the source and line, and the accepted forms.
TEST(CodecSpec, BadSpecsNameTheFieldAndTheAcceptedForms) {
  for (const char* text : {"", "gzip", "zstd:0", "zstd:23", "zstd:fast", "lz4:3", "none:1", "zfp", "zfp:tolerance=1",
                           "zfp:accuracy=0", "zfp:accuracy=-1", "zfp:accuracy=nan", "zfp:precision=0",
                           "zfp:precision=65", "zfp:precision=2.5", "zfp:rate=0", "zfp:rate=65", "zfp:rate="}) {
    try {
      codec::parse(text, "stores.u.codec", "run.toml", 7);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const mlbs::ConfigError& e) {
      EXPECT_EQ(e.field(), "stores.u.codec") << text;
      EXPECT_EQ(e.source(), "run.toml");
      EXPECT_EQ(e.line(), 7u);
      const std::string what = e.what();
      // A codec the build lacks says so instead of listing the forms.
      EXPECT_TRUE(what.find("accepted: none, lz4, zstd") != std::string::npos ||
                  what.find("not in this build") != std::string::npos)
          << what;
    }
  }
}

// A codec compiled out is refused at configuration with the package to install.
TEST(CodecSpec, MissingLibraryIsNamedAtConfiguration) {
  for (const char* name : {"lz4", "zstd", "zfp"}) {
    if (mlbs::test::codec_built(name)) continue;
    try {
      codec::parse(std::string(name) == "zfp" ? "zfp:rate=8" : name);
      ADD_FAILURE() << name;
    } catch (const mlbs::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("-dev"), std::string::npos) << e.what();
    }
    return;
  }
  GTEST_SKIP() << "every codec is built in";
}

// --- codecs ---

// zstd and lz4 give back every byte, compress zeros and smooth fields, and are refused nothing.
TEST(Codec, LosslessCodecsRoundTripExactly) {
  for (const char* text : {"lz4", "zstd:1", "zstd:9"}) {
    const Spec spec = [&] {
      try {
        return codec::parse(text);
      } catch (const mlbs::ConfigError&) {
        return Spec{};
      }
    }();
    if (spec.none()) continue;
    const auto c = codec::make(spec, Element::any);
    const auto field = wavefield(1 << 20);  // 4 MiB: four chunks
    auto [n, out] = round_trip(*c, bytes_of(field));
    EXPECT_EQ(std::memcmp(out.data(), field.data(), out.size()), 0) << text;
    EXPECT_LT(n, field.size() * sizeof(float) / 2) << text;
  }
}

// "none" makes no codec; ZFP on untyped bytes is an InvalidArgumentError naming the store.
TEST(Codec, ZfpNeedsFloatingPointStores) {
  EXPECT_EQ(codec::make(Spec{}, Element::any), nullptr);
  REQUIRE_CODEC("zfp");
  try {
    codec::make(codec::parse("zfp:precision=20"), Element::any, "u");
    FAIL() << "zfp accepted untyped bytes";
  } catch (const mlbs::InvalidArgumentError& e) {
    EXPECT_EQ(e.context().store, "u");
    EXPECT_NE(std::string(e.what()).find("float or double"), std::string::npos) << e.what();
  }
}

// ZFP's accuracy mode keeps every value within the tolerance, for floats and doubles.
TEST(Codec, ZfpAccuracyBoundsTheError) {
  REQUIRE_CODEC("zfp");
  const auto field = wavefield(300000);
  const auto c = codec::make(codec::parse("zfp:accuracy=0.001"), Element::float32);
  auto [n, out] = round_trip(*c, bytes_of(field));
  std::vector<float> back(field.size());
  std::memcpy(back.data(), out.data(), out.size());
  double worst = 0;
  for (std::size_t i = 0; i < field.size(); ++i) worst = std::max(worst, std::abs(double(back[i]) - field[i]));
  EXPECT_LE(worst, 0.001);
  EXPECT_LT(n, field.size() * sizeof(float) / 4);

  std::vector<double> wide(field.begin(), field.end());
  const auto d = codec::make(codec::parse("zfp:accuracy=1e-6"), Element::float64);
  auto [m, out64] = round_trip(*d, bytes_of(wide));
  std::vector<double> back64(wide.size());
  std::memcpy(back64.data(), out64.data(), out64.size());
  worst = 0;
  for (std::size_t i = 0; i < wide.size(); ++i) worst = std::max(worst, std::abs(back64[i] - wide[i]));
  EXPECT_LE(worst, 1e-6);
  EXPECT_LT(m, wide.size() * sizeof(double));
}

// Fixed rate stores about RATE bits per value; fixed precision keeps a relative error near 2^-bits.
TEST(Codec, ZfpRateAndPrecisionModes) {
  REQUIRE_CODEC("zfp");
  auto field = wavefield(1 << 18);
  for (std::size_t i = 0; i < field.size(); ++i) field[i] += 1.0f;  // no zeros: rate alone sets the size
  const auto rate = codec::make(codec::parse("zfp:rate=8"), Element::float32);
  auto [n, out] = round_trip(*rate, bytes_of(field));
  EXPECT_NEAR(double(n), field.size() * 8 / 8.0, field.size() * 0.02);

  const auto prec = codec::make(codec::parse("zfp:precision=20"), Element::float32);
  auto [m, back] = round_trip(*prec, bytes_of(field));
  EXPECT_LT(rel_l2_error(field, back), 1e-4);
  EXPECT_LT(m, field.size() * sizeof(float));
}

// ZFP codes in the layout's dimensions (rows 2-D, planes 3-D): each more than the last gains ratio
// at the same precision, keeps the error small, and the layout travels in the frame.
TEST(Codec, ZfpCodesInTheLayoutsDimensions) {
  REQUIRE_CODEC("zfp");
  constexpr std::uint32_t n = 48;
  std::vector<float> field(std::size_t(n) * n * n);
  for (std::uint32_t z = 0; z < n; ++z)
    for (std::uint32_t y = 0; y < n; ++y)
      for (std::uint32_t x = 0; x < n; ++x)
        field[(std::size_t(z) * n + y) * n + x] = float(std::sin(0.2 * x) * std::cos(0.15 * y) * std::sin(0.1 * z + 1));
  const Spec spec = codec::parse("zfp:precision=20");
  std::size_t last = SIZE_MAX;
  for (const codec::Plane plane : {codec::Plane{}, codec::Plane{n, 0}, codec::Plane{n, n}}) {
    SCOPED_TRACE(plane.dims());
    const std::size_t chunk = codec::chunk_bytes_for(Element::float32, plane);
    EXPECT_EQ(chunk % (plane.block_elements() * sizeof(float)), 0u);
    const auto c = codec::make(spec, Element::float32, "u", plane);
    std::vector<std::byte> frame(codec::frame_bound(*c, field.size() * sizeof(float), chunk));
    const std::size_t size = codec::encode_frame(*c, bytes_of(field), frame, 2, chunk);
    EXPECT_EQ(codec::inspect_frame(std::span(frame).first(size), {}).plane, plane);
    std::vector<std::byte> out(field.size() * sizeof(float));
    codec::decode_frame(std::span(frame).first(size), out, 2, {});
    EXPECT_LT(rel_l2_error(field, out), 1e-4);
    EXPECT_LT(double(size), 0.9 * double(last));
    last = size;
  }
}

// A version-1 frame (before rows were coded 2-D) that carries rows was coded 1-D, and decodes so.
TEST(CodecFrame, VersionOneRowsDecodeFlat) {
  REQUIRE_CODEC("zfp");
  const auto field = wavefield(std::size_t{1} << 16);
  const auto flat = codec::make(codec::parse("zfp:precision=16"), Element::float32);
  std::vector<std::byte> frame(codec::frame_bound(*flat, field.size() * sizeof(float)));
  const std::size_t size = codec::encode_frame(*flat, bytes_of(field), frame, 1);
  std::vector<std::byte> expected(field.size() * sizeof(float)), out(expected.size());
  codec::decode_frame(std::span(frame).first(size), expected, 1, {});
  frame[4] = std::byte{1};     // version
  frame[24] = std::byte{32};   // plane nx = 32, ny = 0: rows
  EXPECT_EQ(codec::inspect_frame(std::span(frame).first(size), {}).plane, codec::Plane{});
  codec::decode_frame(std::span(frame).first(size), out, 1, {});
  EXPECT_EQ(out, expected);
  frame[4] = std::byte{9};
  EXPECT_THROW(codec::decode_frame(std::span(frame).first(size), out, 1, {}), mlbs::CorruptionError);
}

// --- frame ---

// Random bytes do not compress: every chunk is kept raw, the frame is the record plus a small header.
TEST(CodecFrame, IncompressibleChunksAreStoredRaw) {
  REQUIRE_CODEC("zstd");
  const auto c = codec::make(codec::parse("zstd:1"), Element::any);
  const auto raw = random_bytes(3 * codec::kChunkBytes + 1000);
  std::vector<std::byte> frame(codec::frame_bound(*c, raw.size()));
  const std::size_t n = codec::encode_frame(*c, raw, frame, 2);
  EXPECT_LE(n, raw.size() + 128);
  const auto info = codec::inspect_frame(std::span(frame).first(n), {});
  EXPECT_EQ(info.chunks, 4u);
  EXPECT_EQ(info.raw_chunks, 4u);
  EXPECT_EQ(info.raw_bytes, raw.size());
  std::vector<std::byte> out(raw.size());
  codec::decode_frame(std::span(frame).first(n), out, 2, {});
  EXPECT_EQ(out, raw);
}

// A frame mixing compressed and raw chunks decodes to the record, with any number of threads, and
// the frame does not depend on how many threads made it.
TEST(CodecFrame, ChunksInParallelGiveTheSameFrame) {
  REQUIRE_CODEC("lz4");
  const auto c = codec::make(codec::parse("lz4"), Element::any);
  std::vector<std::byte> raw(5 * 65536 + 17, std::byte{0});
  const auto noise = random_bytes(65536, 9);
  std::copy(noise.begin(), noise.end(), raw.begin() + 2 * 65536);  // chunk 2 raw, the others compressed
  std::vector<std::byte> one(codec::frame_bound(*c, raw.size(), 65536)), four(one.size());
  const std::size_t n1 = codec::encode_frame(*c, raw, one, 1, 65536);
  const std::size_t n4 = codec::encode_frame(*c, raw, four, 4, 65536);
  ASSERT_EQ(n1, n4);
  EXPECT_EQ(std::memcmp(one.data(), four.data(), n1), 0);
  EXPECT_EQ(codec::inspect_frame(std::span(one).first(n1), {}).raw_chunks, 1u);
  for (unsigned threads : {1u, 3u, 8u}) {
    std::vector<std::byte> out(raw.size(), std::byte{0x55});
    codec::decode_frame(std::span(one).first(n1), out, threads, {});
    EXPECT_EQ(out, raw) << threads;
  }
}

// Probing: random bytes stop after the sample chunks (0: not worth it, the frame's other slots untouched);
// a record whose sample includes one compressible chunk (zeros at one end, noise elsewhere) is encoded in
// full, and the frame equals the one made without probing.
// (Chunks of kSampleBytes probe whole chunks; larger ones, a lossless codec samples their heads.)
TEST(CodecFrame, ProbeStopsOnIncompressibleRecordsOnly) {
  REQUIRE_CODEC("lz4");
  const auto c = codec::make(codec::parse("lz4"), Element::any);
  for (const std::size_t chunk : {codec::kSampleBytes, 4 * codec::kSampleBytes}) {
  SCOPED_TRACE(chunk);
  const std::size_t n = 12;
  const auto noise = random_bytes(n * chunk, 5);
  std::vector<std::byte> frame(codec::frame_bound(*c, noise.size(), chunk), std::byte{0x33});
  EXPECT_EQ(codec::encode_frame(*c, noise, frame, 2, chunk, true), 0u);
  // Slot 1 is no probe chunk (the probes are 0, 3, 7 and 11): its bytes were not written.
  const auto slot1 = frame.begin() + static_cast<std::ptrdiff_t>(frame.size() * 3 / 24);  // inside slot 1
  EXPECT_TRUE(std::all_of(slot1, slot1 + 1024, [](std::byte b) { return b == std::byte{0x33}; }));

  std::vector<std::byte> mixed = noise;
  std::fill(mixed.end() - chunk, mixed.end(), std::byte{0});  // the last chunk compresses
  std::vector<std::byte> probed(frame.size()), plain(frame.size());
  const std::size_t np = codec::encode_frame(*c, mixed, probed, 2, chunk, true);
  const std::size_t n0 = codec::encode_frame(*c, mixed, plain, 2, chunk, false);
  ASSERT_GT(np, 0u);
  ASSERT_EQ(np, n0);
  EXPECT_EQ(std::memcmp(probed.data(), plain.data(), np), 0);
  std::vector<std::byte> out(mixed.size());
  codec::decode_frame(std::span(probed).first(np), out, 2, {});
  EXPECT_EQ(out, mixed);
  }
}

// An empty record is a frame of no chunks.
TEST(CodecFrame, EmptyRecord) {
  REQUIRE_CODEC("lz4");
  const auto c = codec::make(codec::parse("lz4"), Element::any);
  auto [n, out] = round_trip(*c, {});
  EXPECT_GT(n, 0u);
  EXPECT_TRUE(out.empty());
}

// Records shorter than one row or plane of their layout (or empty) are coded 1-D and come back.
TEST(CodecFrame, RecordsShorterThanTheirLayout) {
  REQUIRE_CODEC("zfp");
  const std::vector<float> few = {1.0f, 2.0f, 3.0f};
  for (const codec::Plane plane : {codec::Plane{64, 0}, codec::Plane{64, 64}}) {
    const auto c = codec::make(codec::parse("zfp:precision=24"), Element::float32, "u", plane);
    auto [n, out] = round_trip(*c, {}, 1, codec::chunk_bytes_for(Element::float32, plane));
    EXPECT_TRUE(out.empty());
    auto [m, back] = round_trip(*c, bytes_of(few), 1, codec::chunk_bytes_for(Element::float32, plane));
    EXPECT_LT(rel_l2_error(few, back), 1e-5);
  }
}

// Damage anywhere in a frame is a CorruptionError carrying the record's context, never other bytes.
TEST(CodecFrame, DamageIsACorruptionError) {
  REQUIRE_CODEC("zstd");
  const auto c = codec::make(codec::parse("zstd:3"), Element::any);
  const auto field = wavefield(1 << 19);  // 2 MiB: two chunks
  const auto raw = bytes_of(field);
  std::vector<std::byte> frame(codec::frame_bound(*c, raw.size()));
  frame.resize(codec::encode_frame(*c, raw, frame, 1));
  const mlbs::ErrorContext ctx{"u", 7, "tier 1 (directory /x)"};
  auto expect_corrupt = [&](std::vector<std::byte> f, std::size_t size, const char* what) {
    std::vector<std::byte> out(size);
    try {
      codec::decode_frame(f, out, 2, ctx);
      ADD_FAILURE() << what << ": decoded";
    } catch (const mlbs::CorruptionError& e) {
      EXPECT_EQ(e.context().store, "u") << what;
      EXPECT_EQ(e.context().id, 7u) << what;
      EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
  };
  expect_corrupt(std::vector<std::byte>(frame.begin(), frame.begin() + 10), raw.size(), "short header");
  expect_corrupt(std::vector<std::byte>(frame.begin(), frame.end() - 1), raw.size(), "cut payload");
  expect_corrupt(frame, raw.size() - 4, "other size");
  auto f = frame;
  f[0] = std::byte{'X'};
  expect_corrupt(f, raw.size(), "magic");
  f = frame;
  f[32] = std::byte{'q'};  // the codec's name: "qstd:3"
  expect_corrupt(f, raw.size(), "codec name");
  f = frame;
  f[12] = std::byte{9};  // chunk count
  expect_corrupt(f, raw.size(), "chunk count");
  f = frame;
  for (std::size_t i = frame.size() / 2; i < frame.size() / 2 + 64; ++i) f[i] ^= std::byte{0xA5};
  expect_corrupt(f, raw.size(), "payload bytes");
}

// --- bypass ---

// Records that do not pay double the records stored raw without trying, up to kMaxSkip; one that pays resets.
TEST(CodecBypass, BacksOffAndRecovers) {
  codec::Bypass b;
  EXPECT_TRUE(codec::should_try(b));
  std::vector<std::uint32_t> skips;
  for (int i = 0; i < 8; ++i) {
    b = codec::tried(b, 1000, 990);
    skips.push_back(b.skip);
    while (!codec::should_try(b)) b = codec::skipped(b);
  }
  EXPECT_EQ(skips, (std::vector<std::uint32_t>{1, 2, 4, 8, 16, 32, 32, 32}));
  b = codec::tried(b, 1000, 500);
  EXPECT_TRUE(codec::should_try(b));
  EXPECT_EQ(b.streak, 0u);
  EXPECT_TRUE(codec::pays(1600, 1500));
  EXPECT_FALSE(codec::pays(1600, 1501));
}

// A frame is worth its codec time when the bytes it saved would take longer at the slowest tier's rate.
TEST(CodecBypass, SavesTimeWeighsSavedBytesAgainstCodecTime) {
  constexpr double kRate = 200.0 * (1 << 20);  // 200 MiB/s: 1 MiB saved is 5 ms
  EXPECT_TRUE(codec::saves_time(16 << 20, 2 << 20, 10'000'000, kRate));   // 14 MiB saved (70 ms) for 10 ms
  EXPECT_FALSE(codec::saves_time(16 << 20, 12 << 20, 28'000'000, kRate));  // 4 MiB saved (20 ms) for 28 ms
  EXPECT_TRUE(codec::saves_time(16 << 20, 12 << 20, 28'000'000, 0)) << "rate unknown: by size alone";
  EXPECT_FALSE(codec::saves_time(100, 100, 0, 0)) << "nothing saved";
}

// --- when the codec is used (codec_when) ---

/// Calls made after `n` with the given waits; how many of them found the codec wanted.
std::size_t wanted_calls(codec::Need& n, const std::vector<bool>& waits) {
  std::size_t wanted = 0;
  for (bool w : waits) {
    n = codec::called(n, w);
    wanted += codec::wanted(mlbs::CodecWhen::needed, n);
  }
  return wanted;
}

// "needed": never without a wait; for `window` calls after one; always: every call.
TEST(CodecNeed, WantedOnlyWithinAWindowAfterAWait) {
  codec::Need n;
  EXPECT_FALSE(codec::wanted(mlbs::CodecWhen::needed, n));
  EXPECT_TRUE(codec::wanted(mlbs::CodecWhen::always, n));
  EXPECT_EQ(wanted_calls(n, std::vector<bool>(100, false)), 0u);
  std::vector<bool> one_wait(100, false);
  one_wait[0] = true;
  EXPECT_EQ(wanted_calls(n, one_wait), codec::kFirstWindow) << "the waiting call and the next window - 1";
  EXPECT_FALSE(codec::wanted(mlbs::CodecWhen::needed, n));
}

// A wait inside the window extends it; a wait after it closed doubles it, up to kMaxWindow.
TEST(CodecNeed, WindowDoublesWhenTheWaitsComeBack) {
  codec::Need n;
  n = codec::called(n, true);
  n = codec::called(n, true);  // still inside: renewed, not doubled
  EXPECT_EQ(n.window, codec::kFirstWindow);
  std::uint64_t expected = codec::kFirstWindow;
  for (int round = 0; round < 10; ++round) {
    while (codec::wanted(mlbs::CodecWhen::needed, n)) n = codec::called(n, false);
    n = codec::called(n, true);
    expected = std::min(expected * 2, codec::kMaxWindow);
    EXPECT_EQ(n.window, expected) << "round " << round;
    EXPECT_TRUE(codec::wanted(mlbs::CodecWhen::needed, n));
  }
  EXPECT_EQ(n.window, codec::kMaxWindow);
}

// --- planning records not encoded yet (codec/share.hpp) ---

// Nothing known: a record is planned at its size; the first attempt sets the share, later ones move it a
// quarter of the way; a record stored raw counts as a share of 1.
TEST(CodecShare, PlansAtWhatTheFramesTookLately) {
  codec::StoredShare s;
  EXPECT_EQ(codec::planned_bytes(s, 1000), 1000u);
  s = codec::observed(s, 1000, 100);
  EXPECT_EQ(codec::planned_bytes(s, 1000), 100u);
  s = codec::observed(s, 1000, 500);
  EXPECT_EQ(codec::planned_bytes(s, 1000), 200u);  // 0.1 + (0.5 - 0.1) / 4
  s = codec::observed(s, 1000, 1000);              // stored raw
  EXPECT_EQ(codec::planned_bytes(s, 1000), 400u);
  EXPECT_EQ(codec::planned_bytes(codec::observed({}, 100, 0), 100), 1u) << "at least a byte";
  EXPECT_EQ(codec::planned_bytes(codec::observed({}, 100, 200), 100), 100u) << "never more than its size";
  EXPECT_EQ(codec::planned_bytes(s, 0), 0u);
}

}  // namespace
