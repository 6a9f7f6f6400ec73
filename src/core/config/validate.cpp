// mlbs — Config::validate(): the rules a configuration must meet, whatever
// it was read from; each tier kind's own rules come from its descriptor.
#include "core/config/parse.hpp"

#include <bit>
#include <filesystem>

#include <fmt/format.h>

#include "codec/spec.hpp"
#include "tiers/kinds.hpp"
#include "tiers/tier_folder.hpp"

namespace mlbs {

// Files of src/core/config/ share these helpers (parse.hpp).
using namespace configuration;

namespace configuration {

namespace fs = std::filesystem;

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
    const auto fail_here = [&](const std::string& suffix, std::string message) { fail(name + suffix, std::move(message)); };
    const tiers::TierKind* kind = tiers::find_tier_kind(tier.kind);
    using Place = tiers::TierKind::Place;
    if (i == 0 && (!kind || kind->place != Place::first))
      fail(name + ".kind", fmt::format("the first tier must be the memory tier, got '{}'", tier.kind));
    if (!kind)
      fail(name + ".kind", fmt::format("unknown tier kind '{}' (expected {})", tier.kind, tiers::tier_kind_list(false)));
    if (i > 0 && kind->place == Place::first)
      fail(name + ".kind", fmt::format("only the first tier may be {}", kind->noun));
    if (!kind->unavailable.empty()) fail(name + ".kind", kind->unavailable);
    if (kind->place == Place::last && i + 1 != cfg.tiers.size())
      fail(name + ".kind", fmt::format("{} must be the last tier (it is tier {} of {})", kind->noun, i, cfg.tiers.size()));
    // A field the kind does not take must keep the kind's default.
    const Tier defaults = kind->make({}, 0);
    const auto takes = [&](const char* key, bool set) {
      if (set && !kind->takes(key)) fail(fmt::format("{}.{}", name, key), fmt::format("{} takes no {}", kind->noun, key));
    };
    takes("path", !tier.path.empty());
    takes("bandwidth", tier.bandwidth_bytes_per_s != defaults.bandwidth_bytes_per_s);
    takes("page_cache", tier.page_cache != defaults.page_cache);
    takes("io_backend", tier.io_backend != defaults.io_backend);
    takes("queue_depth", tier.queue_depth != defaults.queue_depth);
    takes("io_request", tier.io_request_bytes != defaults.io_request_bytes);
    takes("layout", tier.layout != defaults.layout);
    takes("faults", tier.faults != defaults.faults);
    if (kind->has_path) {
      if (tier.path.empty()) fail(name + ".path", fmt::format("{} needs a path", kind->noun));
      // Lexical only: validate() must not touch the file system.
      std::error_code ec;
      const fs::path absolute = fs::absolute(tier.path, ec);
      const fs::path normal = tiers::normalised_tier_path(ec ? tier.path : absolute.string());
      if (const auto [it, fresh] = directories.try_emplace(normal, i); !fresh)
        fail(name + ".path", fmt::format("'{}' is the same directory as tiers[{}] ('{}')", tier.path, it->second,
                                         cfg.tiers[it->second].path));
    }
    if (kind->check) kind->check(tier, cfg, fail_here);
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
  if (cfg.live_records < 1 || cfg.live_records > Config::max_live_records)
    fail("live_records", fmt::format("{} is not between 1 and {}", cfg.live_records, Config::max_live_records));
  if (cfg.reader_retention != ReaderRetention::none && !cfg.live_catalog)
    fail("reader_retention",
         fmt::format("'{}' needs live_catalog = true (readers acknowledge their reads through it)",
                     to_string(cfg.reader_retention)));
  const Where codec_at = origins.resolve("codec", source);
  codec::parse(cfg.codec, codec_at.field, codec_at.source, codec_at.line);
  if (cfg.helper_core < -2)
    fail("helper_core", fmt::format("{} is not a core (expected -1 for auto, -2 for none, or >= 0)", cfg.helper_core));
  if (cfg.io_chunk_bytes < 4096 || cfg.io_chunk_bytes % 4096 != 0 || cfg.io_chunk_bytes > (1ull << 30))
    fail("io_chunk",
         fmt::format("{} is not a multiple of 4096 bytes between 4 KiB and 1 GiB (one staging buffer per helper)",
                     cfg.io_chunk_bytes));
}

}  // namespace configuration

void Config::validate() const { validate_with(*this, Origins{}, {}); }

}  // namespace mlbs
