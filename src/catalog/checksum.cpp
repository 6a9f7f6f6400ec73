#include "catalog/checksum.hpp"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLBS_X86 1
#endif

namespace mlbs::catalog {

namespace {
#if defined(MLBS_HAVE_XXH3_DISPATCH) && defined(MLBS_X86)
__attribute__((target("avx"))) void zero_upper() noexcept { _mm256_zeroupper(); }
#endif

void update_state(XXH3_state_t* state, const void* data, std::size_t bytes) noexcept {
#ifdef MLBS_HAVE_XXH3_DISPATCH
  XXH3_64bits_update_dispatch(state, data, bytes);
  settle_vector_state();
#else
  XXH3_64bits_update(state, data, bytes);
#endif
}
}  // namespace

void settle_vector_state() noexcept {
#if defined(MLBS_HAVE_XXH3_DISPATCH) && defined(MLBS_X86)
  // The dispatcher picks its AVX2 or AVX-512 kernel only where the CPU has
  // them, so AVX is there whenever the upper state can be dirty.
  static const bool avx = (__builtin_cpu_init(), __builtin_cpu_supports("avx"));
  if (avx) zero_upper();
#endif
}

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
