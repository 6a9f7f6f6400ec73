// The memory tier (tier 0, the DRAM slot pool): a capacity and water marks, nothing of a file tier's.
#include "tiers/kinds.hpp"

namespace mlbs::tiers {

TierKind memory_tier_kind() {
  TierKind kind;
  kind.name = "memory";
  kind.spellings = {"mem", "memory"};
  kind.noun = "the memory tier";
  kind.place = TierKind::Place::first;
  kind.make = [](std::string, std::uint64_t capacity) { return Tier::memory(capacity); };
  kind.check = [](const Tier& tier, const Config&, const TierKind::Fail& fail) {
    if (tier.capacity_bytes == 0) fail(".capacity", "the memory tier needs a capacity > 0 (it bounds memory use)");
  };
  return kind;
}

}  // namespace mlbs::tiers
