// mlbs-inspect's live mode (live.cpp): what main() hands it.
#pragma once

#include <string>

namespace mlbs::inspect {

struct LiveOptions {
  std::string tier_dir;  ///< the writer's last tier
  std::string store;
  int rank = 0;
  bool json = false;
  bool follow = false;  ///< print again at every change until the writer is gone
};

/// Prints the store's live catalog; throws mlbs errors (no such store, another version).
int run_live(const LiveOptions& opt);

}  // namespace mlbs::inspect
