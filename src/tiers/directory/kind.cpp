// The directory tier: a folder on a local or parallel file system, moved
// through pread or io_uring + O_DIRECT, in either layout.
#include <fmt/format.h>

#include "tiers/kinds.hpp"
#include "tiers/wrappers/faults.hpp"

namespace mlbs::tiers {

TierKind directory_tier_kind() {
  TierKind kind;
  kind.name = "directory";
  kind.spellings = {"dir", "directory"};
  kind.noun = "a directory tier";
  kind.has_path = true;
  kind.keys = {"path", "bandwidth", "page_cache", "io_backend", "queue_depth", "io_request", "layout", "faults"};
  kind.make = [](std::string path, std::uint64_t capacity) { return Tier::directory(std::move(path), capacity); };
  kind.check = [](const Tier& tier, const Config& cfg, const TierKind::Fail& fail) {
    if (tier.queue_depth < 1 || tier.queue_depth > Tier::max_queue_depth)
      fail(".queue_depth", fmt::format("{} is not between 1 and {}", tier.queue_depth, Tier::max_queue_depth));
    if (tier.io_request_bytes < 4096 || tier.io_request_bytes % 4096 != 0 || tier.io_request_bytes > (1ull << 30))
      fail(".io_request",
           fmt::format("{} is not a multiple of 4096 bytes between 4 KiB and 1 GiB", tier.io_request_bytes));
    if (const std::string why = fault_plan_error(tier.faults); !why.empty()) fail(".faults", why);
    // O_DIRECT bypasses the page cache: asking for both is a contradiction.
    if (tier.io_backend == IoBackend::io_uring && (tier.page_cache || cfg.page_cache))
      fail(".io_backend",
           fmt::format("io_uring uses O_DIRECT, which bypasses the page cache that {}page_cache = true asks for; use "
                       "io_backend = \"pread\" or \"auto\"",
                       tier.page_cache ? "this tier's " : std::string()));
  };
  return kind;
}

}  // namespace mlbs::tiers
