// mlbs — bulk copies between an application buffer and a DRAM slot at memory
// bandwidth: shared with worker threads sized like the application's OpenMP
// team, streaming (non-temporal) stores when the copy would not fit in the
// last-level cache. See docs/fast-copy.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mlbs::copy {

/// How the bytes are stored. `automatic` picks `memcpy` below the
/// non-temporal threshold and the best streaming kernel of this CPU above it;
/// every other value forces that kernel at every size (tests, benchmarks).
enum class Path { automatic, memcpy, sse2, avx2, avx512 };

/// "auto", "memcpy", "sse2", "avx2", "avx512".
std::string_view name(Path path) noexcept;
/// The inverse of name(); nullopt for anything else (the MLBS_COPY values).
std::optional<Path> parse_path(std::string_view text) noexcept;
/// Whether this CPU (and build) can run `path`. automatic and memcpy always.
bool available(Path path) noexcept;

struct Options {
  Path path = Path::automatic;
  unsigned max_threads = 0;  ///< 0: default_threads()
};

/// What a copy did (or would do): the kernel and how many threads ran it
/// (bulk() reports those that took part: invited workers that had not
/// started when the caller ran out of chunks do not count).
struct Decision {
  Path path = Path::memcpy;
  unsigned threads = 1;
};

/// Copies `bytes` from `src` to `dst` (no overlap, any alignment; the fast
/// path wants `dst` 64-byte aligned, as slot extents are). Large copies are
/// shared with worker threads (as many as the application's OpenMP threads,
/// else its CPUs); called from inside the application's OpenMP parallel
/// region it copies on the calling thread only (never nests). The path comes
/// from MLBS_COPY (default auto).
Decision bulk(void* dst, const void* src, std::size_t bytes) noexcept;
/// The same with an explicit path and thread cap (MLBS_COPY is not read).
Decision bulk(void* dst, const void* src, std::size_t bytes, Options options) noexcept;

/// Called by bulk_pieces() on the thread that copied piece `index` (`n` bytes
/// from `src`), right after it copied it. Must not throw.
using PieceFn = void (*)(void* ctx, std::size_t index, const std::byte* src, std::size_t n) noexcept;
/// Copies as bulk() does (MLBS_COPY's path, the same threads), but in whole
/// pieces of `piece` bytes (the last may be short), each followed by
/// `after`: what has to read every byte (a checksum) reads it while the
/// core that copied it still holds it in cache, shared by the same threads.
/// `piece` should be a multiple of the page and fit the L2.
Decision bulk_pieces(void* dst, const void* src, std::size_t bytes, std::size_t piece, PieceFn after,
                     void* ctx) noexcept;

/// The decision bulk() makes for `bytes`, without copying. An unavailable
/// forced path falls back to automatic.
Decision decide(std::size_t bytes, Options options) noexcept;

/// One thread, one kernel, no threshold: `path` must be available and not
/// automatic. Streaming kernels end with an sfence.
void copy_with(Path path, void* dst, const void* src, std::size_t bytes) noexcept;

/// What the process-wide settings resolved to, read once on first use.
struct Settings {
  Path path = Path::automatic;    ///< MLBS_COPY (automatic when unset or invalid)
  Path streaming = Path::memcpy;  ///< best streaming kernel here: avx512 > avx2 > sse2
  std::size_t l3_bytes = 0;
  std::string l3_source;          ///< "sysfs", "sysconf" or "default"
  std::size_t nt_threshold_bytes = 0;
  unsigned threads_override = 0;  ///< MLBS_COPY_THREADS; 0 = none
  unsigned affinity_cpus = 1;     ///< CPUs this process may run on
  std::string warning;            ///< a bad MLBS_COPY / MLBS_COPY_THREADS, else empty
};
const Settings& settings();

/// Threads a large copy uses: MLBS_COPY_THREADS, else the application's
/// omp_get_max_threads() when it runs OpenMP, else the CPUs of its affinity
/// mask.
unsigned default_threads() noexcept;
/// Whether the application's OpenMP runtime is loaded (found at run time:
/// the library itself does not link OpenMP).
bool application_uses_openmp() noexcept;

/// e.g. "avx2-nt from 16 MiB (L3 32 MiB, sysfs), memcpy below; 2 threads (the
/// application's OpenMP)".
std::string describe();

// --- the pieces, exposed for tests --------------------------------------------

/// L3 size used when neither sysfs nor sysconf knows it.
inline constexpr std::size_t kDefaultL3Bytes = std::size_t{32} << 20;
/// Below this many bytes per thread, another thread costs more than it brings.
inline constexpr std::size_t kMinBytesPerThread = std::size_t{1} << 20;

/// Streaming stores from half the L3 up: there the copy's footprint (source
/// plus destination) fills the cache, so temporal stores only evict the
/// application's data and pay a read-for-ownership per line for nothing.
/// 0 (unknown) or implausibly small sizes give the default's threshold.
std::size_t nt_threshold_for_l3(std::size_t l3_bytes) noexcept;
/// "32768K", "8M", "1048576" (sysfs cache size syntax) in bytes; 0 if not one.
std::size_t parse_cache_size(std::string_view text) noexcept;
/// The size of the chunks a copy of `bytes` is cut into for `threads`
/// threads: about four per thread, so a slow thread holds up at most a
/// quarter of its share; whole pages, so threads never share a line.
std::size_t chunk_bytes(std::size_t bytes, unsigned threads) noexcept;

}  // namespace mlbs::copy
