// mlbs — Config::from_env(): MLBS_CONFIG, then one MLBS_* variable per field.
#include "codec/spec.hpp"
#include "core/config/parse.hpp"

#include <cstdlib>

#include <fmt/format.h>

namespace mlbs {

// Files of src/core/config/ share these helpers (parse.hpp).
using namespace configuration;

namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

}  // namespace

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
  apply("MLBS_LIVE_CATALOG", "live_catalog",
        [&](const std::string& v, const Where& at) { cfg.live_catalog = parse_switch_at(v, at); });
  apply("MLBS_LIVE_RECORDS", "live_records", [&](const std::string& v, const Where& at) {
    const auto n = to_integer<unsigned>(trim(v));
    if (!n) at.fail(fmt::format("'{}' is not a record count", v));
    cfg.live_records = *n;
  });
  apply("MLBS_READER_RETENTION", "reader_retention", [&](const std::string& v, const Where& at) {
    cfg.reader_retention = parse_reader_retention_at(v, at);
  });
  apply("MLBS_CODEC", "codec", [&](const std::string& v, const Where& at) {
    cfg.codec = codec::to_string(codec::parse(v, at.field, at.source, at.line));
  });
  apply("MLBS_COPY_AHEAD", "copy_ahead",
        [&](const std::string& v, const Where& at) { cfg.copy_ahead = parse_switch_at(v, at); });
  apply("MLBS_CODEC_WHEN", "codec_when",
        [&](const std::string& v, const Where& at) { cfg.codec_when = parse_codec_when_at(v, at); });
  apply("MLBS_LAYOUT", "layout",
        [&](const std::string& v, const Where& at) { cfg.layout = parse_layout_at(v, at); });

  validate_with(cfg, loaded.origins, source);
  return std::move(cfg);
}

}  // namespace mlbs
