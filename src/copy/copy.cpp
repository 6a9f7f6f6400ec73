#include "copy/copy.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "copy/kernels.hpp"
#include "copy/team.hpp"

// The application's OpenMP runtime, if it has one (libgomp and LLVM's libomp
// both export these): weak, so the library needs no OpenMP of its own and
// these are null when the application does not use it.
extern "C" {
int omp_get_max_threads() __attribute__((weak));
int omp_in_parallel() __attribute__((weak));
}

namespace mlbs::copy {

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kMinChunkBytes = std::size_t{256} << 10;  // a claim is worth an atomic

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

/// The L3 one core shares, from sysfs. Preferred over sysconf: glibc reports
/// for AMD the whole socket's L3 (256 MiB on an EPYC whose cores each see a
/// 32 MiB L3 per CCX), and the threshold is about the cache a copy can fill.
std::size_t l3_from_sysfs() {
  for (int i = 0; i < 16; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    if (level == "3") return parse_cache_size(read_line(dir + "size"));
  }
  return 0;
}

std::size_t l3_from_sysconf() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (v > 0) return static_cast<std::size_t>(v);
#endif
  return 0;
}

std::string format_size(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

Settings load_settings() {
  Settings s;
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) s.affinity_cpus = std::max(1, CPU_COUNT(&cpus));
  if (kernels::cpu_has_avx512f())
    s.streaming = Path::avx512;
  else if (kernels::cpu_has_avx2())
    s.streaming = Path::avx2;
  else if (kernels::cpu_has_sse2())
    s.streaming = Path::sse2;

  if ((s.l3_bytes = l3_from_sysfs()))
    s.l3_source = "sysfs";
  else if ((s.l3_bytes = l3_from_sysconf()))
    s.l3_source = "sysconf";
  else {
    s.l3_bytes = kDefaultL3Bytes;
    s.l3_source = "default";
  }
  s.nt_threshold_bytes = nt_threshold_for_l3(s.l3_bytes);

  // A bad value is reported once and ignored: a tuning knob must not make
  // write() fail.
  if (const char* env = std::getenv("MLBS_COPY"); env && *env) {
    const auto p = parse_path(env);
    if (!p)
      s.warning = fmt::format("MLBS_COPY={} is not one of auto|memcpy|sse2|avx2|avx512, using auto", env);
    else if (!available(*p))
      s.warning = fmt::format("MLBS_COPY={} is not available on this CPU, using auto", env);
    else
      s.path = *p;
  }
  if (const char* env = std::getenv("MLBS_COPY_THREADS"); env && *env) {
    unsigned n = 0;
    const std::string_view v(env);
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || n == 0) {
      if (!s.warning.empty()) s.warning += "; ";
      s.warning += fmt::format("MLBS_COPY_THREADS={} is not a positive number, ignored", env);
    } else {
      s.threads_override = n;
    }
  }
  if (!s.warning.empty()) std::fprintf(stderr, "mlbs: %s\n", s.warning.c_str());
  return s;
}

bool in_parallel_region() noexcept { return omp_in_parallel && omp_in_parallel() != 0; }

}  // namespace

std::string_view name(Path path) noexcept {
  switch (path) {
    case Path::automatic: return "auto";
    case Path::memcpy: return "memcpy";
    case Path::sse2: return "sse2";
    case Path::avx2: return "avx2";
    case Path::avx512: return "avx512";
  }
  return "?";
}

std::optional<Path> parse_path(std::string_view text) noexcept {
  for (Path p : {Path::automatic, Path::memcpy, Path::sse2, Path::avx2, Path::avx512})
    if (text == name(p)) return p;
  return std::nullopt;
}

bool available(Path path) noexcept {
  switch (path) {
    case Path::automatic:
    case Path::memcpy: return true;
    case Path::sse2: return kernels::cpu_has_sse2();
    case Path::avx2: return kernels::cpu_has_avx2();
    case Path::avx512: return kernels::cpu_has_avx512f();
  }
  return false;
}

std::size_t nt_threshold_for_l3(std::size_t l3_bytes) noexcept {
  // A reported L3 under 1 MiB is not an L3 we can reason about.
  if (l3_bytes < (std::size_t{1} << 20)) l3_bytes = kDefaultL3Bytes;
  return l3_bytes / 2;
}

std::size_t parse_cache_size(std::string_view text) noexcept {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end == text.data()) return 0;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (unit.empty()) return n;
  if (unit == "K") return n << 10;
  if (unit == "M") return n << 20;
  if (unit == "G") return n << 30;
  return 0;
}

std::size_t chunk_bytes(std::size_t bytes, unsigned threads) noexcept {
  const std::size_t parts = std::size_t{4} * std::max(1u, threads);
  const std::size_t share = bytes / parts + (bytes % parts != 0);
  return std::max(kMinChunkBytes, (share + kPage - 1) / kPage * kPage);
}

const Settings& settings() {
  static const Settings s = load_settings();
  return s;
}

bool application_uses_openmp() noexcept { return omp_get_max_threads != nullptr; }

unsigned default_threads() noexcept {
  const Settings& s = settings();
  if (s.threads_override) return s.threads_override;
  // The application's team size: OMP_NUM_THREADS, omp_set_num_threads(),
  // its affinity mask. Its threads are idle while it calls write().
  if (omp_get_max_threads) return static_cast<unsigned>(std::max(1, omp_get_max_threads()));
  return s.affinity_cpus;
}

Decision decide(std::size_t bytes, Options options) noexcept {
  const Settings& s = settings();
  Path path = options.path;
  if (path != Path::automatic && !available(path)) path = Path::automatic;
  if (path == Path::automatic) path = bytes >= s.nt_threshold_bytes ? s.streaming : Path::memcpy;
  unsigned threads = options.max_threads ? options.max_threads : default_threads();
  // Inside the application's parallel region its threads are busy: never nest.
  if (in_parallel_region()) threads = 1;
  const std::size_t useful = std::max<std::size_t>(1, bytes / kMinBytesPerThread);
  threads = static_cast<unsigned>(std::clamp<std::size_t>(threads, 1, useful));
  return {path, threads};
}

void copy_with(Path path, void* dst, const void* src, std::size_t bytes) noexcept {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  switch (path) {
    case Path::sse2: return kernels::stream_sse2(d, s, bytes);
    case Path::avx2: return kernels::stream_avx2(d, s, bytes);
    case Path::avx512: return kernels::stream_avx512(d, s, bytes);
    case Path::automatic:
    case Path::memcpy: break;
  }
  if (bytes) std::memcpy(d, s, bytes);
}

Decision bulk(void* dst, const void* src, std::size_t bytes) noexcept {
  return bulk(dst, src, bytes, Options{settings().path, 0});
}

Decision bulk(void* dst, const void* src, std::size_t bytes, Options options) noexcept {
  Decision d = decide(bytes, options);
  d.threads = Team::instance().run(d.path, static_cast<std::byte*>(dst), static_cast<const std::byte*>(src),
                                   bytes, d.threads);
  return d;
}

Decision bulk_pieces(void* dst, const void* src, std::size_t bytes, std::size_t piece, PieceFn after,
                     void* ctx) noexcept {
  Decision d = decide(bytes, Options{settings().path, 0});
  struct Job {
    Path path;
    std::byte* dst;
    const std::byte* src;
    std::size_t bytes, piece;
    PieceFn after;
    void* ctx;
  } job{d.path, static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes, piece, after, ctx};
  const std::size_t pieces = (bytes + piece - 1) / piece;
  d.threads = Team::instance().run_tasks(
      pieces,
      [](void* c, std::size_t i) noexcept {
        const Job& j = *static_cast<const Job*>(c);
        const std::size_t off = i * j.piece, n = std::min(j.piece, j.bytes - off);
        copy_with(j.path, j.dst + off, j.src + off, n);
        // The source: what the copy just read is in this core's cache even
        // where streaming stores sent the destination past it.
        j.after(j.ctx, i, j.src + off, n);
      },
      &job, d.threads);
  return d;
}

std::string describe() {
  const Settings& s = settings();
  std::string out;
  if (s.path == Path::automatic) {
    if (s.streaming == Path::memcpy)
      out = "memcpy (no streaming stores on this CPU)";
    else
      out = fmt::format("{}-nt from {} (L3 {}, {}), memcpy below", name(s.streaming),
                        format_size(s.nt_threshold_bytes), format_size(s.l3_bytes), s.l3_source);
  } else {
    out = fmt::format("{}{} at every size (MLBS_COPY)", name(s.path), s.path == Path::memcpy ? "" : "-nt");
  }
  const unsigned n = default_threads();
  out += fmt::format("; {} thread{} ({})", n, n == 1 ? "" : "s",
                     s.threads_override          ? "MLBS_COPY_THREADS"
                     : application_uses_openmp() ? "the application's OpenMP"
                                                 : "affinity mask");
  if (!s.warning.empty()) out += "; " + s.warning;
  return out;
}

}  // namespace mlbs::copy
