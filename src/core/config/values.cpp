// mlbs — configuration values: sizes with units, schedules, durability,
// I/O backends, layouts, switches, and their text forms.
#include "core/config/parse.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include <fmt/format.h>

namespace mlbs {

// Files of src/core/config/ share these helpers (parse.hpp).
using namespace configuration;

namespace {

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t TiB = 1ull << 40;

std::optional<std::uint64_t> unit_multiplier(std::string_view unit) {
  const std::string u = lower(unit);
  if (u.empty() || u == "b") return 1;
  if (u.size() > 3) return std::nullopt;
  std::uint64_t binary = 0;
  std::uint64_t decimal = 0;
  switch (u[0]) {
    case 'k': binary = KiB, decimal = 1'000ull; break;
    case 'm': binary = MiB, decimal = 1'000'000ull; break;
    case 'g': binary = GiB, decimal = 1'000'000'000ull; break;
    case 't': binary = TiB, decimal = 1'000'000'000'000ull; break;
    case 'p': binary = 1024 * TiB, decimal = 1'000'000'000'000'000ull; break;
    default: return std::nullopt;
  }
  const std::string_view rest = std::string_view(u).substr(1);
  if (rest.empty() || rest == "i" || rest == "ib") return binary;
  if (rest == "b") return decimal;
  return std::nullopt;
}

}  // namespace

namespace configuration {

std::string_view trim(std::string_view s) {
  constexpr std::string_view space = " \t\r\n";
  const auto first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto pos = s.find(sep);
    parts.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return parts;
    s.remove_prefix(pos + 1);
  }
}

/// DIGITS [ "." DIGITS ] [ spaces ] [ UNIT ], computed exactly in integers
/// (a double would lose bytes above 2^53). Returns an error text on failure.
std::optional<std::uint64_t> try_parse_size(std::string_view text, std::string& error) {
  constexpr std::string_view hint = "expected bytes or a number with a unit, e.g. 4096, 512MiB, 1.5GiB, 10MB";
  const std::string_view s = trim(text);
  if (s.empty()) {
    error = fmt::format("empty size ({})", hint);
    return std::nullopt;
  }
  if (s.front() == '-') {
    error = fmt::format("'{}' is negative", s);
    return std::nullopt;
  }
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t pos = 0;
  while (pos < s.size() && is_digit(s[pos])) ++pos;
  const std::string_view whole = s.substr(0, pos);
  std::string_view fraction;
  bool malformed = whole.empty();
  if (pos < s.size() && s[pos] == '.') {
    const std::size_t start = ++pos;
    while (pos < s.size() && is_digit(s[pos])) ++pos;
    fraction = s.substr(start, pos - start);
    malformed = malformed || fraction.empty();  // "1." and ".5" are typos, not sizes
  }
  const auto multiplier = unit_multiplier(trim(s.substr(pos)));
  if (malformed || !multiplier) {
    error = fmt::format("'{}' is not a size ({})", s, hint);
    return std::nullopt;
  }
  if (fraction.size() > 9) {
    error = fmt::format("'{}' has more than 9 decimals", s);
    return std::nullopt;
  }
  const auto overflow = [&] {
    error = fmt::format("'{}' exceeds the largest size (2^64-1 bytes)", s);
    return std::nullopt;
  };
  const auto integer = to_integer<std::uint64_t>(whole);
  if (!integer || *integer > std::numeric_limits<std::uint64_t>::max() / *multiplier) return overflow();
  std::uint64_t bytes = *integer * *multiplier;

  if (!fraction.empty()) {
    // frac/10^n of a unit, floored; split the multiplier so nothing overflows
    // (frac < 10^9, so each product stays below 2^64).
    const std::uint64_t frac = *to_integer<std::uint64_t>(fraction);
    if (*multiplier == 1 && frac != 0) {
      error = fmt::format("'{}' is not a whole number of bytes", s);
      return std::nullopt;
    }
    std::uint64_t scale = 1;
    for (std::size_t i = 0; i < fraction.size(); ++i) scale *= 10;
    const std::uint64_t part = frac * (*multiplier / scale) + frac * (*multiplier % scale) / scale;
    if (part > std::numeric_limits<std::uint64_t>::max() - bytes) return overflow();
    bytes += part;
  }
  return bytes;
}

std::uint64_t parse_size_at(std::string_view text, const Where& where) {
  std::string error;
  const auto bytes = try_parse_size(text, error);
  if (!bytes) where.fail(error);
  return *bytes;
}

/// Exact, shortest binary form: 2 GiB -> "2GiB", 1000 -> "1000".
std::string format_exact_size(std::uint64_t bytes) {
  static constexpr std::array<std::pair<std::uint64_t, std::string_view>, 4> units{
      {{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}};
  for (const auto& [unit, name] : units)
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, name);
  return std::to_string(bytes);
}

IoBackend parse_io_backend_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "auto") return IoBackend::automatic;
  if (s == "io_uring") return IoBackend::io_uring;
  if (s == "pread") return IoBackend::pread;
  where.fail(fmt::format("'{}' is not an I/O backend (expected auto, io_uring or pread)", s));
}

Layout parse_layout_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "file-per-record" || s == "file") return Layout::file_per_record;
  if (s == "log") return Layout::log;
  where.fail(fmt::format("'{}' is not a layout (expected file-per-record or log)", s));
}

Schedule parse_schedule_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "lifo") return Schedule::lifo();
  if (s.starts_with("lifo:")) {
    const auto n = to_integer<std::uint64_t>(trim(s.substr(5)));
    if (!n || *n == 0)
      where.fail(fmt::format("'{}': expected lifo:N with N the number of records a store will hold (N >= 1)", s));
    return Schedule::lifo(*n);
  }
  if (s == "fifo") return Schedule::fifo();
  if (s.starts_with("fifo:")) {
    const auto n = to_integer<std::uint64_t>(trim(s.substr(5)));
    if (!n || *n == 0)
      where.fail(fmt::format("'{}': expected fifo:N with N the number of records a store will hold (N >= 1)", s));
    return Schedule::fifo(*n);
  }
  if (s == "unknown") return Schedule::unknown();
  if (s.empty())
    where.fail("empty schedule (expected fifo, fifo:N, lifo, lifo:N, unknown or a list of ids like 3,1,2)");
  std::vector<std::uint64_t> ids;
  for (const std::string_view part : split(s, ',')) {
    const auto id = to_integer<std::uint64_t>(trim(part));
    if (!id)
      where.fail(fmt::format(
          "'{}' is not a schedule (expected fifo, fifo:N, lifo, lifo:N, unknown or a list of ids like 3,1,2)", s));
    ids.push_back(*id);
  }
  return Schedule::explicit_order(std::move(ids));
}

Durability parse_durability_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "scratch") return Durability::scratch;
  if (s == "persistent") return Durability::persistent;
  where.fail(fmt::format("'{}' is not a durability (expected scratch or persistent)", s));
}

int parse_helper_core_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "auto") return -1;
  if (s == "none") return -2;
  const auto core = to_integer<int>(s);
  if (!core || *core < -2) where.fail(fmt::format("'{}' is not a core (expected auto, none or a core number >= 0)", s));
  return *core;
}

bool parse_switch_at(std::string_view text, const Where& where) {
  const std::string s = lower(trim(text));
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  where.fail(fmt::format("'{}' is not a switch (expected 1/0, true/false, on/off, yes/no)", text));
}

}  // namespace configuration

std::uint64_t parse_size(std::string_view text, const std::string& field) {
  return parse_size_at(text, Where{field});
}

Schedule parse_schedule(std::string_view text, const std::string& field) {
  return parse_schedule_at(text, Where{field});
}

int parse_helper_core(std::string_view text, const std::string& field) {
  return parse_helper_core_at(text, Where{field});
}

std::string to_string(Schedule::Kind kind) {
  switch (kind) {
    case Schedule::Kind::fifo: return "fifo";
    case Schedule::Kind::lifo: return "lifo";
    case Schedule::Kind::explicit_order: return "explicit";
    case Schedule::Kind::unknown: return "unknown";
  }
  return "invalid";
}

std::string to_string(Durability d) {
  switch (d) {
    case Durability::scratch: return "scratch";
    case Durability::persistent: return "persistent";
  }
  return "invalid";
}

std::string to_string(IoBackend b) {
  switch (b) {
    case IoBackend::automatic: return "auto";
    case IoBackend::io_uring: return "io_uring";
    case IoBackend::pread: return "pread";
  }
  return "invalid";
}

IoBackend parse_io_backend(std::string_view text, const std::string& field) {
  return parse_io_backend_at(text, Where{field});
}

std::string to_string(Layout layout) {
  switch (layout) {
    case Layout::file_per_record: return "file-per-record";
    case Layout::log: return "log";
  }
  return "invalid";
}

Layout parse_layout(std::string_view text, const std::string& field) {
  return parse_layout_at(text, Where{field});
}

ReaderRetention configuration::parse_reader_retention_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "none") return ReaderRetention::none;
  if (s == "until-read" || s == "until_read") return ReaderRetention::until_read;
  where.fail(fmt::format("'{}' is not a reader retention (expected none or until-read)", s));
}

std::string to_string(ReaderRetention r) {
  switch (r) {
    case ReaderRetention::none: return "none";
    case ReaderRetention::until_read: return "until-read";
  }
  return "invalid";
}

ReaderRetention parse_reader_retention(std::string_view text, const std::string& field) {
  return parse_reader_retention_at(text, Where{field});
}

CodecWhen configuration::parse_codec_when_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "needed") return CodecWhen::needed;
  if (s == "always") return CodecWhen::always;
  where.fail(fmt::format("'{}' is not a codec_when (expected needed or always)", s));
}

std::string to_string(CodecWhen w) {
  switch (w) {
    case CodecWhen::needed: return "needed";
    case CodecWhen::always: return "always";
  }
  return "invalid";
}

CodecWhen parse_codec_when(std::string_view text, const std::string& field) {
  return parse_codec_when_at(text, Where{field});
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024.0 && unit + 1 < units.size()) {
    value /= 1024.0;
    ++unit;
  }
  std::string number = fmt::format("{:.2f}", value);
  number.erase(number.find_last_not_of('0') + 1);  // "1.50" -> "1.5", "2.00" -> "2."
  if (number.back() == '.') number.pop_back();
  return fmt::format("{} {}", number, units[unit]);
}

}  // namespace mlbs
