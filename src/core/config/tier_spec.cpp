// mlbs — tier spec strings ("mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run")
// and the Tier constructors; kinds come from their descriptors (tiers/kinds.hpp).
#include "core/config/parse.hpp"

#include <fmt/format.h>

#include "tiers/kinds.hpp"

namespace mlbs {

// Files of src/core/config/ share these helpers (parse.hpp).
using namespace configuration;

namespace {

/// The last ':'-part of a spec entry that is meant as a quota: one that
/// parses as a size, or starts with a digit (a typo to report, not a folder
/// name), so paths may contain ':' otherwise.
bool reads_as_quota(std::string_view tail) {
  std::string ignored;
  tail = trim(tail);
  return try_parse_size(tail, ignored) || (!tail.empty() && tail.front() >= '0' && tail.front() <= '9');
}

}  // namespace

namespace configuration {

std::vector<Tier> parse_tier_spec_at(std::string_view spec, const Where& where) {
  if (trim(spec).empty()) where.fail("empty tier spec (expected e.g. mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run)");
  std::vector<Tier> tiers;
  const auto entries = split(spec, ',');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Where at = where.sub(fmt::format("[{}]", i));
    const std::string_view entry = trim(entries[i]);
    if (entry.empty()) at.fail("empty tier entry (stray ',')");
    const auto colon = entry.find(':');
    std::string_view spelling = trim(entry.substr(0, colon));
    // "dir+io_uring:PATH": the kind may name the tier's I/O backend.
    std::optional<IoBackend> io;
    if (const auto plus = spelling.find('+'); plus != std::string_view::npos) {
      const tiers::TierKind* kind = tiers::find_tier_kind(trim(spelling.substr(0, plus)));
      if (!kind || !kind->takes("io_backend"))
        at.fail(fmt::format("'{}': only directory tiers take an I/O backend (dir+io_uring, dir+pread)", entry));
      io = parse_io_backend_at(spelling.substr(plus + 1), at.sub(".io_backend"));
      spelling = trim(spelling.substr(0, plus));
    }
    const tiers::TierKind* kind = tiers::find_tier_kind(spelling);
    if (!kind)
      at.fail(fmt::format("unknown tier kind '{}' in '{}' (expected {})", spelling, entry,
                          tiers::tier_kind_list(true)));
    const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : trim(entry.substr(colon + 1));
    const std::string example = fmt::format("{}:{}64GiB", kind->spellings.front(), kind->has_path ? "/nvme/run:" : "");
    if (!kind->has_path) {  // KIND:SIZE
      if (rest.empty()) at.fail(fmt::format("'{}': {} needs a size, e.g. {}", entry, kind->noun, example));
      tiers.push_back(kind->make({}, parse_size_at(rest, at)));
    } else {  // KIND:PATH[:SIZE]
      std::string_view path = rest;
      std::uint64_t capacity = 0;
      if (const auto last = rest.rfind(':'); last != std::string_view::npos && reads_as_quota(rest.substr(last + 1))) {
        std::string error;
        const auto size = try_parse_size(trim(rest.substr(last + 1)), error);
        if (!size)
          at.fail(fmt::format("'{}': the quota {} (a path whose last part starts with a digit must end in "
                              "':<quota>', e.g. {}:/data/run:2024:64GiB)",
                              entry, error, kind->spellings.front()));
        capacity = *size;
        path = trim(rest.substr(0, last));
      }
      if (path.empty()) at.fail(fmt::format("'{}': {} needs a path, e.g. {}", entry, kind->noun, example));
      tiers.push_back(kind->make(std::string(path), capacity));
    }
    if (io) tiers.back().io_backend = *io;
  }
  return tiers;
}

}  // namespace configuration

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

std::vector<Tier> parse_tier_spec(std::string_view spec, const std::string& field) {
  return parse_tier_spec_at(spec, Where{field});
}

std::string format_tier_spec(const std::vector<Tier>& tiers) {
  std::string spec;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const Tier& tier = tiers[i];
    if (i) spec += ',';
    const tiers::TierKind* kind = tiers::find_tier_kind(tier.kind);
    if (!kind) throw ConfigError(fmt::format("tiers[{}].kind", i), fmt::format("unknown tier kind '{}'", tier.kind));
    if (!kind->has_path) {
      spec += kind->spellings.front() + ":" + format_exact_size(tier.capacity_bytes);
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
    spec += kind->spellings.front();
    if (tier.io_backend != IoBackend::automatic) spec += "+" + to_string(tier.io_backend);
    spec += ":" + tier.path;
    // A path ending in what reads as a quota needs an explicit one, or it would re-parse as one.
    const auto colon = tier.path.rfind(':');
    const bool ambiguous = colon != std::string::npos && reads_as_quota(std::string_view(tier.path).substr(colon + 1));
    if (tier.capacity_bytes != 0 || ambiguous) spec += ":" + format_exact_size(tier.capacity_bytes);
  }
  return spec;
}

}  // namespace mlbs
