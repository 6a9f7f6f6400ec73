// mlbs — internals of the trace recorder that tests and tools inside the
// library may use; the public API is include/mlbs/trace.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlbs::trace {

/// Default bound on recorded events (spans), all threads together. An event
/// takes 32 bytes, so a full recorder holds about 128 MiB plus its names.
inline constexpr std::size_t kDefaultMaxEvents = std::size_t{4} << 20;

/// Changes the bound (tests use a small one); events already recorded stay.
void set_max_events(std::size_t max_events) noexcept;
std::size_t max_events() noexcept;
/// Spans not recorded since the last clear() because the bound was reached.
std::uint64_t dropped_count() noexcept;

}  // namespace mlbs::trace
