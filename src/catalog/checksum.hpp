// mlbs — xxHash3-64 record checksums, whole or streamed chunk by chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <xxhash.h>
#ifdef MLBS_HAVE_XXH3_DISPATCH
// The library's run-time dispatch to AVX2 / AVX-512 (CMakeLists.txt): the
// same digests as XXH3_64bits, at a fraction of the helpers' CPU time.
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif

namespace mlbs::catalog {

inline std::uint64_t checksum(const void* data, std::size_t bytes) noexcept {
#ifdef MLBS_HAVE_XXH3_DISPATCH
  return XXH3_64bits_dispatch(data, bytes);
#else
  return XXH3_64bits(data, bytes);
#endif
}

/// Streaming form, for records copied chunk by chunk between file tiers.
class Checksummer {
 public:
  Checksummer() : state_(XXH3_createState(), &XXH3_freeState) { XXH3_64bits_reset(state_.get()); }
  void update(const void* data, std::size_t bytes) noexcept {
#ifdef MLBS_HAVE_XXH3_DISPATCH
    XXH3_64bits_update_dispatch(state_.get(), data, bytes);
#else
    XXH3_64bits_update(state_.get(), data, bytes);
#endif
  }
  std::uint64_t digest() const noexcept { return XXH3_64bits_digest(state_.get()); }

 private:
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;
};

}  // namespace mlbs::catalog
