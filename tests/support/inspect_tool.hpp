// The mlbs-inspect binary the tests that run it use: $MLBS_INSPECT, else the
// one built beside this suite (MLBS_INSPECT_PATH), else none (they skip).
#pragma once

#include <cstdlib>

namespace mlbs::test {

inline const char* inspect_tool() {
  const char* tool = std::getenv("MLBS_INSPECT");
#ifdef MLBS_INSPECT_PATH
  if (!tool || !*tool) tool = MLBS_INSPECT_PATH;
#endif
  return tool && *tool ? tool : nullptr;
}

}  // namespace mlbs::test
