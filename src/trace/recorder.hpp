// mlbs — internals of the trace recorder that tests and tools inside the
// library may use; the public API is include/mlbs/trace.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mlbs::trace {

/// Default bound on recorded events (spans), all threads together. An event
/// takes 40 bytes, so a full recorder holds about 160 MiB plus its names.
inline constexpr std::size_t kDefaultMaxEvents = std::size_t{4} << 20;

/// trace::span() of a helper's work on one record: its id goes into the
/// event's arguments ("id"), beside its bytes, so that a trace tells which
/// record each copy moved (the names stay "writeback 0->1", ...).
void span_record(std::string_view name, std::string_view category, std::uint64_t start_ns, std::uint64_t end_ns,
                 std::uint64_t bytes, std::uint64_t record_id);

/// Changes the bound (tests use a small one); events already recorded stay.
void set_max_events(std::size_t max_events) noexcept;
std::size_t max_events() noexcept;
/// Spans not recorded since the last clear() because the bound was reached.
std::uint64_t dropped_count() noexcept;

}  // namespace mlbs::trace
