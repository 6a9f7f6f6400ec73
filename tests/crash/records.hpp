// mlbs_crash: the bytes of every record version, a pure function of (id, salt),
// so the parent can check any recovered byte without having seen the child's
// buffers, and two versions of one id never share their bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mlbs::crash {

/// splitmix64's finaliser: a cheap bijective mix with good avalanche.
constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t key(std::uint64_t id, std::uint64_t salt) { return mix(mix(id) ^ salt); }

/// The largest record: the memory tier must hold it (Config in options.cpp).
constexpr std::size_t kMaxRecordBytes = 4u << 20;

/// The size of version (id, salt). Covers 0, tiny, exact and off-by-one
/// multiples of 4096 (O_DIRECT padding), and records large enough that a kill
/// often lands in the middle of their transfer.
constexpr std::size_t record_size(std::uint64_t id, std::uint64_t salt) {
  const std::uint64_t h = mix(key(id, salt) ^ 0x5157ull);
  const std::uint64_t r = h >> 8;
  switch (h % 16) {
    case 0: return 0;
    case 1: return 1 + r % 64;
    case 2: return 4095;
    case 3: return 4096;
    case 4: return 4097;
    case 5: return (r & 1) ? 4096 * (1 + r % 64) + 1 : 4096 * (1 + r % 64) - 1;
    case 12: case 13: case 14: return 1 + r % (1u << 20);
    case 15: return (1u << 20) + r % (kMaxRecordBytes - (1u << 20));
    default: return 1 + r % (256u << 10);
  }
}

/// Fills `out` (record_size(id, salt) bytes) with version (id, salt).
inline void fill_record(std::uint64_t id, std::uint64_t salt, std::byte* out, std::size_t n) {
  const std::uint64_t k = key(id, salt);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t w = mix(k + i);
    std::memcpy(out + i, &w, 8);
  }
  if (i < n) {
    const std::uint64_t w = mix(k + i);
    std::memcpy(out + i, &w, n - i);
  }
}

/// Offset of the first byte of `data` (n bytes) that differs from version
/// (id, salt); n when they are equal. A size mismatch is the caller's check.
inline std::size_t first_difference(std::uint64_t id, std::uint64_t salt, const std::byte* data,
                                    std::size_t n) {
  std::vector<std::byte> want(n);
  fill_record(id, salt, want.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    if (want[i] != data[i]) return i;
  return n;
}

}  // namespace mlbs::crash
