// mlbs stencil demo — the Reverse Time Migration pattern, out of core.
//
// A forward loop propagates a 3D acoustic wavefield (7-point stencil,
// leapfrog in time) and writes a snapshot every `--every` steps; a backward
// loop propagates a second wavefield and reads the snapshots back in reverse
// order (LIFO), accumulating the imaging condition image += u * v. The
// snapshots far exceed the DRAM tier, so mlbs writes them behind to the
// directory tiers and prefetches them back ahead of the backward loop.
//
// Written only against the public API (<mlbs/mlbs.hpp>). Every snapshot's
// checksum is kept at write time and compared after its read (exit 1 on a
// mismatch). Scratch mode: the runtime removes its files when it ends.
//
//   mlbs_stencil_demo [--grid N] [--steps S] [--every K] [--dir PATH]
//                     [--tiers SPEC] [--helper-threads N]
#include <mlbs/mlbs.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double ns_to_s(std::uint64_t ns) { return double(ns) * 1e-9; }

// --- command line ------------------------------------------------------------

struct Options {
  std::size_t grid = 128;
  unsigned steps = 240;
  unsigned every = 2;
  std::string dir = "./mlbs-demo";
  std::string tiers;               // empty: derived from --dir and the snapshot size
  // Two helpers let DRAM refill from the fast tier while the fast tier refills
  // from the slow one (the library's default is one).
  unsigned helper_threads = 2;
};

void usage(const char* argv0, std::FILE* out) {
  std::fprintf(out,
               "usage: %s [options]\n"
               "  --grid N            grid points per dimension (default 128: 8 MiB snapshots)\n"
               "  --steps S           time steps (default 240)\n"
               "  --every K           write a snapshot every K steps (default 2)\n"
               "  --dir PATH          where the default tiers live (default ./mlbs-demo):\n"
               "                      mem = 8 snapshots, PATH/fast = 24 snapshots, PATH/slow unlimited\n"
               "  --tiers SPEC        explicit tiers, e.g. mem:64MiB,dir:/nvme/x:192MiB,dir:/pfs/x\n"
               "  --helper-threads N  helper threads moving data (default 2)\n"
               "  --help\n",
               argv0);
}

unsigned long long parse_number(std::string_view name, const std::string& text, unsigned long long min,
                                unsigned long long max) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-' || v < min || v > max) {
    std::fprintf(stderr, "mlbs_stencil_demo: %.*s expects an integer in [%llu, %llu], got '%s'\n",
                 int(name.size()), name.data(), min, max, text.c_str());
    std::exit(2);
  }
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--help" || arg == "-h") {
      usage(argv[0], stdout);
      std::exit(0);
    }
    std::string value;
    bool have_value = false;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      have_value = true;
    }
    auto next = [&]() -> std::string {
      if (have_value) return value;
      if (a + 1 >= argc) {
        std::fprintf(stderr, "mlbs_stencil_demo: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--grid") o.grid = parse_number(arg, next(), 8, 2048);
    else if (arg == "--steps") o.steps = unsigned(parse_number(arg, next(), 0, 1u << 24));
    else if (arg == "--every") o.every = unsigned(parse_number(arg, next(), 1, 1u << 24));
    else if (arg == "--dir") o.dir = next();
    else if (arg == "--tiers") o.tiers = next();
    else if (arg == "--helper-threads") o.helper_threads = unsigned(parse_number(arg, next(), 1, 64));
    else {
      std::fprintf(stderr, "mlbs_stencil_demo: unknown argument '%s'\n", arg.c_str());
      usage(argv[0], stderr);
      std::exit(2);
    }
  }
  return o;
}

// --- the kernel: 3D acoustic wave, 7-point stencil, leapfrog -------------------

struct Grid {
  std::size_t n;
  std::size_t points() const { return n * n * n; }
  std::size_t at(std::size_t i, std::size_t j, std::size_t k) const { return i + n * (j + n * k); }
};

constexpr float kC2 = 0.15f;   // (c dt / h)^2, stable below 1/3

/// prev <- 2 cur - prev + c2 lap(cur), interior only (zero boundary).
void leapfrog(const Grid& g, const float* __restrict cur, float* __restrict prev) {
  const std::size_t n = g.n, sj = n, sk = n * n;
  for (std::size_t k = 1; k + 1 < n; ++k)
    for (std::size_t j = 1; j + 1 < n; ++j) {
      const std::size_t row = g.at(0, j, k);
      const float* c = cur + row;
      float* p = prev + row;
      for (std::size_t i = 1; i + 1 < n; ++i) {
        const float lap = c[i - 1] + c[i + 1] + c[i - sj] + c[i + sj] + c[i - sk] + c[i + sk] - 6.0f * c[i];
        p[i] = 2.0f * c[i] - p[i] + kC2 * lap;
      }
    }
}

/// Ricker wavelet, peak frequency f (cycles per step), delayed by 1/f.
float ricker(double t, double f = 0.04) {
  const double a = std::numbers::pi * f * (t - 1.0 / f);
  return float((1.0 - 2.0 * a * a) * std::exp(-a * a));
}

/// A leapfrogged wavefield: two buffers, the newest one alternates.
struct Wave {
  std::vector<float> a, b;
  bool newest_is_a = true;
  explicit Wave(std::size_t points) : a(points, 0.0f), b(points, 0.0f) {}
  const float* newest() const { return newest_is_a ? a.data() : b.data(); }
  float* newest() { return newest_is_a ? a.data() : b.data(); }
  void step(const Grid& g) {
    if (newest_is_a) leapfrog(g, a.data(), b.data());
    else leapfrog(g, b.data(), a.data());
    newest_is_a = !newest_is_a;
  }
};

// --- snapshot checksums (kept at write time, compared after each read) ---------

struct Checksum {
  std::uint64_t x = 0, sum = 0;
  bool operator==(const Checksum&) const = default;
};

Checksum checksum(const float* v, std::size_t n) {
  Checksum c;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    c.x ^= std::uint64_t(bits) * (2 * i + 1);   // position-dependent: catches swapped elements
    c.sum += bits;
  }
  return c;
}

// --- report --------------------------------------------------------------------

std::string rate(double bytes_per_s) {
  return bytes_per_s > 0 ? mlbs::format_bytes(std::uint64_t(bytes_per_s)) + "/s" : "-";
}

void print_tiers(const mlbs::Stats& st) {
  std::printf("\n%-4s %-9s %11s %11s %7s %8s %12s %23s %11s  %s\n", "tier", "kind", "bytes_in", "bytes_out",
              "ops", "busy_s", "bandwidth", "used/capacity", "peak", "path");
  for (std::size_t t = 0; t < st.tiers.size(); ++t) {
    const mlbs::TierStats& ts = st.tiers[t];
    const std::string cap = ts.capacity_bytes ? mlbs::format_bytes(ts.capacity_bytes) : "unlimited";
    const std::string used = mlbs::format_bytes(ts.used_bytes) + " / " + cap;
    std::printf("%-4zu %-9s %11s %11s %7llu %8.3f %12s %23s %11s  %s\n", t, ts.kind.c_str(),
                mlbs::format_bytes(ts.bytes_in).c_str(), mlbs::format_bytes(ts.bytes_out).c_str(),
                static_cast<unsigned long long>(ts.ops_in + ts.ops_out), ns_to_s(ts.busy_ns),
                rate(ts.bandwidth_bytes_per_s()).c_str(), used.c_str(),
                mlbs::format_bytes(ts.peak_used_bytes).c_str(), ts.path.c_str());
  }
}

int run(const Options& o) {
  const Grid g{o.grid};
  const std::size_t points = g.points();
  const std::uint64_t snap_bytes = std::uint64_t(points) * sizeof(float);
  const std::uint64_t snap_slot = (snap_bytes + 4095) / 4096 * 4096;   // block-rounded
  const unsigned snapshots = o.steps / o.every;

  mlbs::Config cfg;
  if (o.tiers.empty()) {
    const std::filesystem::path dir(o.dir);
    cfg.tiers = {mlbs::Tier::memory(8 * snap_slot),
                 mlbs::Tier::directory((dir / "fast").string(), 24 * snap_slot),
                 mlbs::Tier::directory((dir / "slow").string())};
  } else {
    cfg.tiers = mlbs::parse_tier_spec(o.tiers, "--tiers");
  }
  for (const mlbs::Tier& t : cfg.tiers)
    if (t.kind == "directory" && !t.path.empty()) std::filesystem::create_directories(t.path);
  cfg.schedule = mlbs::Schedule::lifo();
  cfg.durability = mlbs::Durability::scratch;
  cfg.helper_threads = o.helper_threads;

  const std::uint64_t dram = cfg.tiers.front().capacity_bytes;
  std::printf("mlbs %s stencil demo: grid %zu^3, snapshot %s, %u steps, %u snapshots (%s), helper threads %u\n",
              MLBS_VERSION_STRING, o.grid, mlbs::format_bytes(snap_bytes).c_str(), o.steps, snapshots,
              mlbs::format_bytes(snapshots * snap_bytes).c_str(), cfg.helper_threads);
  std::printf("tiers: %s", mlbs::format_tier_spec(cfg.tiers).c_str());
  if (dram) std::printf("  (data volume = %.1fx the DRAM tier)", double(snapshots * snap_bytes) / double(dram));
  std::printf("\n");

  const auto t_wall = Clock::now();
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wavefield", points);

  std::vector<Checksum> sums(snapshots + 1);
  double kernel_s = 0, verify_s = 0, write_s = 0, read_s = 0;

  // Forward: source at the centre; snapshot every `every` steps.
  {
    Wave w(points);
    const std::size_t src = g.at(g.n / 2, g.n / 2, g.n / 2);
    for (unsigned t = 1; t <= o.steps; ++t) {
      auto t0 = Clock::now();
      w.step(g);
      w.newest()[src] += ricker(t);
      const bool snap = t % o.every == 0;
      if (snap) std::memcpy(u.data(), w.newest(), snap_bytes);
      kernel_s += seconds_since(t0);
      if (!snap) continue;

      const std::uint64_t id = t / o.every;
      t0 = Clock::now();
      sums[id] = checksum(u.data(), points);
      verify_s += seconds_since(t0);

      t0 = Clock::now();
      u.write(id);
      write_s += seconds_since(t0);
    }
  }
  const double forward_s = seconds_since(t_wall);

  // Backward: a receiver wavefield, read the snapshots back in reverse order.
  std::vector<float> image(points, 0.0f);
  unsigned bad = 0;
  {
    Wave v(points);
    const std::size_t rcv = g.at(g.n / 2, g.n / 2, g.n / 4);
    for (unsigned t = o.steps; t >= 1; --t) {
      if (t % o.every == 0) {
        const std::uint64_t id = t / o.every;
        auto t0 = Clock::now();
        u.read(id);
        read_s += seconds_since(t0);

        t0 = Clock::now();
        const bool ok = u.size() == points && checksum(u.data(), points) == sums[id];
        verify_s += seconds_since(t0);
        if (!ok) {
          std::fprintf(stderr, "mlbs_stencil_demo: snapshot %llu read back wrong (size %zu, expected %zu)\n",
                       static_cast<unsigned long long>(id), u.size(), points);
          if (++bad >= 5) break;
          continue;
        }

        t0 = Clock::now();
        const float* uu = u.data();
        const float* vv = v.newest();
        float* img = image.data();
        for (std::size_t i = 0; i < points; ++i) img[i] += uu[i] * vv[i];
        kernel_s += seconds_since(t0);
      }
      const auto t0 = Clock::now();
      v.step(g);
      v.newest()[rcv] += ricker(double(o.steps - t + 1));
      kernel_s += seconds_since(t0);
    }
  }
  const double wall_s = seconds_since(t_wall);
  const double backward_s = wall_s - forward_s;
  const mlbs::Stats st = rt.stats();

  // Image checksum: sum and bit-exact hash (deterministic for a given grid/steps/every).
  double image_sum = 0, image_abs = 0;
  for (float x : image) {
    image_sum += x;
    image_abs += std::fabs(x);
  }
  const Checksum image_hash = checksum(image.data(), points);

  std::printf("\n%-30s %9.3f s  (forward %.3f s, backward %.3f s)\n", "wall", wall_s, forward_s, backward_s);
  std::printf("%-30s %9.3f s  (stencil, imaging, copy into the store)\n", "kernel", kernel_s);
  std::printf("%-30s %9.3f s\n", "snapshot checksums", verify_s);
  std::printf("%-30s %9.3f s  (%llu writes)\n", "write() total", write_s,
              static_cast<unsigned long long>(st.writes));
  std::printf("%-30s %9.3f s  (%llu stalls)\n", "  blocked waiting for a slot", ns_to_s(st.write_block_ns),
              static_cast<unsigned long long>(st.write_stalls));
  std::printf("%-30s %9.3f s\n", "  copying into slots", ns_to_s(st.copy_ns));
  std::printf("%-30s %9.3f s  (%llu reads, %llu by buffer swap)\n", "read() total", read_s,
              static_cast<unsigned long long>(st.reads), static_cast<unsigned long long>(st.buffer_swaps));
  std::printf("%-30s %9.3f s  (%llu stalls)\n", "  blocked waiting for data", ns_to_s(st.read_block_ns),
              static_cast<unsigned long long>(st.read_stalls));
  const double blocked_s = ns_to_s(st.write_block_ns + st.read_block_ns);
  std::printf("%-30s %9.1f %%  of wall\n", "I/O not hidden (blocking)", wall_s > 0 ? 100.0 * blocked_s / wall_s : 0.0);
  std::printf("engine: %llu writebacks, %llu prefetches, %llu demand fetches, %llu checksum failures, %llu live records\n",
              static_cast<unsigned long long>(st.writebacks), static_cast<unsigned long long>(st.prefetches),
              static_cast<unsigned long long>(st.demand_fetches),
              static_cast<unsigned long long>(st.checksum_failures),
              static_cast<unsigned long long>(st.live_records));
  print_tiers(st);

  std::printf("\nimage checksum: sum %.9e  |sum| %.9e  hash %016llx:%016llx\n", image_sum, image_abs,
              static_cast<unsigned long long>(image_hash.x), static_cast<unsigned long long>(image_hash.sum));
  if (bad) {
    std::printf("snapshots verified: FAILED (%u mismatches)\n", bad);
    return 1;
  }
  std::printf("snapshots verified: %u/%u OK\n", snapshots, snapshots);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs_stencil_demo: %s\n", e.what());
    return 1;
  }
}
