// mlbs — transparent mode's settings: what mlbs-run passes to each process of
// the program through the environment, read and checked in one place. The
// interposer reads them when a process first touches the folder; mlbs-run
// reads the same environment it is about to hand over, so that a bad setting
// is refused before the program starts, with the message the process would
// have printed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "intercept/paths.hpp"
#include "mlbs/config.hpp"

namespace mlbs::intercept {

/// How mlbs-run set this process up (the environment it passes on).
struct Settings {
  Folder folder;                            ///< MLBS_INTERCEPT
  Config cfg;                               ///< the tiers given (MLBS_TIERS, MLBS_CONFIG, MLBS_*), then the folder
  std::uint64_t chunk_bytes = 16ull << 20;  ///< MLBS_RUN_CHUNK
  bool learn_order = true;                  ///< MLBS_RUN_SCHEDULE=auto (the default); lifo / fifo fix it
  std::string report;                       ///< MLBS_RUN_REPORT: where this process appends its summary
  std::string trace;                        ///< MLBS_RUN_TRACE: its Chrome trace goes to <trace>.<pid>
  /// None without MLBS_INTERCEPT; throws mlbs::ConfigError naming the
  /// variable or field for a bad setting.
  static std::optional<Settings> from_env();
};

}  // namespace mlbs::intercept
