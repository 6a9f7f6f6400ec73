// Test helper: skip a test when mlbs was built without a codec's library.
#pragma once

#include <algorithm>
#include <string>

#include "codec/spec.hpp"

namespace mlbs::test {

inline bool codec_built(const std::string& name) {
  const auto names = mlbs::codec::available();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace mlbs::test

#define REQUIRE_CODEC(name) \
  if (!mlbs::test::codec_built(name)) GTEST_SKIP() << "mlbs built without the " name " codec"
