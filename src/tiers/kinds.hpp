// mlbs — what the configuration knows of each tier kind: its names, defaults,
// the per-tier keys it takes, where in the hierarchy it may stand, and its own
// checks. Spec strings, TOML tables and validate() ask these descriptors
// instead of naming kinds, so a new kind adds a descriptor in its own folder
// (tiers/<kind>/kind.cpp) and one line in kinds.cpp, not a change to the parser.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mlbs/config.hpp"

namespace mlbs::tiers {

struct TierKind {
  /// Where a tier of this kind may stand.
  enum class Place { first, below_first, last };
  /// Throws ConfigError for `tiers[i]<suffix>` (".queue_depth", ...).
  using Fail = std::function<void(const std::string& suffix, std::string message)>;

  std::string name;                    ///< Tier::kind and the backend's registered name
  std::vector<std::string> spellings;  ///< accepted in specs and TOML; the first is what specs write
  std::string noun;                    ///< for messages: "a directory tier"
  Place place = Place::below_first;
  bool has_path = false;               ///< a file-system tier: PATH in a spec, `path` in TOML
  std::vector<std::string> keys;       ///< per-tier keys it takes beyond kind, capacity, block, shared, water marks
  std::string unavailable;             ///< why this build cannot run it (empty: it can)
  /// As the last tier of a persistent runtime: a journal there names the
  /// durable records (false: the tier's objects are durable by themselves,
  /// and no journal, owner lock or recovery is kept for them).
  bool journaled = true;
  /// Named in messages that list the kinds (false: a kind only mlbs's own
  /// tools configure, which a user's spelling of it is refused by name).
  bool listed = true;
  std::function<Tier(std::string path, std::uint64_t capacity)> make;  ///< a tier with this kind's defaults
  std::function<void(const Tier&, const Config&, const Fail&)> check;  ///< checks of its own fields (may be empty)

  bool takes(std::string_view key) const;
};

/// Every kind this build knows (the MPI ones too, marked unavailable without MPI).
const std::vector<TierKind>& tier_kinds();
/// The kind a spelling ("dir") or name ("directory") stands for; null if none.
const TierKind* find_tier_kind(std::string_view spelling);
/// "memory, directory or mpiio" (names) or "mem, dir or mpiio" (short spellings), for messages.
std::string tier_kind_list(bool short_spellings);
/// The per-tier keys any kind takes (beyond the common ones), for "unknown key" messages.
std::vector<std::string> all_tier_keys();

// One descriptor per kind, each defined in its own folder.
TierKind memory_tier_kind();
TierKind directory_tier_kind();
TierKind mpiio_tier_kind();
TierKind files_tier_kind();

}  // namespace mlbs::tiers
