#include "engine/policies/ranking.hpp"

namespace mlbs::engine::policies {

std::uint64_t next_use_rank(const catalog::Record& r, Schedule::Kind kind, std::span<const std::uint32_t> positions,
                            std::uint32_t reads_done) {
  constexpr std::uint64_t kLater = kNoNextUse;  // after everything the schedule names
  if (r.demand) return 0;
  switch (kind) {
    case Schedule::Kind::fifo:
      return r.consumed ? kLater + r.gen : 1 + r.gen;
    case Schedule::Kind::lifo:
      return r.consumed ? kLater + r.gen : kLater - r.gen;
    case Schedule::Kind::unknown:
      return kLater - r.last_use;  // least recently used = furthest
    case Schedule::Kind::explicit_order:
      if (reads_done < positions.size()) return 1 + positions[reads_done];
      return kLater + r.gen;
  }
  return kLater;
}

bool write_behind_active(bool was_active, std::uint64_t dirty_bytes, std::uint64_t capacity_bytes, double high,
                         double low) {
  if (capacity_bytes == 0) return high == 0.0 && dirty_bytes > 0;
  const double cap = static_cast<double>(capacity_bytes);
  const double dirty = static_cast<double>(dirty_bytes);
  if (dirty_bytes == 0 || dirty <= low * cap) return false;
  if (dirty > high * cap) return true;
  return was_active;
}

bool dirty_on(const catalog::Record& r, int t, int last, bool persistent) {
  if (!(r.copies & catalog::bit(t))) return false;
  return persistent ? !(r.copies & catalog::bit(last)) : (r.copies >> (t + 1)) == 0;
}

}  // namespace mlbs::engine::policies
