// mlbs — fault injection as a tier wrapper (Tier::faults): errors, silently
// short or corrupted transfers and latency spikes on chosen operations, so
// the engine's handling of a failing device can be tested and demonstrated
// on healthy hardware. See docs/guarantees.md for what each fault must do.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tiers/wrappers/wrapped.hpp"

namespace mlbs::tiers {

/// One rule of a fault plan: on the matching operations, after the first
/// `after` of them, `count` times, do `effect`.
struct FaultRule {
  enum class Op { create, write, commit, open, read, remove, any };
  enum class Effect {
    error,    ///< throw as the device would have failed with `error` (errno)
    short_,   ///< write: the rest of the object is silently lost (a torn write)
    corrupt,  ///< write or read: one byte silently flipped (bit rot)
    delay,    ///< sleep `delay` first (a latency spike), then go on
  };
  Op op = Op::any;
  Effect effect = Effect::error;
  int error = 0;
  std::chrono::microseconds delay{0};
  std::uint64_t after = 0;
  std::uint64_t count = std::numeric_limits<std::uint64_t>::max();
  /// Non-empty: the rule fires only while this file exists (a device that is
  /// full until someone frees room: the test or operator removes the file).
  std::string while_exists;
};

/// Parses a plan: rules separated by ',', each `<op>:<effect>[@<after>][*<count>][?<path>]`
/// with op = create|write|commit|open|read|remove|any and effect = an errno
/// name (EIO, ENOSPC, EDQUOT, EACCES, EROFS, ENOENT), `short`, `corrupt` or
/// `delay=<n>ms|us|s`; `?<path>`: only while that file exists. E.g.
/// "write:ENOSPC@4" (writes fail from the 5th on), "read:corrupt*1",
/// "any:delay=50ms", "write:ENOSPC?/tmp/full". Throws ConfigError naming `field`.
std::vector<FaultRule> parse_fault_plan(std::string_view spec, const std::string& field);
/// Empty if `spec` parses, else why not (for Config::validate()).
std::string fault_plan_error(std::string_view spec);

class FaultyBackend final : public WrappedBackend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, std::vector<FaultRule> plan);
  /// Faults injected so far (delays included).
  std::uint64_t injected() const noexcept { return injected_.load(std::memory_order_relaxed); }

  /// Counts operation `op` against every matching rule; the effects that
  /// fire now, delays already slept. Throws for an `error` effect.
  struct Fired {
    bool short_ = false;
    bool corrupt = false;
  };
  Fired fire(FaultRule::Op op, const ObjectRef* ref);

 private:
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  void do_remove(const ObjectRef& ref) override;
  void do_cancel() noexcept override {
    delay_.cancel();
    WrappedBackend::do_cancel();
  }

  struct Armed {
    FaultRule rule;
    std::atomic<std::uint64_t> seen{0};
  };
  std::vector<std::unique_ptr<Armed>> rules_;
  std::atomic<std::uint64_t> injected_{0};
  CancellableWait delay_;
};

}  // namespace mlbs::tiers
