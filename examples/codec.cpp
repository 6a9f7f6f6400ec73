// Snapshots compressed below DRAM (docs/codecs.md): 48 wavefield snapshots of
// 1 MiB through 4 MiB of DRAM and a directory tier, with the codec given on
// the command line, read back newest first and checked — bit for bit for a
// lossless codec, within the bound for ZFP's accuracy mode.
//
//   build/default/examples/mlbs_codec [CODEC] [DIR]     (default zstd:1, ./mlbs-codec-demo)
//   e.g. mlbs_codec zfp:accuracy=1e-4
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <mlbs/mlbs.hpp>

namespace {

constexpr std::size_t kPoints = 256 * 1024;  // 1 MiB of floats
constexpr std::uint64_t kSnapshots = 48;

/// A wave packet travelling through a quiet medium: zeros around it.
float wave(std::uint64_t t, std::size_t i) {
  const double d = (double(i) - double(t) * 4000.0) / 2000.0;
  return std::abs(d) < 4 ? float(std::sin(d * 6) * std::exp(-d * d)) : 0.0f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string codec = argc > 1 ? argv[1] : "zstd:1";
  const std::filesystem::path dir = argc > 2 ? argv[2] : "mlbs-codec-demo";
  std::filesystem::create_directories(dir);
  try {
    mlbs::Config cfg;
    cfg.tiers = {mlbs::Tier::memory(4 << 20), mlbs::Tier::directory(dir.string())};
    cfg.codec = codec;
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "wavefield", kPoints);
    for (std::uint64_t t = 0; t < kSnapshots; ++t) {
      for (std::size_t i = 0; i < kPoints; ++i) u[i] = wave(t, i);
      u.write(t);
    }
    double worst = 0;
    for (std::uint64_t t = kSnapshots; t-- > 0;) {
      u.read(t);
      for (std::size_t i = 0; i < kPoints; ++i) worst = std::max(worst, std::abs(double(u[i]) - wave(t, i)));
    }
    const mlbs::Stats s = rt.stats();
    std::printf("codec %s: %llu of %llu snapshots encoded, %.1f MiB -> %.1f MiB (ratio %.1f), %llu stored raw, "
                "%llu not encoded while the tier kept up (codec_when = %s)\n",
                rt.config().codec.c_str(), (unsigned long long)s.encoded_records, (unsigned long long)kSnapshots,
                s.encoded_raw_bytes / 1048576.0, s.encoded_bytes / 1048576.0,
                s.encoded_bytes ? double(s.encoded_raw_bytes) / double(s.encoded_bytes) : 1.0,
                (unsigned long long)(s.raw_records + s.bypassed_records), (unsigned long long)s.unneeded_records,
                mlbs::to_string(rt.config().codec_when).c_str());
    std::printf("slow tier: %.1f MiB written; encode %.1f ms, decode %.1f ms on the helpers\n",
                s.tiers[1].bytes_in / 1048576.0, s.encode_ns / 1e6, s.decode_ns / 1e6);
    std::printf("largest error after the round trip: %g%s\n", worst, worst == 0 ? " (bit-exact)" : "");
  } catch (const mlbs::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::filesystem::remove_all(dir);
  return 0;
}
