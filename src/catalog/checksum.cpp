#include "catalog/checksum.hpp"

#include <algorithm>

namespace mlbs::catalog {

namespace {
void update_state(XXH3_state_t* state, const void* data, std::size_t bytes) noexcept {
#ifdef MLBS_HAVE_XXH3_DISPATCH
  XXH3_64bits_update_dispatch(state, data, bytes);
#else
  XXH3_64bits_update(state, data, bytes);
#endif
}
}  // namespace

std::uint64_t record_checksum(const void* data, std::size_t bytes, ChecksumKind kind) {
  if (kind == ChecksumKind::xxh3) return checksum(data, bytes);
  Checksummer sum(kind);  // the pieces, defined once
  sum.update(data, bytes);
  return sum.digest();
}

Checksummer::Checksummer(ChecksumKind kind) : kind_(kind), state_(XXH3_createState(), &XXH3_freeState) {
  XXH3_64bits_reset(state_.get());
}

void Checksummer::update(const void* data, std::size_t bytes) {
  if (kind_ == ChecksumKind::xxh3) {
    update_state(state_.get(), data, bytes);
    return;
  }
  const auto* p = static_cast<const std::byte*>(data);
  while (bytes) {
    const std::size_t n = std::min(bytes, kChecksumPiece - fill_);
    if (fill_ == 0 && n == kChecksumPiece) {
      digests_.push_back(checksum(p, n));  // a whole piece in one call: hashed directly
    } else {
      update_state(state_.get(), p, n);
      if ((fill_ += n) == kChecksumPiece) {
        digests_.push_back(XXH3_64bits_digest(state_.get()));
        XXH3_64bits_reset(state_.get());
        fill_ = 0;
      }
    }
    p += n;
    bytes -= n;
  }
}

std::uint64_t Checksummer::digest() const {
  if (kind_ == ChecksumKind::xxh3) return XXH3_64bits_digest(state_.get());
  if (fill_ == 0) return combine_pieces(digests_.data(), digests_.size());
  // The last, short piece: hashed with the others, without ending the stream.
  std::vector<std::uint64_t> all(digests_);
  all.push_back(XXH3_64bits_digest(state_.get()));
  return combine_pieces(all.data(), all.size());
}

}  // namespace mlbs::catalog
