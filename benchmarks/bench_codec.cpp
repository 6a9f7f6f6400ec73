// What each codec does with the data mlbs moves (docs/codecs.md): ratio and
// throughput per core, encoding and decoding, in the frame the engine stores
// (chunks of 1 MiB, one thread: per core), on
//   wave-early  a 3-D acoustic wavefield soon after the shot: mostly zeros
//   wave-late   the same field later: smooth, filling the grid
//   random      incompressible bytes (what the adaptive bypass is for)
// The wavefields come from a 7-point, 2nd-order propagation of a Ricker
// source (as mlbs-bench's rtm workload), so they are what RTM snapshots are.
// Per codec and data: ratio = raw / stored, MB/s of raw bytes per core, and
// for ZFP the relative L2 error and max abs error. One JSON object per line.
//
//   mlbs_bench_codec [--n EDGE] [--codecs lz4,zstd:1,...] [--repeat R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "codec/frame.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace codec = mlbs::codec;

/// Snapshots of a wave from a point source in the middle of an n^3 grid.
struct Wave {
  std::size_t n;
  std::vector<float> prev, cur, next;
  explicit Wave(std::size_t edge) : n(edge), prev(n * n * n), cur(n * n * n), next(n * n * n) {}

  void step(int t) {
    const std::size_t nn = n * n;
    for (std::size_t z = 1; z + 1 < n; ++z)
      for (std::size_t y = 1; y + 1 < n; ++y)
        for (std::size_t x = 1; x + 1 < n; ++x) {
          const std::size_t i = z * nn + y * n + x;
          const float lap = cur[i - 1] + cur[i + 1] + cur[i - n] + cur[i + n] + cur[i - nn] + cur[i + nn] - 6 * cur[i];
          next[i] = 2 * cur[i] - prev[i] + 0.15f * lap;
        }
    const double a = std::numbers::pi * 0.04 * (t - 25.0);
    next[(n / 2) * nn + (n / 2) * n + n / 2] += float((1 - 2 * a * a) * std::exp(-a * a));
    std::swap(prev, cur);
    std::swap(cur, next);
  }
};

struct Data {
  std::string name;
  std::vector<std::byte> bytes;
  bool floats;
};

std::vector<Data> make_data(std::size_t edge) {
  Wave w(edge);
  std::vector<Data> out;
  auto snap = [&](const char* name) {
    std::vector<std::byte> b(w.cur.size() * sizeof(float));
    std::memcpy(b.data(), w.cur.data(), b.size());
    out.push_back({name, std::move(b), true});
  };
  int t = 0;
  for (; t < int(edge) / 3; ++t) w.step(t);
  snap("wave-early");
  for (; t < int(edge) * 2; ++t) w.step(t);
  snap("wave-late");
  std::mt19937_64 rng(7);
  std::vector<std::byte> r(out[0].bytes.size());
  for (std::size_t i = 0; i + 8 <= r.size(); i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(r.data() + i, &v, 8);
  }
  out.push_back({"random", std::move(r), false});
  return out;
}

double seconds_of(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t edge = 128;
  int repeat = 3;
  std::string list = "lz4,zstd:1,zstd:3,zfp:precision=16,zfp:precision=20,zfp:accuracy=1e-4,zfp:rate=8";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) edge = std::stoul(argv[++i]);
    else if (a == "--codecs" && i + 1 < argc) list = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::stoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--n EDGE] [--codecs SPEC,...] [--repeat R]\n", argv[0]);
      return 2;
    }
  }
  const auto data = make_data(edge);
  std::printf("%-24s %-11s %8s %12s %12s %12s\n", "codec", "data", "ratio", "encode MB/s", "decode MB/s",
              "rel L2 err");
  std::vector<std::string> specs;
  for (std::size_t pos = 0; pos <= list.size();) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    specs.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  for (const std::string& text : specs) {
    codec::Spec spec;
    try {
      spec = codec::parse(text);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: skipped (%s)\n", text.c_str(), e.what());
      continue;
    }
    for (const Data& d : data)
      for (const unsigned dims : {1u, 2u, 3u}) {
      // ZFP in each layout: flat (1-D), the grid's rows (2-D) and planes (3-D blocks).
      if (spec.name == "zfp" ? !d.floats : dims > 1) continue;
      const auto e = std::uint32_t(edge);
      const codec::Plane plane = dims == 3 ? codec::Plane{e, e} : dims == 2 ? codec::Plane{e, 0} : codec::Plane{};
      const auto element = d.floats ? codec::Element::float32 : codec::Element::any;
      const auto c = codec::make(spec, element, {}, plane);
      const std::size_t chunk = codec::chunk_bytes_for(element, plane);
      const std::string label = text + (dims > 1 ? " " + std::to_string(dims) + "-D" : "");
      std::vector<std::byte> frame(codec::frame_bound(*c, d.bytes.size(), chunk)), back(d.bytes.size());
      double enc = 1e30, dec = 1e30;
      std::size_t stored = 0;
      for (int r = 0; r < repeat; ++r) {
        auto t0 = Clock::now();
        stored = codec::encode_frame(*c, d.bytes, frame, 1, chunk);
        enc = std::min(enc, seconds_of(t0));
        t0 = Clock::now();
        codec::decode_frame(std::span(frame).first(stored), back, 1, {});
        dec = std::min(dec, seconds_of(t0));
      }
      double err = 0, norm = 0, worst = 0;
      if (d.floats) {
        const auto* a = reinterpret_cast<const float*>(d.bytes.data());
        const auto* b = reinterpret_cast<const float*>(back.data());
        for (std::size_t i = 0; i < d.bytes.size() / 4; ++i) {
          const double e = double(b[i]) - a[i];
          err += e * e;
          norm += double(a[i]) * a[i];
          worst = std::max(worst, std::abs(e));
        }
      } else if (back != d.bytes) {
        std::fprintf(stderr, "%s on %s: decoded bytes differ\n", label.c_str(), d.name.c_str());
        return 1;
      }
      const double rel = norm > 0 ? std::sqrt(err / norm) : 0;
      const double mb = double(d.bytes.size()) / 1e6;
      const double ratio = double(d.bytes.size()) / double(stored);
      std::printf("%-24s %-11s %8.2f %12.0f %12.0f %12.2e\n", label.c_str(), d.name.c_str(), ratio, mb / enc,
                  mb / dec, rel);
      std::fprintf(stderr,
                   "{\"codec\": \"%s\", \"data\": \"%s\", \"raw_bytes\": %zu, \"stored_bytes\": %zu, \"ratio\": %.4f, "
                   "\"encode_mb_s\": %.1f, \"decode_mb_s\": %.1f, \"rel_l2_error\": %.3e, \"max_abs_error\": %.3e}\n",
                   label.c_str(), d.name.c_str(), d.bytes.size(), stored, ratio, mb / enc, mb / dec, rel, worst);
    }
  }
  return 0;
}
