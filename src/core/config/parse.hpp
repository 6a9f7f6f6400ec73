// mlbs — what the configuration's parts share (src/core/config/): where a
// value came from (for errors naming field, source and line), text helpers,
// and the value parsers each front end (spec strings, TOML, environment)
// calls. Internal to the library.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::configuration {

/// Where a value came from, so that an error can name field, source and line.
struct Where {
  std::string field = {};
  std::string source = {};
  std::uint32_t line = 0;

  [[noreturn]] void fail(std::string message) const {
    throw ConfigError(field, std::move(message), source, line);
  }
  /// A part of this value (".path", "[2]") from the same place.
  Where sub(std::string_view suffix) const { return {field + std::string(suffix), source, line}; }
};

/// Field -> where it was set. validate() works on the plain struct and names
/// struct-level fields ("tiers[1].path"); this map lets callers that parsed a
/// file or the environment point such errors back at the line or variable.
class Origins {
 public:
  void note(const std::string& field, Where where) { map_.insert_or_assign(field, std::move(where)); }

  /// `field` and everything below it is now set by `where` (an override).
  void replace(const std::string& field, Where where) {
    std::erase_if(map_, [&](const auto& entry) {
      const std::string& key = entry.first;
      return key.starts_with(field) &&
             (key.size() == field.size() || key[field.size()] == '.' || key[field.size()] == '[');
    });
    note(field, std::move(where));
  }

  /// The most specific recorded origin of `field` ("tiers[1].path", else
  /// "tiers[1]", else "tiers"), with the field renamed as that origin names it.
  Where resolve(const std::string& field, const std::string& fallback_source) const {
    std::string key = field;
    for (;;) {
      if (auto it = map_.find(key); it != map_.end()) {
        const Where& origin = it->second;
        return {origin.field + field.substr(key.size()), origin.source, origin.line};
      }
      const auto cut = key.find_last_of(".[");
      if (cut == std::string::npos || cut == 0) break;
      key.resize(cut);
    }
    return {field, fallback_source, 0};
  }

 private:
  std::map<std::string, Where> map_;
};

// --- text -------------------------------------------------------------------

std::string_view trim(std::string_view s);
std::string lower(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);

/// Whole-string integer conversion; nullopt on garbage or overflow.
template <typename Int>
std::optional<Int> to_integer(std::string_view s) {
  Int value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// --- values (values.cpp) ----------------------------------------------------

/// DIGITS [ "." DIGITS ] [ spaces ] [ UNIT ], exactly; nullopt with `error` set on failure.
std::optional<std::uint64_t> try_parse_size(std::string_view text, std::string& error);
std::uint64_t parse_size_at(std::string_view text, const Where& where);
/// Exact, shortest binary form: 2 GiB -> "2GiB", 1000 -> "1000".
std::string format_exact_size(std::uint64_t bytes);
IoBackend parse_io_backend_at(std::string_view text, const Where& where);
Layout parse_layout_at(std::string_view text, const Where& where);
ReaderRetention parse_reader_retention_at(std::string_view text, const Where& where);
CodecWhen parse_codec_when_at(std::string_view text, const Where& where);
Schedule parse_schedule_at(std::string_view text, const Where& where);
Durability parse_durability_at(std::string_view text, const Where& where);
int parse_helper_core_at(std::string_view text, const Where& where);
/// 1/0, true/false, on/off, yes/no.
bool parse_switch_at(std::string_view text, const Where& where);

// --- tier specs (tier_spec.cpp) ----------------------------------------------

std::vector<Tier> parse_tier_spec_at(std::string_view spec, const Where& where);

// --- validation (validate.cpp) -----------------------------------------------

/// Config::validate() with errors pointed back at where each field was set.
void validate_with(const Config& cfg, const Origins& origins, const std::string& source);

// --- files (toml.cpp) ----------------------------------------------------------

struct Loaded {
  Config config;
  Origins origins;
};
/// A TOML file read into a Config (not validated yet); `field` names it in errors.
Loaded load_file(const std::string& path, const std::string& field);

}  // namespace mlbs::configuration
