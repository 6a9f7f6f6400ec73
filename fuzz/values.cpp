// Fuzzes the small value parsers of the public configuration API with the
// same text: parse_size, parse_schedule, parse_layout, parse_io_backend,
// parse_helper_core (src/core/config/values.cpp). Contract checked: only
// ConfigError escapes, naming the field it was given; what parses is a fixed
// point of the trimming and of the printers: a size re-parses from its
// decimal form and, within rounding, from format_bytes; an explicit schedule
// from its ids joined by ','; a schedule kind, a layout and an I/O backend
// from their to_string; a helper core (auto -1, none -2 or a core >= 0)
// from its name or decimal form.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "config_checks.hpp"

namespace {

using namespace mlbs::fuzz;

/// Runs parse(text, field); the value, or nullopt after a ConfigError naming `field`.
template <class Parse>
auto parse_or_error(std::string_view what, std::string_view text, const std::string& field, Parse&& parse)
    -> std::optional<decltype(parse(text, field))> {
  std::optional<decltype(parse(text, field))> value;
  completes<mlbs::ConfigError>(what, [&] { value = parse(text, field); }, [&](const mlbs::ConfigError& e) {
    check_config_error(e);
    check(e.field() == field, "a value parser's error names another field");
  });
  return value;
}

void check_size(std::string_view text) {
  const auto parse = [](std::string_view t, const std::string& f) { return mlbs::parse_size(t, f); };
  const auto bytes = parse_or_error("parse_size", text, "size", parse);
  if (!bytes) return;
  check(mlbs::parse_size(" " + std::string(text) + "\t") == *bytes, "parse_size is not blind to surrounding space");
  check(mlbs::parse_size(std::to_string(*bytes)) == *bytes, "parse_size does not read back its decimal value");
  // format_bytes prints 2 decimals of the largest unit: it reads back within
  // 0.5% (below 2^63, away from the 2^64 limit that rounding up may cross).
  if (*bytes < (1ull << 63)) {
    const std::string human = mlbs::format_bytes(*bytes);
    const std::uint64_t back = mlbs::parse_size(human);
    const std::uint64_t error = back > *bytes ? back - *bytes : *bytes - back;
    check(error <= *bytes / 200 + 1, "format_bytes prints a size that parse_size reads as another");
  }
}

void check_schedule(std::string_view text) {
  const auto parse = [](std::string_view t, const std::string& f) { return mlbs::parse_schedule(t, f); };
  const auto schedule = parse_or_error("parse_schedule", text, "schedule", parse);
  if (!schedule) return;
  using Kind = mlbs::Schedule::Kind;
  if (schedule->kind != Kind::explicit_order) {
    check(schedule->order.empty(), "a named schedule carries ids");
    check(mlbs::parse_schedule(mlbs::to_string(schedule->kind)).kind == schedule->kind,
          "parse_schedule does not read back to_string of a schedule kind");
    return;
  }
  check(!schedule->order.empty(), "an explicit schedule without ids");
  std::string joined;
  for (const std::uint64_t id : schedule->order) joined += (joined.empty() ? "" : ",") + std::to_string(id);
  const mlbs::Schedule again = mlbs::parse_schedule(joined);
  check(again.kind == Kind::explicit_order && again.order == schedule->order,
        "parse_schedule does not read back the ids of an explicit schedule");
}

void check_helper_core(std::string_view text) {
  const auto parse = [](std::string_view t, const std::string& f) { return mlbs::parse_helper_core(t, f); };
  const auto core = parse_or_error("parse_helper_core", text, "helper_core", parse);
  if (!core) return;
  check(*core >= -2, "parse_helper_core accepts a core below none (-2)");
  check(mlbs::parse_helper_core(" " + std::string(text) + "\t") == *core,
        "parse_helper_core is not blind to surrounding space");
  const std::string printed = *core == -1 ? "auto" : *core == -2 ? "none" : std::to_string(*core);
  check(mlbs::parse_helper_core(printed) == *core, "parse_helper_core does not read back its value's name");
}

template <class Parse>
void check_enum(std::string_view what, std::string_view text, const std::string& field, Parse&& parse) {
  const auto value = parse_or_error(what, text, field, parse);
  if (value) check(parse(mlbs::to_string(*value), field) == *value, "an enum parser does not read back to_string");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  check_size(text);
  check_schedule(text);
  check_helper_core(text);
  check_enum("parse_layout", text, "layout",
             [](std::string_view t, const std::string& f) { return mlbs::parse_layout(t, f); });
  check_enum("parse_io_backend", text, "io_backend",
             [](std::string_view t, const std::string& f) { return mlbs::parse_io_backend(t, f); });
  return 0;
}
