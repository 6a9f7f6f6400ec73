// Tests of the one routine that moves a record's bytes (src/tiers/transfer.*):
// every path a copy, a direct read or recovery's verification takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "catalog/checksum.hpp"
#include "tiers/transfer.hpp"

namespace {

using mlbs::detail::Block;
using mlbs::tiers::transfer;

/// An object in memory, read and written in whatever pieces the caller picks.
struct Object : mlbs::tiers::ObjectReader, mlbs::tiers::ObjectWriter {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> calls;  ///< bytes per read or write call
  void read(std::uint64_t offset, std::byte* data, std::size_t n) override {
    ASSERT_LE(offset + n, bytes.size());
    std::memcpy(data, bytes.data() + offset, n);
    calls.push_back(n);
  }
  void write(std::uint64_t offset, const std::byte* data, std::size_t n) override {
    if (bytes.size() < offset + n) bytes.resize(offset + n);
    std::memcpy(bytes.data() + offset, data, n);
    calls.push_back(n);
  }
  void commit(bool) override {}
};

/// A reader whose held bytes arrive only once the next read is queued behind them, or at wait_held().
struct Logged final : mlbs::tiers::ObjectReader {
  struct Pending {
    std::uint64_t offset;
    std::byte* data;
    std::size_t n;
  };
  std::vector<std::byte> bytes;
  std::vector<std::string>* log = nullptr;
  std::vector<Pending> pending;
  void arrive() {
    for (const Pending& p : pending) {
      std::memcpy(p.data, bytes.data() + p.offset, p.n);
      log->push_back("arrived " + std::to_string(p.offset));
    }
    pending.clear();
  }
  void read(std::uint64_t offset, std::byte* data, std::size_t n) override {
    log->push_back("whole " + std::to_string(offset));
    std::memcpy(data, bytes.data() + offset, n);
  }
  void read_held(std::uint64_t offset, std::byte* data, std::size_t n) override {
    log->push_back("read " + std::to_string(offset));
    arrive();  // the ones held before
    pending.push_back({offset, data, n});
  }
  void wait_held() override { arrive(); }
};

/// A writer whose held bytes land only when the next call (or commit) comes, as a device's would.
struct Held final : mlbs::tiers::ObjectWriter {
  std::vector<std::byte> bytes;
  std::vector<std::string>* log = nullptr;
  const std::byte* held = nullptr;
  std::uint64_t held_off = 0;
  std::size_t held_n = 0;
  void land() {
    if (!held) return;
    if (bytes.size() < held_off + held_n) bytes.resize(held_off + held_n);
    std::memcpy(bytes.data() + held_off, held, held_n);
    held = nullptr;
  }
  void write(std::uint64_t, const std::byte*, std::size_t) override { FAIL() << "expected held writes"; }
  void write_held(std::uint64_t offset, const std::byte* data, std::size_t n) override {
    land();
    log->push_back("write " + std::to_string(offset));
    held = data, held_off = offset, held_n = n;
  }
  void commit(bool) override { land(); }
};

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<unsigned char>(i * 7 + 3));
  return v;
}

/// A copy between two tiers whose requests land in one log: five blocks and a bit through staging for
/// three one-block pieces. Not movable: the reader and writer point at its log.
struct LoggedCopy {
  std::vector<std::string> log;
  Logged src;
  Held dst;
  Block staging = Block::allocate(3 * 4096);
  LoggedCopy() {
    src.log = dst.log = &log;
    src.bytes = pattern(5 * 4096 + 100);
  }
  LoggedCopy(const LoggedCopy&) = delete;
};

// From DRAM to a tier: one write of the whole record, and the hash of its bytes when asked.
TEST(Transfer, MemoryToTierIsOneWholeWrite) {
  const auto data = pattern(100000);
  Object dst;
  const auto digest = transfer({data.data(), nullptr}, {nullptr, &dst}, data.size(), nullptr, true);
  EXPECT_EQ(dst.bytes, data);
  EXPECT_EQ(dst.calls, std::vector<std::size_t>{data.size()});
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(data.data(), data.size()));
  EXPECT_EQ(transfer({data.data(), nullptr}, {nullptr, &dst}, data.size(), nullptr, false), 0u);
}

// From DRAM the write is held: the writer may still be moving the bytes while
// they are hashed, and they land by its commit().
TEST(Transfer, MemoryToTierIsHashedWhileTheWriteIsHeld) {
  /// A writer whose held bytes arrive only at commit, as a device's would.
  struct Deferred final : mlbs::tiers::ObjectWriter {
    std::vector<std::byte> bytes;
    const std::byte* held = nullptr;
    std::size_t held_n = 0;
    void write(std::uint64_t, const std::byte*, std::size_t) override { FAIL() << "expected a held write"; }
    void write_held(std::uint64_t offset, const std::byte* data, std::size_t n) override {
      EXPECT_EQ(offset, 0u);
      held = data;
      held_n = n;
    }
    void commit(bool) override { bytes.assign(held, held + held_n); }
  };
  const auto data = pattern(300000);
  Deferred dst;
  const auto digest = transfer({data.data(), nullptr}, {nullptr, &dst}, data.size(), nullptr, true);
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(data.data(), data.size()));
  EXPECT_EQ(dst.held, data.data()) << "the caller's memory itself, not a copy";
  EXPECT_TRUE(dst.bytes.empty());
  dst.commit(false);
  EXPECT_EQ(dst.bytes, data);
}

// From a tier into DRAM: one whole read straight into the block, no staging needed.
TEST(Transfer, TierToMemoryIsOneWholeRead) {
  Object src;
  src.bytes = pattern(70000);
  Block into = Block::allocate(src.bytes.size());
  transfer({nullptr, &src}, {into.data(), nullptr}, src.bytes.size(), nullptr, false);
  EXPECT_EQ(std::memcmp(into.data(), src.bytes.data(), src.bytes.size()), 0);
  EXPECT_EQ(src.calls, std::vector<std::size_t>{src.bytes.size()});
}

// A verified read into DRAM goes in held pieces (up to a quarter of the record, at least 1 MiB, halving
// towards the end) straight into the block, each hashed only once it is in, while the next is read: this reader
// delivers a piece only when the next is queued, so a piece hashed early would give the wrong digest.
TEST(Transfer, VerifiedTierToMemoryHashesEachPieceWhileTheNextIsRead) {
  std::vector<std::string> log;
  Logged src;
  src.log = &log;
  const std::size_t mib = 1 << 20;
  src.bytes = pattern(16 * mib + 4096);
  Block into = Block::allocate(src.bytes.size());
  const auto digest = transfer({nullptr, &src}, {into.data(), nullptr}, src.bytes.size(), nullptr, true);
  EXPECT_EQ(std::memcmp(into.data(), src.bytes.data(), src.bytes.size()), 0);
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(src.bytes.data(), src.bytes.size()));
  std::vector<std::string> reads;
  for (const std::string& line : log)
    if (line.starts_with("read ")) reads.push_back(line.substr(5));
  const std::size_t q = 4 * mib + 4096;  // a quarter, in whole blocks
  const auto at = [](std::size_t off) { return std::to_string(off); };
  EXPECT_EQ(reads, (std::vector<std::string>{at(0), at(q), at(2 * q), at(2 * q + 4 * mib), at(2 * q + 6 * mib),
                                             at(2 * q + 7 * mib)}))
      << "two quarters, then what is left halved: 4 MiB, 2, 1 and the last 1 MiB less a block";
  // Unverified, or no larger than the least piece, the read stays one whole read().
  log.clear();
  transfer({nullptr, &src}, {into.data(), nullptr}, mib, nullptr, true);
  transfer({nullptr, &src}, {into.data(), nullptr}, src.bytes.size(), nullptr, false);
  EXPECT_EQ(log, (std::vector<std::string>{"whole 0", "whole 0"}));
}

// Between two tiers the bytes pass through staging, its capacity at a time, the last piece short.
TEST(Transfer, TierToTierGoesThroughStagingInPieces) {
  Object src, dst;
  src.bytes = pattern(3 * 4096 + 100);
  Block staging = Block::allocate(4096);
  const auto digest = transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, true);
  EXPECT_EQ(dst.bytes, src.bytes);
  EXPECT_EQ(dst.calls, (std::vector<std::size_t>{4096, 4096, 4096, 100}));
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(src.bytes.data(), src.bytes.size()));
}

// Between two tiers with room for three pieces in staging: the next piece is read (held) while the last
// is written (held), and the read after it queues behind it, so that neither device waits for the other or
// for the copying thread. Each read goes to the piece whose write was waited for by the write_held()
// before, and the bytes arrive whole even though this reader delivers a piece only once the next is
// queued (or at wait_held()) and this writer takes its bytes only at its next call.
TEST(Transfer, TierToTierReadsTheNextPieceWhileTheLastIsWritten) {
  LoggedCopy c;
  auto& [log, src, dst, staging] = c;
  const auto digest = transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, true);
  EXPECT_EQ(log, (std::vector<std::string>{
                     "read 0", "read 4096", "arrived 0",                       //
                     "write 0", "read 8192", "arrived 4096",                   //
                     "write 4096", "read 12288", "arrived 8192",               //
                     "write 8192", "read 16384", "arrived 12288",              //
                     "write 12288", "read 20480", "arrived 16384",             //
                     "write 16384", "arrived 20480", "write 20480"}));
  dst.commit(false);
  EXPECT_EQ(dst.bytes, src.bytes);
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(src.bytes.data(), src.bytes.size()));
}

// A transfer tells its caller when its last request on each tier is queued (tiers::Control): between two
// tiers the last read once it is issued, the last write once the writes before it are done; a verified
// read into memory its last read. The helper then lets the tier's next copy queue behind that request.
TEST(Transfer, TellsWhenItsLastRequestOnATierIsQueued) {
  LoggedCopy c;
  auto& [log, src, dst, staging] = c;
  mlbs::tiers::Control told;
  told.last_read = [&] { log.push_back("last read"); };
  told.last_write = [&] { log.push_back("last write"); };
  transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, false, told);
  const std::vector<std::string> tail(log.end() - 8, log.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"write 12288", "read 20480", "arrived 16384", "last read", "write 16384",
                                            "arrived 20480", "write 20480", "last write"}));
  EXPECT_EQ(std::count(log.begin(), log.end(), "last read"), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), "last write"), 1);
  // Up into memory, verified: after the last read is queued, before it is waited for.
  log.clear();
  const std::size_t mib = 1 << 20;
  src.bytes = pattern(4 * mib);
  Block into = Block::allocate(src.bytes.size());
  transfer({nullptr, &src}, {into.data(), nullptr}, src.bytes.size(), nullptr, true, told);
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2], "last read");
  EXPECT_TRUE(log.back().starts_with("arrived ")) << "the last piece arrives after";
  EXPECT_EQ(std::count(log.begin(), log.end(), "last write"), 0);
}

// Between two tiers the first piece is a quarter of a staging third and each next one doubles up to a
// third (the writer starts after a short read instead of a whole piece); towards the end the pieces halve
// with what is left (whole blocks), so the last write, which no read overlaps, is short as well.
TEST(Transfer, TierToTierStartsWithAShortPieceAndDoubles) {
  Object src, dst;
  src.bytes = pattern(300000);
  Block staging = Block::allocate(3 * 65536);
  transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, false);
  EXPECT_EQ(dst.bytes, src.bytes);
  EXPECT_EQ(src.calls,
            (std::vector<std::size_t>{16384, 32768, 65536, 65536, 61440, 32768, 16384, 9184}));
  EXPECT_EQ(dst.calls, src.calls) << "each piece read is written as it is";
}

// A copy down whose caller queues the slower tier's next copy behind its last write (Control::last_write) keeps
// whole pieces to the end: the last one's time on that tier is the next copy's time to get ready, where a
// halved one left the tier idle while it did. A copy up (last_read) still halves: its last write, on the
// faster tier, follows its last read.
TEST(Transfer, TierToTierKeepsItsLastPiecesWholeWhenTheNextCopyQueuesBehindItsLastWrite) {
  for (const bool down : {true, false}) {
    Object src, dst;
    src.bytes = pattern(300000);
    Block staging = Block::allocate(3 * 65536);
    int told = 0;
    mlbs::tiers::Control control;
    (down ? control.last_write : control.last_read) = [&] { ++told; };
    transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, false, control);
    EXPECT_EQ(dst.bytes, src.bytes);
    const std::vector<std::size_t> whole{16384, 32768, 65536, 65536, 65536, 54240};
    const std::vector<std::size_t> halved{16384, 32768, 65536, 65536, 61440, 32768, 16384, 9184};
    EXPECT_EQ(src.calls, down ? whole : halved) << (down ? "copy down: whole to the end" : "copy up: halved at the end");
    EXPECT_EQ(dst.calls, src.calls);
    EXPECT_EQ(told, 1);
  }
}

// From a tier to nowhere (recovery's verification): read through staging, hashed, nothing written.
TEST(Transfer, TierToNowhereOnlyHashes) {
  Object src;
  src.bytes = pattern(10000);
  Block staging = Block::allocate(4096);
  EXPECT_EQ(transfer({nullptr, &src}, {}, src.bytes.size(), &staging, true),
            mlbs::catalog::record_checksum(src.bytes.data(), src.bytes.size()));
  EXPECT_EQ(src.calls.size(), 3u);
}

// A cancel flag set while a piece is written stops the transfer before the next piece (tiers::Cancelled):
// nothing more is read or written; unset, the same transfer moves every piece.
TEST(Transfer, TierToTierStopsBeforeTheNextPieceOnceCancelled) {
  struct CancellingWriter final : Object {
    std::atomic<bool>* flag = nullptr;
    void write(std::uint64_t offset, const std::byte* data, std::size_t n) override {
      Object::write(offset, data, n);
      flag->store(true);  // as a reader's Engine::turn() would, during the first piece
    }
  };
  Object src;
  src.bytes = pattern(3 * 4096 + 100);
  std::atomic<bool> cancel{false};
  CancellingWriter dst;
  dst.flag = &cancel;
  Block staging = Block::allocate(4096);
  EXPECT_THROW(transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, false, {&cancel}),
               mlbs::tiers::Cancelled);
  EXPECT_EQ(dst.calls, (std::vector<std::size_t>{4096})) << "one piece, then stopped";
  EXPECT_EQ(src.calls.size(), 1u);
  Object whole;
  std::atomic<bool> never{false};
  transfer({nullptr, &src}, {nullptr, &whole}, src.bytes.size(), &staging, false, {&never});
  EXPECT_EQ(whole.bytes, src.bytes);
  // Pieces read while others are written: the read in flight is the last.
  Block pieces = Block::allocate(3 * 4096);
  cancel = false;
  dst.calls.clear();
  src.calls.clear();
  EXPECT_THROW(transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &pieces, false, {&cancel}),
               mlbs::tiers::Cancelled);
  EXPECT_EQ(dst.calls, (std::vector<std::size_t>{4096})) << "one piece, then stopped";
  EXPECT_EQ(src.calls.size(), 3u) << "the pieces queued behind the first while it was written, then nothing";
}

// From DRAM, a stoppable transfer (a copy ahead) goes in pieces of Control::piece_bytes, checked between: once
// cancelled nothing more is written; not stoppable, the bytes go in one call.
TEST(Transfer, FromMemoryStopsBeforeTheNextPieceOnceCancelled) {
  struct CancellingWriter final : Object {
    std::atomic<bool>* flag = nullptr;
    void write(std::uint64_t offset, const std::byte* data, std::size_t n) override {
      Object::write(offset, data, n);
      flag->store(true);
    }
  };
  const auto bytes = pattern(3 * 4096 + 100);
  std::atomic<bool> cancel{false};
  CancellingWriter dst;
  dst.flag = &cancel;
  EXPECT_THROW(transfer({bytes.data(), nullptr}, {nullptr, &dst}, bytes.size(), nullptr, false, {&cancel, 4096}),
               mlbs::tiers::Cancelled);
  EXPECT_EQ(dst.calls, (std::vector<std::size_t>{4096})) << "one piece, then stopped";
  Object whole;
  std::atomic<bool> never{false};
  const std::uint64_t digest =
      transfer({bytes.data(), nullptr}, {nullptr, &whole}, bytes.size(), nullptr, true, {&never, 4096});
  EXPECT_EQ(whole.bytes, bytes);
  EXPECT_EQ(whole.calls, (std::vector<std::size_t>{4096, 4096, 4096, 100}));
  EXPECT_EQ(digest, mlbs::catalog::record_checksum(bytes.data(), bytes.size())) << "hashed piece by piece, the same";
  Object once;
  transfer({bytes.data(), nullptr}, {nullptr, &once}, bytes.size(), nullptr, false);
  EXPECT_EQ(once.calls, (std::vector<std::size_t>{bytes.size()}));
}

// A stoppable transfer's pieces are at most Control::piece_bytes (whole blocks), so little is in flight when
// it is stopped: between two tiers the ramp stops there instead of at half the staging.
TEST(Transfer, StoppablePiecesAreCapped) {
  Object src, dst;
  src.bytes = pattern(300000);
  Block staging = Block::allocate(3 * 65536);
  std::atomic<bool> never{false};
  transfer({nullptr, &src}, {nullptr, &dst}, src.bytes.size(), &staging, false, {&never, 16384 + 100});
  EXPECT_EQ(dst.bytes, src.bytes);
  EXPECT_EQ(*std::max_element(src.calls.begin(), src.calls.end()), 16384u) << "a piece of whole blocks, capped";
  EXPECT_EQ(dst.calls, src.calls);
}

// Both checksum kinds are what docs/architecture.md defines however they are computed (the library's
// run-time dispatch to AVX2 or not; whole, or streamed in chunks that straddle the 1 MiB pieces):
// journals and catalogs written by either stay readable.
TEST(Checksum, BothKindsAreTheReferenceWholeAndStreamed) {
  using mlbs::catalog::ChecksumKind;
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  static_assert(mlbs::catalog::kChecksumPiece == kPiece);
  const std::vector<std::byte> bytes = pattern(3 * kPiece + 13);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{241}, std::size_t{4099},
                        kPiece - 1, kPiece, kPiece + 1, 2 * kPiece, 3 * kPiece + 13}) {
    // The library's own, never dispatched: plain, and over the pieces' little-endian digests.
    const std::uint64_t plain = XXH3_64bits(bytes.data(), n);
    std::vector<std::uint64_t> digests;
    for (std::size_t at = 0; at < n; at += kPiece) digests.push_back(XXH3_64bits(bytes.data() + at, std::min(kPiece, n - at)));
    const std::uint64_t pieces = XXH3_64bits(digests.data(), digests.size() * sizeof(std::uint64_t));
    EXPECT_EQ(mlbs::catalog::checksum(bytes.data(), n), plain) << n << " bytes";
    EXPECT_EQ(mlbs::catalog::record_checksum(bytes.data(), n, ChecksumKind::xxh3), plain) << n << " bytes";
    EXPECT_EQ(mlbs::catalog::record_checksum(bytes.data(), n), pieces) << n << " bytes, the default kind";
    for (const auto& [kind, reference] : {std::pair{ChecksumKind::xxh3, plain}, std::pair{ChecksumKind::pieces, pieces}}) {
      mlbs::catalog::Checksummer sum(kind);
      for (std::size_t at = 0, chunk = 1; at < n; at += chunk, chunk = chunk * 3 + 4093)
        sum.update(bytes.data() + at, std::min(chunk, n - at));
      EXPECT_EQ(sum.digest(), reference) << n << " bytes streamed, kind " << int(kind);
      EXPECT_EQ(sum.digest(), reference) << "digest() does not end the stream";
      mlbs::catalog::Checksummer whole(kind);  // whole pieces per call, as a 2 MiB staging gives them
      for (std::size_t at = 0; at < n; at += 2 * kPiece) whole.update(bytes.data() + at, std::min(2 * kPiece, n - at));
      EXPECT_EQ(whole.digest(), reference) << n << " bytes in 2 MiB chunks, kind " << int(kind);
    }
  }
}

// An empty record moves nothing and hashes as empty bytes do.
TEST(Transfer, EmptyRecord) {
  Object dst;
  const std::byte none{};
  EXPECT_EQ(transfer({&none, nullptr}, {nullptr, &dst}, 0, nullptr, true), mlbs::catalog::record_checksum(&none, 0));
  EXPECT_TRUE(dst.calls.empty());
}

}  // namespace
