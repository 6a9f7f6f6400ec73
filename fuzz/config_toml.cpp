// Fuzzes Config::from_toml (src/core/config.cpp, toml++). Contract checked:
// only ConfigError escapes, naming a field, the source and a line of the
// text; a configuration it returns passes validate(), and its tiers survive a
// tier-spec round trip (format_tier_spec may refuse a path with ',').
#include <algorithm>
#include <cstdint>

#include "config_checks.hpp"

namespace {
constexpr std::string_view kSource = "fuzz.toml";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlbs::fuzz;
  const std::string_view text = as_text(data, size);
  const auto lines = static_cast<std::uint32_t>(std::count(text.begin(), text.end(), '\n') + 1);
  mlbs::Config cfg;
  const bool parsed = completes<mlbs::ConfigError>(
      "Config::from_toml", [&] { cfg = mlbs::Config::from_toml(text, std::string(kSource)); },
      [&](const mlbs::ConfigError& e) {
        check_config_error(e, kSource);
        check(e.line() >= 1 && e.line() <= lines, "a ConfigError of from_toml names no line of the text");
      });
  if (!parsed) return 0;
  check_validates(cfg, "Config::from_toml");
  check_spec_round_trip(cfg.tiers, /*may_refuse=*/true);
  return 0;
}
