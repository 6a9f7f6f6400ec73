// mlbs — configuration files (TOML): every key with its line, for errors
// that point at it.
#include "codec/spec.hpp"
#include "core/config/parse.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "tiers/kinds.hpp"

namespace mlbs {

// Files of src/core/config/ share these helpers (parse.hpp).
using namespace configuration;

namespace {

namespace fs = std::filesystem;
std::string_view type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

/// Reads one TOML document into a Config, noting where every field was set.
class TomlReader {
 public:
  explicit TomlReader(std::string source) : source_(std::move(source)) {}

  Config read(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, std::string_view(source_));
    } catch (const toml::parse_error& err) {
      throw ConfigError("syntax", std::string(err.description()), source_, err.source().begin.line);
    }

    Config cfg;
    const toml::node* spec = nullptr;
    const toml::node* tables = nullptr;
    for (auto&& [key, node] : root) {
      const std::string name(key.str());
      const Where at = note(name, node);
      if (name == "schedule") {
        cfg.schedule = read_schedule(node, at);
      } else if (name == "durability") {
        cfg.durability = parse_durability_at(string(node, at), at);
      } else if (name == "helper_core") {
        cfg.helper_core = node.is_integer() ? integer<int>(node, at, -1) : parse_helper_core_at(string(node, at), at);
      } else if (name == "helper_threads") {
        cfg.helper_threads = integer<unsigned>(node, at, 1, Config::max_helper_threads);
      } else if (name == "checksums") {
        cfg.checksums = boolean(node, at);
      } else if (name == "layout") {
        cfg.layout = parse_layout_at(string(node, at), at);
      } else if (name == "io_chunk") {
        cfg.io_chunk_bytes = size(node, at);
      } else if (name == "shutdown_timeout_ms") {
        cfg.shutdown_timeout_ms = integer<unsigned>(node, at, 0);
      } else if (name == "page_cache") {
        cfg.page_cache = boolean(node, at);
      } else if (name == "live_catalog") {
        cfg.live_catalog = boolean(node, at);
      } else if (name == "live_records") {
        cfg.live_records = integer<unsigned>(node, at, 1, Config::max_live_records);
      } else if (name == "reader_retention") {
        cfg.reader_retention = parse_reader_retention_at(string(node, at), at);
      } else if (name == "codec") {
        cfg.codec = codec::to_string(codec::parse(string(node, at), at.field, at.source, at.line));
      } else if (name == "copy_ahead") {
        cfg.copy_ahead = boolean(node, at);
      } else if (name == "codec_when") {
        cfg.codec_when = parse_codec_when_at(string(node, at), at);
      } else if (name == "tiers") {
        spec = &node;
        cfg.tiers = parse_tier_spec_at(string(node, at), at);
      } else if (name == "tier") {
        tables = &node;
        origins_.note("tiers", Where{"tiers", source_, at.line});  // validate() names the list "tiers"
        cfg.tiers = read_tier_tables(node, at);
      } else {
        Where{name, source_, key.source().begin.line}.fail(
            "unknown key (expected schedule, durability, helper_core, helper_threads, checksums, layout, "
            "io_chunk, shutdown_timeout_ms, page_cache, live_catalog, live_records, reader_retention, codec, codec_when, copy_ahead, tiers or "
            "[[tier]])");
      }
    }
    if (spec && tables)
      Where{"tiers", source_, std::max(line(*spec), line(*tables))}.fail(
          "both 'tiers' and [[tier]] are given; use one of them");
    return cfg;
  }

  const Origins& origins() const { return origins_; }

 private:
  static std::uint32_t line(const toml::node& node) { return node.source().begin.line; }

  Where note(const std::string& field, const toml::node& node) {
    Where at{field, source_, line(node)};
    origins_.note(field, at);
    return at;
  }

  [[noreturn]] static void wrong_type(const toml::node& node, const Where& at, std::string_view expected) {
    at.fail(fmt::format("expected {}, got {}", expected, type_name(node.type())));
  }

  static std::string string(const toml::node& node, const Where& at) {
    if (const auto* s = node.as_string()) return s->get();
    wrong_type(node, at, "a string");
  }

  static bool boolean(const toml::node& node, const Where& at) {
    if (const auto* b = node.as_boolean()) return b->get();
    wrong_type(node, at, "true or false");
  }

  /// An integer of at least `min` that Int can hold; the message names the
  /// field's own range [min, max]. Values Int holds beyond `max` are left to
  /// validate(), so an environment override can still correct them.
  template <typename Int>
  static Int integer(const toml::node& node, const Where& at, std::int64_t min,
                     std::uint64_t max = std::numeric_limits<Int>::max()) {
    const auto* i = node.as_integer();
    if (!i) wrong_type(node, at, "an integer");
    const std::int64_t v = i->get();
    if (v < min || std::cmp_greater(v, std::numeric_limits<Int>::max()))
      at.fail(fmt::format("{} is out of range ({} to {})", v, min, max));
    return static_cast<Int>(v);
  }

  static double fraction(const toml::node& node, const Where& at) {
    if (const auto* f = node.as_floating_point()) return f->get();
    if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
    wrong_type(node, at, "a number between 0 and 1");
  }

  /// A string with a unit or an integer byte count.
  static std::uint64_t size(const toml::node& node, const Where& at) {
    if (const auto* s = node.as_string()) return parse_size_at(s->get(), at);
    if (const auto* i = node.as_integer()) {
      if (i->get() < 0) at.fail(fmt::format("size {} must not be negative", i->get()));
      return static_cast<std::uint64_t>(i->get());
    }
    wrong_type(node, at, "a size (a string like \"64GiB\" or an integer byte count)");
  }

  Schedule read_schedule(const toml::node& node, const Where& at) {
    if (const auto* s = node.as_string()) return parse_schedule_at(s->get(), at);
    const auto* array = node.as_array();
    if (!array) wrong_type(node, at, "\"fifo\", \"lifo\", \"unknown\" or an array of ids");
    std::vector<std::uint64_t> ids;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& id = (*array)[i];
      ids.push_back(integer<std::uint64_t>(id, note(fmt::format("schedule[{}]", i), id), 0));
    }
    return Schedule::explicit_order(std::move(ids));
  }

  std::vector<Tier> read_tier_tables(const toml::node& node, const Where& at) {
    const auto* array = node.as_array();
    if (!array) wrong_type(node, at, "an array of tables ([[tier]])");
    std::vector<Tier> tiers;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = (*array)[i];
      const std::string name = fmt::format("tiers[{}]", i);
      const Where table_at = note(name, element);
      const auto* table = element.as_table();
      if (!table) wrong_type(element, table_at, "a table ([[tier]])");
      tiers.push_back(read_tier(*table, name, table_at));
    }
    return tiers;
  }

  Tier read_tier(const toml::table& table, const std::string& name, const Where& table_at) {
    // The kind decides the defaults, so read it before the other keys.
    const toml::node* kind_node = table.get("kind");
    if (!kind_node) table_at.sub(".kind").fail(fmt::format("missing (expected kind = {})", tiers::tier_kind_list(false)));
    const Where kind_at = note(name + ".kind", *kind_node);
    const std::string spelling = string(*kind_node, kind_at);
    const tiers::TierKind* kind = tiers::find_tier_kind(spelling);
    if (!kind)
      kind_at.fail(fmt::format("unknown tier kind '{}' (expected {})", spelling, tiers::tier_kind_list(false)));
    // validate() says whether this build can run the kind (mpiio needs MPI).
    Tier tier = kind->make({}, 0);
    // Keys some kind takes: another kind refuses them by name, not as unknown.
    const auto kind_keys = tiers::all_tier_keys();

    for (auto&& [key, node] : table) {
      const std::string field(key.str());
      const Where at = note(name + "." + field, node);
      if (field == "kind") continue;
      if (std::find(kind_keys.begin(), kind_keys.end(), field) != kind_keys.end() && !kind->takes(field))
        at.fail(fmt::format("{} takes no {}", kind->noun, field));
      if (field == "capacity") {
        tier.capacity_bytes = size(node, at);
      } else if (field == "path") {
        tier.path = string(node, at);
      } else if (field == "bandwidth") {
        tier.bandwidth_bytes_per_s = size(node, at);
      } else if (field == "block") {
        tier.block_bytes = size(node, at);
      } else if (field == "shared") {
        tier.shared = boolean(node, at);
      } else if (field == "high_water") {
        tier.high_water = fraction(node, at);
      } else if (field == "low_water") {
        tier.low_water = fraction(node, at);
      } else if (field == "page_cache") {
        tier.page_cache = boolean(node, at);
      } else if (field == "faults") {
        tier.faults = string(node, at);
      } else if (field == "layout") {
        tier.layout = parse_layout_at(string(node, at), at);
      } else if (field == "io_backend") {
        tier.io_backend = parse_io_backend_at(string(node, at), at);
      } else if (field == "queue_depth") {
        tier.queue_depth = integer<unsigned>(node, at, 1, Tier::max_queue_depth);
      } else if (field == "io_request") {
        tier.io_request_bytes = size(node, at);
      } else {
        Where{at.field, source_, key.source().begin.line}.fail(fmt::format(
            "unknown key (expected kind, capacity, block, shared, high_water, low_water, {})", fmt::join(kind_keys, ", ")));
      }
    }
    return tier;
  }

  std::string source_;
  Origins origins_;
};

Loaded load_toml(std::string_view text, const std::string& source) {
  TomlReader reader(source);
  Config cfg = reader.read(text);
  return {std::move(cfg), reader.origins()};
}

}  // namespace

namespace configuration {

Loaded load_file(const std::string& path, const std::string& field) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError(field, "cannot read: is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(field, fmt::format("cannot open ({})", std::strerror(errno)), path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(field, "cannot read", path);
  return load_toml(text.str(), path);
}

}  // namespace configuration

Config Config::from_toml(std::string_view text, const std::string& source) {
  Loaded loaded = load_toml(text, source);
  validate_with(loaded.config, loaded.origins, source);
  return std::move(loaded.config);
}

Config Config::from_file(const std::string& path) {
  Loaded loaded = load_file(path, "config file");
  validate_with(loaded.config, loaded.origins, path);
  return std::move(loaded.config);
}

}  // namespace mlbs
