// mlbs — a record as a codec stores it: a self-describing frame of chunks
// encoded apart, so that several threads share a large record and a chunk
// that does not compress is kept as it is.
//
//   header   "MLBZ", version, element, spec length, chunk bytes, chunk count,
//            raw bytes, plane (nx, ny), the codec's spec text (zstd:1, ...)
//   table    per chunk: stored bytes, top bit set when the chunk is raw
//   payload  the chunks, in order
//
// The frame names its codec, so a record decodes whatever the runtime that
// reads it was configured with (recovery, readers in other processes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/codec.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::codec {

/// What records are cut into: large enough for the codecs to find the
/// redundancy, small enough that a 16 MiB record is shared by 16 threads.
inline constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

/// The chunk size for a store's records: whole groups of 4 planes of its
/// layout (ZFP's blocks), about kChunkBytes; kChunkBytes without a layout.
std::size_t chunk_bytes_for(Element element, Plane plane);

/// The most bytes encode_frame() writes for `raw_bytes`.
std::size_t frame_bound(const Codec& codec, std::uint64_t raw_bytes, std::size_t chunk_bytes = kChunkBytes);

/// Chunks a probing encode_frame() tries first (records of more chunks),
/// and what it samples of each for a lossless codec.
inline constexpr std::size_t kProbeChunks = 4;
inline constexpr std::size_t kSampleBytes = std::size_t{64} << 10;

/// Encodes `raw` into `out` (frame_bound() bytes at least) by up to `threads`
/// threads (copy::Team); returns the frame's size. A chunk the codec does not
/// shrink is stored raw. With `probe`, kProbeChunks chunks spread over the
/// record are tried first (a lossless codec: their first kSampleBytes) and 0
/// is returned when together they do not pay (bypass.hpp: by size, and with
/// `worth_rate` > 0 by the tier time they save at that rate against the time
/// they took): such data then costs a fraction of an attempt. Throws only
/// what the codec's allocations throw.
std::size_t encode_frame(const Codec& codec, std::span<const std::byte> raw, std::span<std::byte> out,
                         unsigned threads, std::size_t chunk_bytes = kChunkBytes, bool probe = false,
                         double worth_rate = 0);

/// Decodes `frame` into exactly `raw` (the record's size), by up to `threads`
/// threads. Whatever the frame holds, nothing outside `raw` is written, and
/// it returns only when every byte was decoded: a damaged frame, one of
/// another size, or one whose codec this build lacks is a CorruptionError
/// carrying `ctx` and saying what was wrong.
void decode_frame(std::span<const std::byte> frame, std::span<std::byte> raw, unsigned threads,
                  const ErrorContext& ctx);

/// Whether bytes that begin a stored copy are a frame's (its magic): what
/// a salvage asks of a copy no journal entry describes.
bool starts_a_frame(std::span<const std::byte> head) noexcept;

/// What a frame says about itself (mlbs-inspect); CorruptionError if its
/// header is damaged.
struct FrameInfo {
  Spec spec;
  Element element = Element::any;
  Plane plane;
  std::uint64_t raw_bytes = 0;
  std::uint32_t chunks = 0;
  std::uint32_t raw_chunks = 0;   ///< kept as they were (did not compress)
};
FrameInfo inspect_frame(std::span<const std::byte> frame, const ErrorContext& ctx);

}  // namespace mlbs::codec
