// mlbs — the runtime: owns the tiers, the catalog and the helper engine.
#pragma once

#include <memory>

#include "mlbs/config.hpp"
#include "mlbs/stats.hpp"

namespace mlbs {
namespace engine { class Engine; }
namespace detail { class StoreCore; }

/// Starts the helper engine on construction; on destruction drains what the
/// durability mode owes (persistent: everything reaches the last tier, bounded
/// by Config::shutdown_timeout_ms) and stops the helpers. Never hangs.
class Runtime {
 public:
  explicit Runtime(Config cfg = Config{});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A snapshot of the catalog's counters, per tier.
  Stats stats() const;
  const Config& config() const;

 private:
  friend class detail::StoreCore;
  std::shared_ptr<engine::Engine> engine_;
};

}  // namespace mlbs
