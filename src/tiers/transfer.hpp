// mlbs — the one routine that moves a record's bytes: from a DRAM block or a
// tier's reader, to a DRAM block and/or a tier's writer, hashing what passes.
// Helpers' copies, direct reads and recovery's verification all use it, so
// chunking, staging and checksums are decided in one place.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "catalog/checksum.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// Where the bytes come from: memory (a DRAM slot) or a tier's reader.
struct Source {
  const std::byte* memory = nullptr;
  ObjectReader* reader = nullptr;
};

/// Where they go: memory (a DRAM block), a tier's writer, both (a read into
/// DRAM that also writes a copy), or neither (only hashing, as recovery does).
struct Sink {
  std::byte* memory = nullptr;
  ObjectWriter* writer = nullptr;
};

/// Moves `size` bytes from `from` to `to`. A side in memory is whole, so the
/// record goes in one call (io_uring then keeps its queue depth in flight
/// across the record), but for a verified read into memory, which goes in
/// held pieces, each hashed while the next is read (the queue stays full
/// across them); between two tiers, or from a tier to nowhere, the
/// bytes pass through `staging` (needed only then), its capacity at a time,
/// and between two tiers up to half of it at a time: the next chunk is read
/// while the last is written (held, as below, until the writer's commit()),
/// the first ones short so that the writer starts at once.
/// Returns the bytes' checksum (Control::hash_kind) when `hash` (else 0). Throws as the
/// reader or writer does. From memory to a writer the bytes may still be in
/// flight when it returns (ObjectWriter::write_held, hashed meanwhile): the
/// memory stays unchanged until the writer's commit() or destruction.
/// A transfer between two tiers, or from memory to a tier, may be stopped,
/// and one with a tier at either end tells when it has issued its last
/// request there (see Control).
struct Control;
std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash,
                       const Control& control);
std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash);

/// What a helper's transfer is told and tells.
///
/// A transfer that another thread may stop (a copy ahead): `stop` is checked
/// before each piece, and once set transfer() throws Cancelled (the caller's
/// uncommitted writer then takes its object back). Pieces are at most
/// `piece_bytes` (0: half the staging), which bounds what is still in flight
/// when the flag is set.
///
/// `last_read` is called once the last read from the source tier is queued,
/// `last_write` once the last write to the sink tier is (in pieces: between
/// two tiers, and a verified read into memory). Only that request is then
/// left on the device: the caller may start the device's next copy, whose
/// first request queues behind it instead of after this copy's end, its
/// commit and the next plan (1-3 ms of the slowest tier per copy here).
/// With `last_write` the pieces between two tiers stay whole to the end
/// rather than halve, so that the last one keeps the sink busy while the
/// next copy gets ready.
struct Control {
  const std::atomic<bool>* stop = nullptr;
  std::uint64_t piece_bytes = 0;
  std::function<void()> last_read, last_write;
  /// The checksum a hashing transfer computes: the record's own kind where
  /// it verifies one (a record recovered from an older journal).
  catalog::ChecksumKind hash_kind = catalog::kRecordChecksum;
};

/// Thrown by transfer() when its Control::stop flag was set: nothing failed.
struct Cancelled {};

/// What a record's file copies hold: its `size` bytes raw, or a codec frame
/// of `stored` bytes (codec/frame.hpp), with their checksums.
struct StoredRecord {
  std::uint64_t size = 0;
  std::uint64_t stored = 0;          ///< 0: raw
  std::uint64_t checksum = 0;        ///< of the record's bytes
  std::uint64_t frame_checksum = 0;  ///< of the frame
  bool has_checksum = false;
  catalog::ChecksumKind checksum_kind = catalog::kRecordChecksum;  ///< of both
  std::uint64_t file_bytes() const noexcept { return stored ? stored : size; }
};

/// Reads a record's file copy from `reader` into `out` (rec.size bytes),
/// decoding a frame by up to `threads` threads through `frame` (grown as
/// needed). With `verify` (and the record's checksum known) the frame is
/// checked before it is decoded, so damage never reaches a decoder, and the
/// record's bytes after (raw, or decoded by a lossless codec; a lossy
/// codec's output is not the bytes hashed on the way down). A mismatch or a
/// damaged frame is a CorruptionError with `ctx`; other errors as the reader
/// throws them. Returns the nanoseconds spent decoding. `control` as for
/// transfer() (its last_read only).
std::uint64_t read_record(ObjectReader& reader, const StoredRecord& rec, std::byte* out, detail::Block& frame,
                          bool verify, unsigned threads, const ErrorContext& ctx, const Control& control = {});

}  // namespace mlbs::tiers
