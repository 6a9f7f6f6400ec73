// mlbs — configuration parsing and validation (DESIGN §2, §4;
// docs/configuration.md is the user-facing reference).
#include "mlbs/config.hpp"
#include "tiers/registry.hpp"
#include "tiers/wrappers/faults.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "mlbs/errors.hpp"
#include "mlbs/features.hpp"

namespace mlbs {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Error context

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

// ---------------------------------------------------------------------------
// Small text helpers

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

/// Whole-string integer conversion; nullopt on garbage or overflow.
template <typename Int>
std::optional<Int> to_integer(std::string_view s) {
  Int value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// ---------------------------------------------------------------------------
// Sizes

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

// ---------------------------------------------------------------------------
// Tier specs, schedules, enums

bool is_memory_kind(std::string_view kind) { return kind == "mem" || kind == "memory"; }
bool is_directory_kind(std::string_view kind) { return kind == "dir" || kind == "directory"; }
bool is_mpiio_kind(std::string_view kind) { return kind == "mpiio"; }

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

std::vector<Tier> parse_tier_spec_at(std::string_view spec, const Where& where) {
  if (trim(spec).empty()) where.fail("empty tier spec (expected e.g. mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run)");
  std::vector<Tier> tiers;
  const auto entries = split(spec, ',');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Where at = where.sub(fmt::format("[{}]", i));
    const std::string_view entry = trim(entries[i]);
    const auto colon = entry.find(':');
    std::string_view kind = trim(entry.substr(0, colon));
    // "dir+io_uring:PATH": the kind may name the tier's I/O backend.
    std::optional<IoBackend> io;
    if (const auto plus = kind.find('+'); plus != std::string_view::npos) {
      if (!is_directory_kind(trim(kind.substr(0, plus))))
        at.fail(fmt::format("'{}': only directory tiers take an I/O backend (dir+io_uring, dir+pread)", entry));
      io = parse_io_backend_at(kind.substr(plus + 1), at.sub(".io_backend"));
      kind = trim(kind.substr(0, plus));
    }
    const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : trim(entry.substr(colon + 1));
    if (entry.empty()) at.fail("empty tier entry (stray ',')");
    if (is_memory_kind(kind)) {
      if (rest.empty()) at.fail(fmt::format("'{}': a memory tier needs a size, e.g. mem:2GiB", entry));
      tiers.push_back(Tier::memory(parse_size_at(rest, at)));
    } else if (is_directory_kind(kind) || is_mpiio_kind(kind)) {
      // dir:PATH[:SIZE] (mpiio:PATH[:SIZE] alike): the last part is a size
      // only if it parses as one, so paths may contain ':'.
      std::string_view path = rest;
      std::uint64_t capacity = 0;
      // A last part that starts with a digit is meant as a quota: one that
      // does not parse ("1PB", "64GiBs") is a typo to report, not a folder
      // to create without a quota.
      if (const auto last = rest.rfind(':'); last != std::string_view::npos) {
        const std::string_view tail = trim(rest.substr(last + 1));
        std::string error;
        if (const auto size = try_parse_size(tail, error)) {
          capacity = *size;
          path = trim(rest.substr(0, last));
        } else if (!tail.empty() && tail.front() >= '0' && tail.front() <= '9') {
          at.fail(fmt::format("'{}': the quota {} (a path whose last part starts with a digit must end in "
                              "':<quota>', e.g. dir:/data/run:2024:64GiB)",
                              entry, error));
        }
      }
      if (path.empty() && is_mpiio_kind(kind))
        at.fail(fmt::format("'{}': an mpiio tier needs a path, e.g. mpiio:/lustre/run", entry));
      if (path.empty()) at.fail(fmt::format("'{}': a directory tier needs a path, e.g. dir:/nvme/run:64GiB", entry));
      tiers.push_back(is_mpiio_kind(kind) ? Tier::mpiio(std::string(path), capacity)
                                          : Tier::directory(std::string(path), capacity));
      if (io) tiers.back().io_backend = *io;
    } else {
      at.fail(fmt::format("unknown tier kind '{}' in '{}' (expected mem, dir or mpiio)", kind, entry));
    }
  }
  return tiers;
}

Schedule parse_schedule_at(std::string_view text, const Where& where) {
  const std::string_view s = trim(text);
  if (s == "lifo") return Schedule::lifo();
  if (s == "fifo") return Schedule::fifo();
  if (s == "unknown") return Schedule::unknown();
  if (s.empty()) where.fail("empty schedule (expected fifo, lifo, unknown or a list of ids like 3,1,2)");
  std::vector<std::uint64_t> ids;
  for (const std::string_view part : split(s, ',')) {
    const auto id = to_integer<std::uint64_t>(trim(part));
    if (!id)
      where.fail(fmt::format("'{}' is not a schedule (expected fifo, lifo, unknown or a list of ids like 3,1,2)", s));
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

// ---------------------------------------------------------------------------
// Validation

void validate_with(const Config& cfg, const Origins& origins, const std::string& source) {
  const auto fail = [&](const std::string& field, std::string message) {
    origins.resolve(field, source).fail(std::move(message));
  };

  if (cfg.tiers.size() < 2)
    fail("tiers", fmt::format("needs at least 2 tiers (memory first, persistent last), got {}", cfg.tiers.size()));

  std::map<fs::path, std::size_t> directories;  // normalised path -> tier index
  for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
    const Tier& tier = cfg.tiers[i];
    const std::string name = fmt::format("tiers[{}]", i);
    if (i == 0) {
      if (tier.kind != "memory")
        fail(name + ".kind", fmt::format("the first tier must be the memory tier, got '{}'", tier.kind));
      if (tier.capacity_bytes == 0)
        fail(name + ".capacity", "the memory tier needs a capacity > 0 (it bounds memory use)");
      if (tier.bandwidth_bytes_per_s != 0)
        fail(name + ".bandwidth", "bandwidth caps apply to file tiers, not to the memory tier");
      if (tier.page_cache)
        fail(name + ".page_cache", "the page cache concerns file tiers, not the memory tier");
      if (tier.io_backend != IoBackend::automatic)
        fail(name + ".io_backend", "the I/O backend concerns file tiers, not the memory tier");
      if (tier.layout)
        fail(name + ".layout", "the layout concerns file tiers, not the memory tier");
      if (!tier.faults.empty())
        fail(name + ".faults", "fault injection applies to file tiers, not the memory tier");
    } else if (tier.kind == "memory") {
      fail(name + ".kind", "only the first tier may be a memory tier");
    } else if (tier.kind == "mpiio" && !MLBS_HAVE_MPI) {
      fail(name + ".kind", "mlbs was built without MPI: the mpiio tier needs it (configure with MLBS_ENABLE_MPI=ON "
                           "and an MPI installed)");
    } else if (tier.kind == "mpiio" && i + 1 != cfg.tiers.size()) {
      // Every transfer to it is a collective round of all ranks: it is the
      // slow, shared end of the hierarchy, never a cache in front of another.
      fail(name + ".kind", fmt::format("an mpiio tier must be the last tier (it is tier {} of {})", i,
                                       cfg.tiers.size()));
    } else if (const auto kinds = tiers::registered_kinds();
               std::find(kinds.begin(), kinds.end(), tier.kind) == kinds.end()) {
      // Backends register by name; the file tiers built in are "directory".
      fail(name + ".kind", fmt::format("unknown tier kind '{}' (expected directory{})", tier.kind,
                                       MLBS_HAVE_MPI ? " or mpiio" : ""));
    } else {
      if (tier.path.empty()) fail(name + ".path", fmt::format("a{} tier needs a path", tier.kind == "mpiio" ? "n mpiio" : " directory"));
      if (tier.kind == "mpiio" && tier.io_backend != IoBackend::automatic)
        fail(name + ".io_backend", "an mpiio tier moves bytes with MPI-IO: it takes no io_backend");
      if (tier.kind == "mpiio" && tier.layout)
        fail(name + ".layout", "an mpiio tier has one shared file: it takes no layout");
      // Lexical only: validate() must not touch the file system.
      std::error_code ec;
      fs::path normal = fs::absolute(tier.path, ec);
      if (ec) normal = tier.path;
      normal = normal.lexically_normal();
      if (!normal.has_filename() && normal.has_parent_path() && normal != normal.root_path())
        normal = normal.parent_path();  // "/a/b/" and "/a/b" are the same directory
      if (const auto [it, fresh] = directories.try_emplace(normal, i); !fresh)
        fail(name + ".path", fmt::format("'{}' is the same directory as tiers[{}] ('{}')", tier.path, it->second,
                                         cfg.tiers[it->second].path));
      if (tier.queue_depth < 1 || tier.queue_depth > Tier::max_queue_depth)
        fail(name + ".queue_depth", fmt::format("{} is not between 1 and {}", tier.queue_depth, Tier::max_queue_depth));
      if (tier.io_request_bytes < 4096 || tier.io_request_bytes % 4096 != 0 || tier.io_request_bytes > (1ull << 30))
        fail(name + ".io_request",
             fmt::format("{} is not a multiple of 4096 bytes between 4 KiB and 1 GiB", tier.io_request_bytes));
      if (const std::string why = tiers::fault_plan_error(tier.faults); !why.empty())
        fail(name + ".faults", why);
      // O_DIRECT bypasses the page cache: asking for both is a contradiction.
      if (tier.io_backend == IoBackend::io_uring && (tier.page_cache || cfg.page_cache))
        fail(name + ".io_backend",
             fmt::format("io_uring uses O_DIRECT, which bypasses the page cache that {}page_cache = true asks "
                         "for; use io_backend = \"pread\" or \"auto\"",
                         tier.page_cache ? name + "." : std::string()));
    }
    if (!(tier.high_water >= 0.0 && tier.high_water <= 1.0))
      fail(name + ".high_water", fmt::format("{} is not a fraction between 0 and 1", tier.high_water));
    if (!(tier.low_water >= 0.0 && tier.low_water <= tier.high_water))
      fail(name + ".low_water",
           fmt::format("{} must lie between 0 and high_water ({})", tier.low_water, tier.high_water));
    if (tier.block_bytes < 512 || !std::has_single_bit(tier.block_bytes))
      fail(name + ".block", fmt::format("{} is not a power of two >= 512", tier.block_bytes));
  }

  if (cfg.helper_threads < 1 || cfg.helper_threads > Config::max_helper_threads)
    fail("helper_threads", fmt::format("{} is not between 1 and {}", cfg.helper_threads, Config::max_helper_threads));
  if (cfg.helper_core < -2)
    fail("helper_core", fmt::format("{} is not a core (expected -1 for auto, -2 for none, or >= 0)", cfg.helper_core));
  if (cfg.io_chunk_bytes < 4096 || cfg.io_chunk_bytes % 4096 != 0 || cfg.io_chunk_bytes > (1ull << 30))
    fail("io_chunk",
         fmt::format("{} is not a multiple of 4096 bytes between 4 KiB and 1 GiB (one staging buffer per helper)",
                     cfg.io_chunk_bytes));
}

// ---------------------------------------------------------------------------
// TOML

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
            "io_chunk, shutdown_timeout_ms, page_cache, tiers or [[tier]])");
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
    if (!kind_node) table_at.sub(".kind").fail("missing (expected kind = \"memory\", \"directory\" or \"mpiio\")");
    const Where kind_at = note(name + ".kind", *kind_node);
    const std::string kind = string(*kind_node, kind_at);
    Tier tier;
    if (is_memory_kind(kind))
      tier = Tier::memory(0);
    else if (is_directory_kind(kind))
      tier = Tier::directory("");
    else if (is_mpiio_kind(kind))
      tier = Tier::mpiio("");  // validate() says whether this build has MPI
    else
      kind_at.fail(fmt::format("unknown tier kind '{}' (expected memory, directory or mpiio)", kind));

    for (auto&& [key, node] : table) {
      const std::string field(key.str());
      const Where at = note(name + "." + field, node);
      if (field == "kind") continue;
      if (field == "capacity") {
        tier.capacity_bytes = size(node, at);
      } else if (field == "path") {
        if (tier.kind == "memory") at.fail("a memory tier has no path");
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
        if (tier.kind == "memory") at.fail("a memory tier has no faults (file tiers only)");
        tier.faults = string(node, at);
      } else if (field == "io_backend" || field == "queue_depth" || field == "io_request" || field == "layout") {
        if (tier.kind == "memory") at.fail(fmt::format("a memory tier has no {} (file tiers only)", field));
        if (field == "layout")
          tier.layout = parse_layout_at(string(node, at), at);
        else if (field == "io_backend")
          tier.io_backend = parse_io_backend_at(string(node, at), at);
        else if (field == "queue_depth")
          tier.queue_depth = integer<unsigned>(node, at, 1, Tier::max_queue_depth);
        else
          tier.io_request_bytes = size(node, at);
      } else {
        Where{at.field, source_, key.source().begin.line}.fail(
            "unknown key (expected kind, capacity, path, bandwidth, block, shared, high_water, low_water, "
            "page_cache, io_backend, queue_depth, io_request, layout or faults)");
      }
    }
    return tier;
  }

  std::string source_;
  Origins origins_;
};

struct Loaded {
  Config config;
  Origins origins;
};

Loaded load_toml(std::string_view text, const std::string& source) {
  TomlReader reader(source);
  Config cfg = reader.read(text);
  return {std::move(cfg), reader.origins()};
}

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

/// The value of an environment variable, or nullopt when unset or empty.
std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

bool parse_switch_at(std::string_view text, const Where& where) {
  const std::string s = lower(trim(text));
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  where.fail(fmt::format("'{}' is not a switch (expected 1/0, true/false, on/off, yes/no)", text));
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API

Tier Tier::memory(std::uint64_t capacity_bytes) {
  Tier tier;
  tier.kind = "memory";
  tier.capacity_bytes = capacity_bytes;
  tier.high_water = 0.0;
  tier.low_water = 0.0;
  return tier;
}

Tier Tier::directory(std::string path, std::uint64_t capacity_bytes) {
  Tier tier;
  tier.kind = "directory";
  tier.path = std::move(path);
  tier.capacity_bytes = capacity_bytes;
  tier.high_water = 1.0;
  tier.low_water = 1.0;
  return tier;
}

Tier Tier::mpiio(std::string path, std::uint64_t capacity_bytes) {
  Tier tier = directory(std::move(path), capacity_bytes);
  tier.kind = "mpiio";
  return tier;
}

std::uint64_t parse_size(std::string_view text, const std::string& field) {
  return parse_size_at(text, Where{field});
}

std::vector<Tier> parse_tier_spec(std::string_view spec, const std::string& field) {
  return parse_tier_spec_at(spec, Where{field});
}

std::string format_tier_spec(const std::vector<Tier>& tiers) {
  std::string spec;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const Tier& tier = tiers[i];
    if (i) spec += ',';
    if (tier.kind == "memory") {
      spec += "mem:" + format_exact_size(tier.capacity_bytes);
      continue;
    }
    if (tier.path.find(',') != std::string::npos)
      throw ConfigError(fmt::format("tiers[{}].path", i),
                        fmt::format("'{}' contains ',' and cannot be written as a tier spec", tier.path));
    // A spec's entries are trimmed: such a path would come back as another one.
    if (trim(tier.path) != tier.path)
      throw ConfigError(fmt::format("tiers[{}].path", i),
                        fmt::format("'{}' begins or ends with white space and cannot be written as a tier spec",
                                    tier.path));
    spec += tier.kind == "directory" ? std::string("dir") : tier.kind;
    if (tier.io_backend != IoBackend::automatic) spec += "+" + to_string(tier.io_backend);
    spec += ":" + tier.path;
    // A path ending in ":<size>" needs an explicit size, or it would re-parse as one.
    std::string ignored;
    const auto colon = tier.path.rfind(':');
    const bool ambiguous =
        colon != std::string::npos && try_parse_size(std::string_view(tier.path).substr(colon + 1), ignored);
    if (tier.capacity_bytes != 0 || ambiguous) spec += ":" + format_exact_size(tier.capacity_bytes);
  }
  return spec;
}

Schedule parse_schedule(std::string_view text, const std::string& field) {
  return parse_schedule_at(text, Where{field});
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

void Config::validate() const { validate_with(*this, Origins{}, {}); }

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

Config Config::from_env() {
  Loaded loaded;
  std::string source = "environment";
  if (const auto file = env("MLBS_CONFIG")) {
    loaded = load_file(*file, "MLBS_CONFIG");
    source = *file;
  }
  Config& cfg = loaded.config;

  // Each variable overrides one field; errors (parse or validate) name it.
  const auto apply = [&](const char* name, const std::string& field, auto&& set) {
    const auto value = env(name);
    if (!value) return;
    const Where at{name, "environment"};
    set(*value, at);
    loaded.origins.replace(field, at);
  };
  apply("MLBS_TIERS", "tiers", [&](const std::string& v, const Where& at) { cfg.tiers = parse_tier_spec_at(v, at); });
  apply("MLBS_SCHEDULE", "schedule",
        [&](const std::string& v, const Where& at) { cfg.schedule = parse_schedule_at(v, at); });
  apply("MLBS_DURABILITY", "durability",
        [&](const std::string& v, const Where& at) { cfg.durability = parse_durability_at(v, at); });
  apply("MLBS_HELPER_CORE", "helper_core",
        [&](const std::string& v, const Where& at) { cfg.helper_core = parse_helper_core_at(v, at); });
  apply("MLBS_HELPER_THREADS", "helper_threads", [&](const std::string& v, const Where& at) {
    const auto threads = to_integer<unsigned>(trim(v));
    if (!threads) at.fail(fmt::format("'{}' is not a thread count", v));
    cfg.helper_threads = *threads;
  });
  apply("MLBS_CHECKSUMS", "checksums",
        [&](const std::string& v, const Where& at) { cfg.checksums = parse_switch_at(v, at); });
  apply("MLBS_IO_CHUNK", "io_chunk",
        [&](const std::string& v, const Where& at) { cfg.io_chunk_bytes = parse_size_at(v, at); });
  apply("MLBS_PAGE_CACHE", "page_cache",
        [&](const std::string& v, const Where& at) { cfg.page_cache = parse_switch_at(v, at); });
  apply("MLBS_LAYOUT", "layout",
        [&](const std::string& v, const Where& at) { cfg.layout = parse_layout_at(v, at); });

  validate_with(cfg, loaded.origins, source);
  return std::move(cfg);
}

}  // namespace mlbs
