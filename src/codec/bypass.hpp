// mlbs — adaptive bypass: a store whose records do not compress stops paying
// for the attempt. A pure rule over a small state, kept per store.
//
// A record "pays" when its frame is at most kWorthIt of its raw size (the
// codec saved at least 1/16). Each record that does not pay is stored raw
// and doubles the number of records then stored raw without trying (1, 2, 4
// ... up to kMaxSkip); one that pays resets it. Incompressible data then
// costs one attempt in kMaxSkip + 1 records once the pattern is set, and data
// that turns compressible (an RTM wavefield leaving its zeros behind) is
// noticed within kMaxSkip records.
#pragma once

#include <cstdint>

namespace mlbs::codec {

inline constexpr double kWorthIt = 15.0 / 16.0;
inline constexpr std::uint32_t kMaxSkip = 32;

struct Bypass {
  std::uint32_t skip = 0;       ///< records still to store raw without trying
  std::uint32_t streak = 0;     ///< attempts in a row that did not pay
};

/// Whether the next record should be encoded.
constexpr bool should_try(const Bypass& b) noexcept { return b.skip == 0; }

/// Whether a frame of `stored` bytes is worth keeping for `raw` bytes.
constexpr bool pays(std::uint64_t raw, std::uint64_t stored) noexcept {
  return static_cast<double>(stored) <= kWorthIt * static_cast<double>(raw);
}

/// Whether a frame that saved `raw - stored` bytes was worth the `codec_ns`
/// its encoding took, at `bytes_per_s`, the slowest file tier's rate (0:
/// unknown: by size alone). The frame crosses that tier down and back up and
/// is decoded once, so both sides count twice and the factor cancels. A codec
/// slower than the bytes it saves would take at that rate only steals CPU.
constexpr bool saves_time(std::uint64_t raw, std::uint64_t stored, std::uint64_t codec_ns,
                          double bytes_per_s) noexcept {
  if (stored >= raw) return false;
  return bytes_per_s <= 0 || static_cast<double>(raw - stored) / bytes_per_s * 1e9 >= static_cast<double>(codec_ns);
}

/// The state after a record was stored raw without trying.
constexpr Bypass skipped(Bypass b) noexcept {
  if (b.skip > 0) --b.skip;
  return b;
}

/// The state after an attempt that gave `stored` bytes for `raw`.
constexpr Bypass tried(Bypass b, std::uint64_t raw, std::uint64_t stored) noexcept {
  if (pays(raw, stored)) return {};
  b.streak = b.streak < 31 ? b.streak + 1 : b.streak;
  const std::uint32_t n = std::uint32_t{1} << (b.streak - 1);
  b.skip = n < kMaxSkip ? n : kMaxSkip;
  return b;
}

}  // namespace mlbs::codec
