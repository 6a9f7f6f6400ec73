// Fuzzes parse_tier_spec, the parser of MLBS_TIERS and of TOML's `tiers =
// "..."` (src/core/config/tier_spec.cpp). Contract checked: only ConfigError
// escapes, naming the field it was given; the tiers it returns are of a
// registered kind (tiers/kinds.hpp), with a path exactly when that kind is a
// file system's; format_tier_spec writes them without refusing, and that
// text parses back to the same tiers and formats to itself.
#include <cstdint>

#include "config_checks.hpp"
#include "tiers/kinds.hpp"

namespace {
const std::string kField = "MLBS_TIERS";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlbs::fuzz;
  std::vector<mlbs::Tier> tiers;
  const bool parsed = completes<mlbs::ConfigError>(
      "parse_tier_spec", [&] { tiers = mlbs::parse_tier_spec(as_text(data, size), kField); },
      [&](const mlbs::ConfigError& e) {
        check_config_error(e);
        check(e.field().starts_with(kField), "a tier spec error names another field");
      });
  if (!parsed) return 0;
  check(!tiers.empty(), "parse_tier_spec accepted a spec without tiers");
  for (const mlbs::Tier& tier : tiers) {
    const mlbs::tiers::TierKind* kind = mlbs::tiers::find_tier_kind(tier.kind);
    check(kind != nullptr && kind->name == tier.kind, "parse_tier_spec made an unknown kind");
    check(kind->has_path ? !tier.path.empty() : tier.path.empty(),
          "parse_tier_spec made a tier without the path its kind takes, or with one it does not");
  }
  check_spec_round_trip(tiers, /*may_refuse=*/false);
  // Whether the list is a valid configuration is validate()'s to say, with a ConfigError.
  mlbs::Config cfg;
  cfg.tiers = tiers;
  completes<mlbs::ConfigError>("validate() of parsed tiers", [&] { cfg.validate(); }, [](const auto& e) {
    check_config_error(e);
  });
  return 0;
}
