// mlbs — xxHash3-64 record checksums, whole or streamed chunk by chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <xxhash.h>

namespace mlbs::catalog {

inline std::uint64_t checksum(const void* data, std::size_t bytes) noexcept {
  return XXH3_64bits(data, bytes);
}

/// Streaming form, for records copied chunk by chunk between file tiers.
class Checksummer {
 public:
  Checksummer() : state_(XXH3_createState(), &XXH3_freeState) { XXH3_64bits_reset(state_.get()); }
  void update(const void* data, std::size_t bytes) noexcept {
    XXH3_64bits_update(state_.get(), data, bytes);
  }
  std::uint64_t digest() const noexcept { return XXH3_64bits_digest(state_.get()); }

 private:
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;
};

}  // namespace mlbs::catalog
