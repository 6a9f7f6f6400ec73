#include "tiers/kinds.hpp"

#include <algorithm>

namespace mlbs::tiers {

bool TierKind::takes(std::string_view key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

const std::vector<TierKind>& tier_kinds() {
  static const std::vector<TierKind> kinds = {memory_tier_kind(), directory_tier_kind(), mpiio_tier_kind(),
                                              files_tier_kind()};
  return kinds;
}

const TierKind* find_tier_kind(std::string_view spelling) {
  for (const TierKind& kind : tier_kinds())
    if (kind.name == spelling || std::find(kind.spellings.begin(), kind.spellings.end(), spelling) != kind.spellings.end())
      return &kind;
  return nullptr;
}

std::string tier_kind_list(bool short_spellings) {
  std::vector<const TierKind*> kinds;
  for (const TierKind& kind : tier_kinds())
    if (kind.listed) kinds.push_back(&kind);
  std::string out;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (i) out += i + 1 == kinds.size() ? " or " : ", ";
    out += short_spellings ? kinds[i]->spellings.front() : kinds[i]->name;
  }
  return out;
}

std::vector<std::string> all_tier_keys() {
  std::vector<std::string> keys;
  for (const TierKind& kind : tier_kinds())
    if (kind.listed)
      for (const std::string& key : kind.keys)
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  return keys;
}

}  // namespace mlbs::tiers
