#include "engine/placement.hpp"

#include <limits>

namespace mlbs::engine {

Placement place(const std::vector<PlacementItem>& ranked, std::uint64_t mem_capacity,
                const std::vector<std::uint64_t>& tier_capacity) {
  constexpr auto kUnlimited = std::numeric_limits<std::uint64_t>::max();
  Placement p;
  p.in_memory.assign(ranked.size(), false);
  p.dir_tier.assign(ranked.size(), -1);

  std::uint64_t mem_left = mem_capacity;
  std::vector<std::uint64_t> left(tier_capacity.size());
  for (std::size_t t = 1; t < tier_capacity.size(); ++t)
    left[t] = tier_capacity[t] == 0 ? kUnlimited : tier_capacity[t];

  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PlacementItem& it = ranked[i];
    if (it.mem_bytes <= mem_left && !(it.avoid_mask & 1u)) {
      p.in_memory[i] = true;
      mem_left -= it.mem_bytes;
      // Keep the file copy where it is, if that tier still has room for it.
      if (it.file_copy > 0 && static_cast<std::size_t>(it.file_copy) < left.size() &&
          !((it.avoid_mask >> it.file_copy) & 1u) && it.bytes <= left[it.file_copy]) {
        if (left[it.file_copy] != kUnlimited) left[it.file_copy] -= it.bytes;
        p.dir_tier[i] = it.file_copy;
        continue;
      }
    }
    for (std::size_t t = 1; t < left.size(); ++t) {
      if ((it.avoid_mask >> t) & 1u) continue;
      if (it.bytes <= left[t]) {
        if (left[t] != kUnlimited) left[t] -= it.bytes;
        p.dir_tier[i] = static_cast<int>(t);
        break;
      }
    }
  }
  return p;
}

}  // namespace mlbs::engine
