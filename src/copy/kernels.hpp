// mlbs — the single-threaded copy kernels behind copy::bulk (internal).
#pragma once

#include <cstddef>

namespace mlbs::copy::kernels {

// Streaming-store copies: the destination is written with non-temporal
// stores in whole 64-byte lines (its unaligned head and tail with memcpy),
// then sfence'd. Any alignment of either pointer. Each one exists only where
// the CPU has it: callers check copy::available() first.
void stream_sse2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept;
void stream_avx2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept;
void stream_avx512(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept;

bool cpu_has_sse2() noexcept;
bool cpu_has_avx2() noexcept;
bool cpu_has_avx512f() noexcept;

}  // namespace mlbs::copy::kernels
