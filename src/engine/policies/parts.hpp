// mlbs — how many parts a store keeps its records in when it chooses
// (StoreOptions::parts = kAutoParts, docs/parts.md). Pure; the store and
// the simulator (sim/sweep, mlbs-sim --recommend) both call it.
#pragma once

#include <cstdint>

namespace mlbs::engine::policies {

/// Records DRAM holds from which a store is kept whole: with four or more,
/// the tiers already copy one record while DRAM takes the next, and parts
/// would only add a copy out of their slots to every read.
inline constexpr std::uint64_t kWholeFromRecords = 4;
/// Parts DRAM should hold when it holds fewer records: with DRAM for two
/// records, four parts each (real runs, `mlbs_sim_check --machine pair
/// --store-parts 2|4`: revolve 1.139 s in 2 parts, 1.066 s in 4; the sweep's
/// two-slot points in the store's model, mean 1.122x whole, 1.079x in 2,
/// 1.067x in 4, 1.077x in 8, docs/parts.md).
inline constexpr std::uint64_t kPartsInDram = 8;

/// The part count for records of `record_bytes` under a DRAM budget of
/// `dram_bytes`: 1 (whole) when the size is unknown (0) or DRAM holds
/// kWholeFromRecords of them; else the least power of two for which DRAM
/// holds kPartsInDram parts, at most `max_parts`.
constexpr std::uint32_t auto_parts(std::uint64_t record_bytes, std::uint64_t dram_bytes, std::uint32_t max_parts) {
  if (record_bytes == 0 || dram_bytes / record_bytes >= kWholeFromRecords) return 1;
  std::uint32_t k = 1;
  while (k < max_parts && dram_bytes / ((record_bytes + k - 1) / k) < kPartsInDram) k *= 2;
  return k;
}

}  // namespace mlbs::engine::policies
