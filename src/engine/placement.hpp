// mlbs — Belady placement: given records ranked by next use (soonest first)
// and tier capacities, where each record should live. Pure and unit-tested;
// the engine then moves records towards this target.
#pragma once

#include <cstdint>
#include <vector>

namespace mlbs::engine {

struct PlacementItem {
  std::uint64_t bytes = 0;       ///< record size on file tiers
  std::uint64_t mem_bytes = 0;   ///< size of its DRAM slot (block-rounded)
  std::uint32_t avoid_mask = 0;  ///< tiers that failed for this record
  /// File tier already holding a copy, or -1. A record placed in DRAM keeps
  /// that copy rather than taking room in a faster file tier: it will be read
  /// from DRAM, so the faster tier's room is better spent on the records after it.
  int file_copy = -1;
};

struct Placement {
  std::vector<bool> in_memory;   ///< the record should be held in DRAM
  std::vector<int> dir_tier;     ///< file tier it should live in; -1 if none can hold it
};

/// DRAM is an inclusive cache filled with the soonest-used records that fit
/// `mem_capacity`; file tiers (indices 1..n-1 of `tier_capacity`, 0 = unlimited)
/// hold every record exclusively, soonest-used in the fastest tier with room.
/// A record larger than what is left of a tier skips it; so do avoided tiers.
/// A record placed in DRAM that already has a file copy stays in that tier.
Placement place(const std::vector<PlacementItem>& ranked, std::uint64_t mem_capacity,
                const std::vector<std::uint64_t>& tier_capacity);

}  // namespace mlbs::engine
