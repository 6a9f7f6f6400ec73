// mlbs — tracing: application phases and every helper operation as events,
// written as Chrome Trace Event JSON (opens in Perfetto / chrome://tracing).
// Off by default; when off, every call costs one relaxed atomic load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mlbs/export.h"

namespace mlbs::trace {

/// Turns recording on or off for the whole process.
MLBS_API void enable(bool on = true) noexcept;
MLBS_API bool enabled() noexcept;

/// Nanoseconds on the steady clock all events use.
MLBS_API std::uint64_t now_ns() noexcept;

/// Records a complete event [start_ns, end_ns) on the calling thread.
/// Categories used by mlbs: "compute", "copy", "write_block", "read_block"
/// (application side) and "tier<N>" (helper I/O touching tier N); users may
/// add their own. `bytes` is shown as an argument when non-zero.
MLBS_API void span(std::string_view name, std::string_view category, std::uint64_t start_ns,
          std::uint64_t end_ns, std::uint64_t bytes = 0);

/// Names the calling thread in the trace ("app", "helper 0", ...).
MLBS_API void name_thread(std::string_view name);

/// RAII span: `mlbs::trace::Scope s("stencil", "compute");`
class Scope {
 public:
  explicit Scope(const char* name, const char* category = "compute") noexcept
      : name_(name), category_(category), start_(enabled() ? now_ns() : 0) {}
  ~Scope() {
    if (start_) span(name_, category_, start_, now_ns());
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  const char* category_;
  std::uint64_t start_;
};

/// All recorded events as Chrome Trace Event JSON ({"traceEvents": [...]}).
MLBS_API std::string chrome_json();
/// Writes chrome_json() to `path`; throws mlbs::IoError on failure.
MLBS_API void write_chrome_json(const std::string& path);
/// Forgets every recorded event.
MLBS_API void clear() noexcept;
/// Number of recorded events (tests).
MLBS_API std::size_t event_count() noexcept;

}  // namespace mlbs::trace
