// mlbs — what a store's frames take on the file tiers, as a share of the
// records' size: the planner's estimate for a record its codec has not
// encoded yet (it is encoded on its way out of DRAM, after placement chose
// where it goes). A pure rule over a small state, kept per store.
//
// Each attempt's outcome (the frame kept, or the record stored raw) moves
// the share a quarter of the way (an exponential average): wavefields
// change as they propagate, and the estimate should follow them within a
// few records. Until the first attempt nothing is known and a record is
// planned at its size.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mlbs::codec {

struct StoredShare {
  double share = 1.0;  ///< stored / raw bytes, averaged over the store's recent attempts
  bool known = false;  ///< at least one attempt was made
};

/// The share after an attempt stored `stored` bytes (a frame, or the record
/// raw when the frame did not pay) for `raw`.
constexpr StoredShare observed(StoredShare s, std::uint64_t raw, std::uint64_t stored) noexcept {
  if (raw == 0) return s;
  const double x = std::min(1.0, static_cast<double>(stored) / static_cast<double>(raw));
  s.share = s.known ? s.share + (x - s.share) / 4 : x;
  s.known = true;
  return s;
}

/// The bytes to plan a record of `size` at: its size until a share is known,
/// else that share of it (at least one byte). A frame larger than planned
/// takes the difference when it is made (Engine::execute).
constexpr std::uint64_t planned_bytes(const StoredShare& s, std::uint64_t size) noexcept {
  if (!s.known || size == 0) return size;
  const auto n = static_cast<std::uint64_t>(s.share * static_cast<double>(size) + 0.5);
  return std::clamp<std::uint64_t>(n, 1, size);
}

}  // namespace mlbs::codec
