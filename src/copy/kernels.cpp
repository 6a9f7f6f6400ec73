// The kernels are compiled with per-function target attributes, so the
// library itself stays built for the baseline ISA and picks at run time.
#include "copy/kernels.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLBS_COPY_X86 1
#else
#define MLBS_COPY_X86 0
#endif

namespace mlbs::copy::kernels {

namespace {

constexpr std::size_t kLine = 64;
// Below this a streaming copy is all head and tail: memcpy does it better.
constexpr std::size_t kMinStreamBytes = 4 * kLine;

/// The part of a copy that streaming stores write: whole destination lines.
struct Body {
  std::byte* dst;
  const std::byte* src;
  std::size_t lines;  ///< 64-byte lines, `dst` aligned to 64
  std::size_t tail;   ///< bytes after them, copied with memcpy
};

/// Copies the head up to dst's next line boundary (all of it when the copy is
/// small) and says what is left. Head and tail never share a line with the
/// body, so no line is written partly by streaming stores.
[[maybe_unused]] Body split_body(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  if (bytes < kMinStreamBytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return {dst + bytes, src + bytes, 0, 0};
  }
  const std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(dst) & (kLine - 1))) & (kLine - 1);
  if (head) std::memcpy(dst, src, head);
  bytes -= head;
  return {dst + head, src + head, bytes / kLine, bytes % kLine};
}

[[maybe_unused]] void copy_tail(const Body& b) noexcept {
  if (b.tail) std::memcpy(b.dst + b.lines * kLine, b.src + b.lines * kLine, b.tail);
}

}  // namespace

#if MLBS_COPY_X86

bool cpu_has_sse2() noexcept { return __builtin_cpu_supports("sse2"); }
// __builtin_cpu_supports also checks that the OS saves the wider registers.
bool cpu_has_avx2() noexcept { return __builtin_cpu_supports("avx2"); }
bool cpu_has_avx512f() noexcept { return __builtin_cpu_supports("avx512f"); }

__attribute__((target("sse2"))) void stream_sse2(std::byte* dst, const std::byte* src,
                                                 std::size_t bytes) noexcept {
  const Body b = split_body(dst, src, bytes);
  for (std::size_t i = 0; i < b.lines; ++i) {
    const auto* s = reinterpret_cast<const __m128i*>(b.src + i * kLine);
    auto* d = reinterpret_cast<__m128i*>(b.dst + i * kLine);
    const __m128i x0 = _mm_loadu_si128(s + 0);
    const __m128i x1 = _mm_loadu_si128(s + 1);
    const __m128i x2 = _mm_loadu_si128(s + 2);
    const __m128i x3 = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d + 0, x0);
    _mm_stream_si128(d + 1, x1);
    _mm_stream_si128(d + 2, x2);
    _mm_stream_si128(d + 3, x3);
  }
  _mm_sfence();  // streaming stores are weakly ordered: publish them before returning
  copy_tail(b);
}

__attribute__((target("avx2"))) void stream_avx2(std::byte* dst, const std::byte* src,
                                                 std::size_t bytes) noexcept {
  const Body b = split_body(dst, src, bytes);
  for (std::size_t i = 0; i < b.lines; ++i) {
    const auto* s = reinterpret_cast<const __m256i*>(b.src + i * kLine);
    auto* d = reinterpret_cast<__m256i*>(b.dst + i * kLine);
    const __m256i y0 = _mm256_loadu_si256(s + 0);
    const __m256i y1 = _mm256_loadu_si256(s + 1);
    _mm256_stream_si256(d + 0, y0);
    _mm256_stream_si256(d + 1, y1);
  }
  _mm_sfence();
  copy_tail(b);
}

__attribute__((target("avx512f"))) void stream_avx512(std::byte* dst, const std::byte* src,
                                                      std::size_t bytes) noexcept {
  const Body b = split_body(dst, src, bytes);
  for (std::size_t i = 0; i < b.lines; ++i) {
    const __m512i z = _mm512_loadu_si512(b.src + i * kLine);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(b.dst + i * kLine), z);
  }
  _mm_sfence();
  copy_tail(b);
}

#else  // not x86: no streaming kernels; copy::available() says so.

bool cpu_has_sse2() noexcept { return false; }
bool cpu_has_avx2() noexcept { return false; }
bool cpu_has_avx512f() noexcept { return false; }
void stream_sse2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  if (bytes) std::memcpy(dst, src, bytes);
}
void stream_avx2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  if (bytes) std::memcpy(dst, src, bytes);
}
void stream_avx512(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  if (bytes) std::memcpy(dst, src, bytes);
}

#endif

}  // namespace mlbs::copy::kernels
