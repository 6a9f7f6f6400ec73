// mlbs — checksums: of records (xxHash3-64 over the xxHash3-64 of each 1 MiB
// piece, so that several threads can hash one record), and of metadata
// (plain xxHash3-64). Whole or streamed chunk by chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <xxhash.h>
#ifdef MLBS_HAVE_XXH3_DISPATCH
// The library's run-time dispatch to AVX2 / AVX-512 (CMakeLists.txt): the
// same digests as XXH3_64bits, at a fraction of the helpers' CPU time.
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif

namespace mlbs::catalog {

/// After a dispatched hash: clears the upper halves of the calling thread's
/// vector registers (vzeroupper) where the CPU has AVX. libxxhash's AVX-512
/// kernel returns with them dirty, and until they are cleared every SSE
/// instruction the thread runs pays for it: write() hashes on the
/// application's thread, and a memory-bound OpenMP stencil (compiled for
/// SSE2, as most code is) then ran 3-4x slower for the rest of the process
/// on this VM's AVX-512 CPU (docs/architecture.md, "Checksums"). A no-op
/// without the dispatcher or without AVX.
void settle_vector_state() noexcept;

/// Plain xxHash3-64: metadata (journal entries, index slots, names), and the
/// records of journals written before pieces (ChecksumKind::xxh3).
inline std::uint64_t checksum(const void* data, std::size_t bytes) noexcept {
#ifdef MLBS_HAVE_XXH3_DISPATCH
  const std::uint64_t h = XXH3_64bits_dispatch(data, bytes);
  settle_vector_state();
  return h;
#else
  return XXH3_64bits(data, bytes);
#endif
}

/// How a record's checksum was made. Kept with it wherever it is stored
/// (journal, live catalog), so that records written by an older mlbs are
/// verified as they were hashed.
enum class ChecksumKind : std::uint8_t {
  xxh3 = 0,    ///< xxHash3-64 of the bytes (journals v1 and v2)
  pieces = 1,  ///< xxHash3-64 of the little-endian xxHash3-64 of each kChecksumPiece
};
/// What mlbs hashes new records with. The pieces are hashed independently,
/// so write() hashes each while the thread that copied it still has it in
/// cache (copy::bulk_pieces), instead of a helper reading the record cold.
inline constexpr ChecksumKind kRecordChecksum = ChecksumKind::pieces;
/// The piece: every piece but a record's last is this long. 1 MiB fits the
/// L2 of the cores we run on, and is a whole number of O_DIRECT blocks.
inline constexpr std::size_t kChecksumPiece = std::size_t{1} << 20;

/// The checksum of pieces whose digests are `digests` (in order), for
/// threads that hashed the pieces themselves (record_checksum does it all).
inline std::uint64_t combine_pieces(const std::uint64_t* digests, std::size_t count) noexcept {
  return checksum(digests, count * sizeof(std::uint64_t));  // little-endian hosts only, like the data files
}

/// A record's checksum of `kind`. An empty record has no pieces.
std::uint64_t record_checksum(const void* data, std::size_t bytes, ChecksumKind kind = kRecordChecksum);

/// Streaming form of record_checksum, for records copied chunk by chunk:
/// the chunks need not match the pieces.
class Checksummer {
 public:
  explicit Checksummer(ChecksumKind kind = kRecordChecksum);
  void update(const void* data, std::size_t bytes);
  std::uint64_t digest() const;

 private:
  ChecksumKind kind_;
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;  ///< the bytes, or the piece in progress
  std::size_t fill_ = 0;                                           ///< pieces: bytes of the piece in progress
  std::vector<std::uint64_t> digests_;                             ///< pieces: those complete
};

}  // namespace mlbs::catalog
