// mlbs — how many io_uring requests one transfer keeps in flight on a tier.
// Pure, so it is unit tested in builds without liburing too.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mlbs/config.hpp"

namespace mlbs::tiers::uring {

/// Tier::queue_depth, but on a capped tier (Tier::bandwidth_bytes_per_s) no
/// more than the cap moves in a millisecond, and at least two (one completes
/// while the next is submitted). More would not move the bytes sooner (the
/// cap paces them) and would only lengthen the device's queue: a record
/// written down would put milliseconds of writes ahead of the reads that
/// feed a slower tier from the same device, and that tier, often the
/// bottleneck, would wait for them.
inline unsigned requests_in_flight(const Tier& tier) {
  if (!tier.bandwidth_bytes_per_s || !tier.io_request_bytes) return tier.queue_depth;
  const std::uint64_t per_ms = tier.bandwidth_bytes_per_s / 1000;
  const std::uint64_t needed = (per_ms + tier.io_request_bytes - 1) / tier.io_request_bytes;
  return static_cast<unsigned>(std::clamp<std::uint64_t>(needed, std::min(tier.queue_depth, 2u), tier.queue_depth));
}

}  // namespace mlbs::tiers::uring
