// mlbs fuzz targets: contract checks of the configuration parsers, shared by
// the TOML, tier-spec and environment targets.
#pragma once

#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::fuzz {

/// A ConfigError names a field and, when `source` is given, that source.
inline void check_config_error(const ConfigError& e, std::string_view source = {}) {
  check(!e.field().empty(), "a ConfigError names no field");
  check(!e.message().empty(), "a ConfigError has no message");
  if (!source.empty()) check(e.source() == source, "a ConfigError names another source");
}

/// A valid configuration stays valid: validate() on what a parser returned.
inline void check_validates(const Config& cfg, std::string_view what) {
  must_not_throw(std::string("validate() of what ") + std::string(what) + " accepted", [&] { cfg.validate(); });
}

/// format_tier_spec is the inverse of parse_tier_spec: parsing its text gives
/// the same tiers (in what a spec says: kind, path, capacity, I/O backend),
/// and formatting those gives the same text. It may refuse (ConfigError)
/// only when `may_refuse`: tiers that did not come from a spec.
inline void check_spec_round_trip(const std::vector<Tier>& tiers, bool may_refuse) {
  std::string spec;
  const bool formatted = completes<ConfigError>("format_tier_spec", [&] { spec = format_tier_spec(tiers); },
                                                [&](const ConfigError& e) {
                                                  check(may_refuse, "format_tier_spec refused tiers that "
                                                                    "parse_tier_spec returned");
                                                  check_config_error(e);
                                                });
  if (!formatted) return;
  std::vector<Tier> again;
  must_not_throw("parse_tier_spec(format_tier_spec(tiers))", [&] { again = parse_tier_spec(spec); });
  check(again.size() == tiers.size(), "a formatted tier spec parses to another number of tiers");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    check(again[i].kind == tiers[i].kind, "a tier spec round trip changes a kind");
    check(again[i].path == tiers[i].path, "a tier spec round trip changes a path");
    check(again[i].capacity_bytes == tiers[i].capacity_bytes, "a tier spec round trip changes a capacity");
    check(again[i].io_backend == tiers[i].io_backend, "a tier spec round trip changes an I/O backend");
  }
  check(format_tier_spec(again) == spec, "formatting a parsed tier spec again gives other text");
}

}  // namespace mlbs::fuzz
