#include "intercept/settings.hpp"

#include <fcntl.h>

#include <cstdlib>

#include <fmt/format.h>

#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "tiers/kinds.hpp"

namespace mlbs::intercept {

std::optional<Settings> Settings::from_env() {
  const char* folder = std::getenv("MLBS_INTERCEPT");
  if (!folder || !*folder) return std::nullopt;
  Settings s;
  const auto abs = absolute(AT_FDCWD, folder);
  if (!abs) throw ConfigError("MLBS_INTERCEPT", fmt::format("cannot make '{}' an absolute path", folder));
  s.folder = Folder(*abs);
  s.cfg = Config::from_env();
  // The tiers in front of the folder (mlbs-run --tiers): DRAM alone will do.
  if (const char* t = std::getenv("MLBS_RUN_TIERS"); t && *t) s.cfg.tiers = parse_tier_spec(t, "MLBS_RUN_TIERS");
  // The program's own files are the last tier: every record ends there.
  s.cfg.tiers.push_back(tiers::find_tier_kind("files")->make(s.folder.path(), 0));
  s.cfg.durability = Durability::persistent;
  // Written behind at once: the program may exit, fork or fsync any time,
  // and the folder's files are what it and the next program see.
  s.cfg.tiers[0].high_water = s.cfg.tiers[0].low_water = 0.0;
  if (const char* c = std::getenv("MLBS_RUN_CHUNK"); c && *c) s.chunk_bytes = parse_size(c, "MLBS_RUN_CHUNK");
  if (s.chunk_bytes < detail::kBlockAlign || s.chunk_bytes % detail::kBlockAlign || s.chunk_bytes > (1ull << 32))
    throw ConfigError("MLBS_RUN_CHUNK", fmt::format("{} is not a multiple of 4 KiB between 4 KiB and 4 GiB", s.chunk_bytes));
  const char* order_env = std::getenv("MLBS_RUN_SCHEDULE");
  const std::string order = order_env && *order_env ? order_env : "auto";
  if (order == "auto") {
    s.learn_order = true;
    s.cfg.schedule = Schedule::unknown();
  } else if (order == "lifo" || order == "fifo") {
    s.learn_order = false;
    s.cfg.schedule = order == "lifo" ? Schedule::lifo() : Schedule::fifo();
  } else {
    throw ConfigError("MLBS_RUN_SCHEDULE", fmt::format("'{}' is not lifo, fifo or auto", order));
  }
  if (const char* r = std::getenv("MLBS_RUN_REPORT")) s.report = r;
  if (const char* t = std::getenv("MLBS_RUN_TRACE")) s.trace = t;
  s.cfg.validate();
  if (s.cfg.tiers[0].capacity_bytes < 2 * s.chunk_bytes)
    throw ConfigError("tiers[0].capacity",
                      fmt::format("the DRAM tier ({}) must hold two chunks of {} (MLBS_RUN_CHUNK)",
                                  format_bytes(s.cfg.tiers[0].capacity_bytes), format_bytes(s.chunk_bytes)));
  for (std::size_t t = 1; t + 1 < s.cfg.tiers.size(); ++t)
    if (s.folder.holds(normalize(s.cfg.tiers[t].path)))
      throw ConfigError(fmt::format("tiers[{}].path", t),
                        fmt::format("{} is inside the intercepted folder {}: a cache tier must lie outside it",
                                    s.cfg.tiers[t].path, s.folder.path()));
  return s;
}

}  // namespace mlbs::intercept
