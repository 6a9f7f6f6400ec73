#include "tiers/transfer.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "catalog/checksum.hpp"
#include "codec/frame.hpp"

namespace mlbs::tiers {

namespace {
/// Between two tiers the staging holds this many pieces (see transfer())...
constexpr std::uint64_t kPieces = 3;
/// ... and the first is a piece / this. Not smaller: every piece costs a
/// read request's latency (1-2 ms on this project's virtual disk), and a
/// piece the slower tier writes in less than that leaves it idle before the
/// next (with a sixteenth, 64-256 KiB pieces left the 200 MiB/s tier idle
/// 25-45 ms per run at micro 8, against 2-14 ms with a quarter).
constexpr std::uint64_t kRampSteps = 4;
/// A verified read into memory goes in pieces of a quarter of the record, at
/// least this, halving towards the end (see transfer()).
constexpr std::uint64_t kLeastHashedPiece = 1ull << 20;
}  // namespace

std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash) {
  return transfer(from, to, size, staging, hash, Control{});
}

std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash,
                       const Control& control) {
  const auto check = [&control] {
    if (control.stop && control.stop->load(std::memory_order_relaxed)) throw Cancelled{};
  };
  // Pieces no larger than the control asks for, whole blocks (O_DIRECT).
  const auto capped = [&control](std::uint64_t piece) {
    if (!control.piece_bytes) return piece;
    return std::max<std::uint64_t>(detail::kBlockAlign,
                                   std::min(piece, control.piece_bytes / detail::kBlockAlign * detail::kBlockAlign));
  };
  const auto tell = [](const std::function<void()>& f) {
    if (f) f();
  };
  catalog::Checksummer sum(control.hash_kind);
  if (from.memory && to.writer && !to.memory) {
    // DRAM to a tier: the bytes are hashed while the device writes them (the
    // caller's commit() waits for the last requests). A copy that may be
    // stopped goes in pieces, each queued behind the last, checked between.
    const std::uint64_t piece = control.stop ? capped(size) : size;
    for (std::uint64_t off = 0; off < size; off += piece) {
      check();
      const std::size_t n = static_cast<std::size_t>(std::min(piece, size - off));
      to.writer->write_held(off, from.memory + off, n);
      if (hash) sum.update(from.memory + off, n);
    }
    return hash ? sum.digest() : 0;
  }
  if (size == 0) return hash ? sum.digest() : 0;  // an empty record's block may be null
  if (from.reader && to.writer && !to.memory && staging->capacity() >= kPieces * detail::kBlockAlign) {
    // Between two tiers: three pieces of the staging, so that neither device
    // waits for the other or for this thread. While piece k is written
    // (write_held), piece k+1 is read; the read of k+2 queues behind it
    // (read_held) into the third buffer, free once the write of k-1 is done
    // (write_held of k returns then). Both devices keep a request queued from
    // the first piece to the last, whichever is slower (often the
    // bottleneck): no gap for this thread's wake-up between two pieces. The
    // pieces start small and double, so that the writer waits only for the
    // first, short read. They end halving down again, so that the last
    // write, which no read overlaps, is short too: a copy up from the
    // bottleneck lands soon after its last read there. But where the writer
    // is the slower tier and the caller queues that tier's next copy behind
    // this one (last_write), they stay whole to the end: the next copy gets
    // ready (plans, opens, reads its first piece) while the tier writes the
    // last one, where a halved last piece left it idle 1-4 ms per copy at
    // the demo's micro ratio 8.
    const std::uint64_t most = capped(staging->capacity() / kPieces / detail::kBlockAlign * detail::kBlockAlign);
    std::byte* const buf[kPieces] = {staging->data(), staging->data() + most, staging->data() + 2 * most};
    const std::uint64_t first =
        std::max<std::uint64_t>(detail::kBlockAlign, most / kRampSteps / detail::kBlockAlign * detail::kBlockAlign);
    const bool ramp_down = !control.last_write;
    std::uint64_t at[kPieces] = {}, len[kPieces] = {};  // each buffer's piece
    std::uint64_t read_to = 0, chunk = 0, issued = 0;
    // Queues the read of the next piece into buffer issued % kPieces; false once all are read.
    const auto read_next = [&] {
      const std::uint64_t left = size - read_to;
      if (left == 0) return false;
      chunk = chunk ? std::min(most, 2 * chunk) : first;
      const std::uint64_t down = std::max<std::uint64_t>(first, detail::round_up_block(left / 2));
      const std::uint64_t n = read_to && ramp_down ? std::min({chunk, left, down}) : std::min(chunk, left);
      const std::uint64_t b = issued++ % kPieces;
      at[b] = read_to;
      len[b] = n;
      from.reader->read_held(read_to, buf[b], static_cast<std::size_t>(n));
      read_to += n;
      if (read_to == size) tell(control.last_read);
      return true;
    };
    read_next();
    if (!read_next()) from.reader->wait_held();  // piece 0 is in either way
    for (std::uint64_t k = 0; k < issued; ++k) {
      const std::uint64_t b = k % kPieces;
      check();
      to.writer->write_held(at[b], buf[b], static_cast<std::size_t>(len[b]));
      if (k + 1 == issued && read_to == size) tell(control.last_write);  // the writes before it are done
      if (hash) sum.update(buf[b], static_cast<std::size_t>(len[b]));  // read only: the held write may still be using it
      // Piece k+1 is in once this returns (or the wait does, at the end).
      if (!read_next() && k + 1 < issued) from.reader->wait_held();
    }
    return hash ? sum.digest() : 0;
  }
  if (from.reader && to.memory && !to.writer && hash && size > kLeastHashedPiece) {
    // From a tier into memory, verified: in pieces, each hashed while the
    // device reads the next (read_held returns once the piece before is in),
    // so that only the last, short piece's hash follows the device's last
    // byte. Hashed after one whole read, a 16 MiB record held its tier idle
    // 1-4 ms per copy: on the slowest tier, for every copy up from it.
    check();
    const std::uint64_t most = std::max<std::uint64_t>(kLeastHashedPiece, detail::round_up_block(size / 4));
    std::uint64_t at = 0, held_at = 0, held = 0;
    while (at < size) {
      // As the ramp down between two tiers: half of what is left once that is under two pieces.
      const std::uint64_t left = size - at;
      const std::uint64_t n =
          std::min({most, left, std::max<std::uint64_t>(kLeastHashedPiece, detail::round_up_block(left / 2))});
      from.reader->read_held(at, to.memory + at, static_cast<std::size_t>(n));
      if (at + n == size) tell(control.last_read);  // the reads before it are in
      if (held) sum.update(to.memory + held_at, static_cast<std::size_t>(held));
      held_at = at, held = n;
      at += n;
    }
    from.reader->wait_held();
    sum.update(to.memory + held_at, static_cast<std::size_t>(held));
    return sum.digest();
  }
  const bool whole = from.memory || to.memory;
  const std::uint64_t chunk = whole ? std::max<std::uint64_t>(size, 1) : capped(staging->capacity());
  for (std::uint64_t off = 0; off < size; off += chunk) {
    check();
    const std::size_t n = static_cast<std::size_t>(std::min(chunk, size - off));
    const std::byte* bytes;
    if (from.memory) {
      bytes = from.memory + off;
    } else {
      std::byte* into = to.memory ? to.memory + off : staging->data();
      from.reader->read(off, into, n);
      bytes = into;
    }
    if (hash) sum.update(bytes, n);
    if (to.writer) to.writer->write(off, bytes, n);
  }
  return hash ? sum.digest() : 0;
}

std::uint64_t read_record(ObjectReader& reader, const StoredRecord& rec, std::byte* out, detail::Block& frame,
                          bool verify, unsigned threads, const ErrorContext& ctx, const Control& caller) {
  verify = verify && rec.has_checksum;
  Control control = caller;
  control.hash_kind = rec.checksum_kind;  // as the record was hashed
  auto mismatch = [&](const char* what, std::uint64_t read, std::uint64_t expected) {
    return CorruptionError(EBADMSG, fmt::format("checksum mismatch ({}): read {:016x}, catalog {:016x}", what, read,
                                                expected),
                           ctx);
  };
  if (!rec.stored) {
    const std::uint64_t digest = transfer({nullptr, &reader}, {out, nullptr}, rec.size, nullptr, verify, control);
    if (verify && digest != rec.checksum) throw mismatch("record", digest, rec.checksum);
    return 0;
  }
  if (frame.capacity() < rec.stored) frame = detail::Block::allocate_untouched(rec.stored);
  const std::uint64_t digest = transfer({nullptr, &reader}, {frame.data(), nullptr}, rec.stored, nullptr, verify, control);
  if (verify && digest != rec.frame_checksum) throw mismatch("compressed record", digest, rec.frame_checksum);
  const std::span<const std::byte> bytes(frame.data(), rec.stored);
  const auto start = std::chrono::steady_clock::now();
  codec::decode_frame(bytes, {out, rec.size}, threads, ctx);
  const auto ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  if (verify && codec::inspect_frame(bytes, ctx).spec.lossless()) {
    const std::uint64_t decoded = catalog::record_checksum(out, rec.size, rec.checksum_kind);
    if (decoded != rec.checksum) throw mismatch("decoded record", decoded, rec.checksum);
  }
  return ns;
}

}  // namespace mlbs::tiers
