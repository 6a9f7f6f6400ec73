// Tests of the io_uring + O_DIRECT directory backend (src/tiers/uring/) and
// of how a directory tier picks its I/O path (src/tiers/directory/io_select).
// Tests that need io_uring at run time skip when it cannot be set up here.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mlbs/config.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/registry.hpp"
#include "tiers/uring/completion.hpp"
#include "tiers/uring/depth.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::IoBackend;
using mlbs::Tier;
using mlbs::tiers::Backend;
using mlbs::tiers::ObjectRef;
namespace uring = mlbs::tiers::uring;

constexpr const char* kDirect = "io_uring+O_DIRECT";

/// Sets an environment variable for one test, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<std::byte> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 12)) & 0xff);
  return v;
}

/// Aligned memory, as the engine hands the backend (slot extents, staging).
mlbs::detail::Block aligned_copy(const std::vector<std::byte>& v) {
  auto b = mlbs::detail::Block::allocate(std::max<std::size_t>(v.size(), 1));
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size());
  return b;
}

Tier uring_desc(const std::string& path, unsigned queue_depth = 4, std::uint64_t request = 64 << 10) {
  Tier t = Tier::directory(path);
  t.io_backend = IoBackend::io_uring;
  t.queue_depth = queue_depth;
  t.io_request_bytes = request;
  return t;
}

/// One io_uring tier with space "u.space" (store "u"); skips without io_uring.
class UringBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mlbs::tiers::io_uring_compiled()) GTEST_SKIP() << "built without io_uring";
    if (int err = mlbs::tiers::io_uring_setup_error())
      GTEST_SKIP() << "io_uring unavailable here: " << std::strerror(err);
    tier = mlbs::tiers::make_backend(1, uring_desc(root));
    tier->probe();
    tier->create_space(space);
  }
  void put(const ObjectRef& r, const std::vector<std::byte>& data, std::size_t piece) {
    const auto src = aligned_copy(data);
    auto w = tier->create(r, data.size());
    for (std::size_t off = 0; off < data.size(); off += piece)
      w->write(off, src.data() + off, std::min(piece, data.size() - off));
    w->commit(false);
  }
  std::vector<std::byte> get(const ObjectRef& r, std::size_t size, std::size_t piece) {
    auto dst = mlbs::detail::Block::allocate(std::max<std::size_t>(size, 1));
    auto rd = tier->open(r, size);
    for (std::size_t off = 0; off < size; off += piece)
      rd->read(off, dst.data() + off, std::min(piece, size - off));
    return {dst.data(), dst.data() + size};
  }
  fs::path file() const { return fs::path(root) / space / "000000000000002a-3.rec"; }

  mlbs::test::TempDir dir;
  std::string root = dir / "tier";
  std::unique_ptr<Backend> tier;
  std::string space = "u.space", store = "u";
  ObjectRef ref{space, 42, 3, store};
};

// ---------------------------------------------------------------------------
// What one completion means (pure; synthetic results)

// A request that transfers everything at once is finished.
TEST(UringCompletion, FullTransferFinishes) {
  uring::Progress p{8192, 8192};
  EXPECT_EQ(uring::on_completion(p, 8192).next, uring::Next::finished);
  EXPECT_EQ(p.done, 8192u);
}

// A short, aligned transfer resumes right where it stopped.
TEST(UringCompletion, ShortAlignedResubmitsRemainder) {
  uring::Progress p{16384, 16384};
  EXPECT_EQ(uring::on_completion(p, 4096).next, uring::Next::resubmit);
  EXPECT_EQ(p.pos, 4096u);
  EXPECT_EQ(uring::on_completion(p, 12288).next, uring::Next::finished);
}

// A short, unaligned transfer resumes at the aligned point below it (O_DIRECT offsets).
TEST(UringCompletion, ShortUnalignedResumesAtAlignedPoint) {
  uring::Progress p{16384, 16384};
  EXPECT_EQ(uring::on_completion(p, 5000).next, uring::Next::resubmit);
  EXPECT_EQ(p.done, 5000u);
  EXPECT_EQ(p.pos, 4096u);
  EXPECT_EQ(uring::on_completion(p, 16384 - 4096).next, uring::Next::finished);
}

// A padded last block that ends early at end of file is enough when the needed bytes came.
TEST(UringCompletion, TailEndingAtEofFinishes) {
  uring::Progress p{4096, 100};
  EXPECT_EQ(uring::on_completion(p, 100).next, uring::Next::finished);
}

// Fewer bytes than needed, then nothing new: end of file (err 0), not a loop.
TEST(UringCompletion, TruncatedFileFailsAsEndOfFile) {
  uring::Progress p{8192, 8192};
  EXPECT_EQ(uring::on_completion(p, 5000).next, uring::Next::resubmit);
  const auto step = uring::on_completion(p, 5000 - 4096);  // the same end again
  EXPECT_EQ(step.next, uring::Next::failed);
  EXPECT_EQ(step.err, 0);
}

// A first result of 0 bytes is end of file.
TEST(UringCompletion, ZeroResultIsEndOfFile) {
  uring::Progress p{4096, 4096};
  const auto step = uring::on_completion(p, 0);
  EXPECT_EQ(step.next, uring::Next::failed);
  EXPECT_EQ(step.err, 0);
}

// -EAGAIN and -EINTR resubmit the same request, up to a bound.
TEST(UringCompletion, EagainAndEintrRetryThenGiveUp) {
  uring::Progress p{4096, 4096};
  EXPECT_EQ(uring::on_completion(p, -EAGAIN, 3).next, uring::Next::resubmit);
  EXPECT_EQ(uring::on_completion(p, -EINTR, 3).next, uring::Next::resubmit);
  EXPECT_EQ(p.pos, 0u);
  EXPECT_EQ(uring::on_completion(p, -EAGAIN, 3).next, uring::Next::resubmit);
  const auto step = uring::on_completion(p, -EAGAIN, 3);
  EXPECT_EQ(step.next, uring::Next::failed);
  EXPECT_EQ(step.err, EAGAIN);
}

// Progress resets the retry count.
TEST(UringCompletion, ProgressResetsRetries) {
  uring::Progress p{8192, 8192};
  EXPECT_EQ(uring::on_completion(p, -EAGAIN, 1).next, uring::Next::resubmit);
  EXPECT_EQ(uring::on_completion(p, 4096, 1).next, uring::Next::resubmit);
  EXPECT_EQ(uring::on_completion(p, -EAGAIN, 1).next, uring::Next::resubmit);
  EXPECT_EQ(uring::on_completion(p, 4096, 1).next, uring::Next::finished);
}

// Other errors fail with their errno.
TEST(UringCompletion, ErrorsFailWithErrno) {
  uring::Progress p{4096, 4096};
  const auto step = uring::on_completion(p, -ENOSPC);
  EXPECT_EQ(step.next, uring::Next::failed);
  EXPECT_EQ(step.err, ENOSPC);
}

// ---------------------------------------------------------------------------
// Round trips through the ring

struct RoundTripCase {
  std::size_t size;
  std::size_t piece;  // the engine's chunk
};

class UringRoundTrip : public UringBackend, public ::testing::WithParamInterface<RoundTripCase> {};

// Objects of every awkward size come back byte-exact, written and read in chunks.
TEST_P(UringRoundTrip, ByteExact) {
  const auto [size, piece] = GetParam();
  const auto data = pattern(size);
  put(ref, data, piece);
  EXPECT_EQ(fs::file_size(file()), size) << "the padded tail is cut back to the record's size";
  EXPECT_EQ(get(ref, size, piece), data);
}

INSTANTIATE_TEST_SUITE_P(Sizes, UringRoundTrip,
                         ::testing::Values(RoundTripCase{0, 4096}, RoundTripCase{1, 4096},
                                           RoundTripCase{4095, 4096}, RoundTripCase{4096, 4096},
                                           RoundTripCase{4097, 8192}, RoundTripCase{(1 << 20) + 123, 1 << 20},
                                           RoundTripCase{(3 << 20) + 5, 1 << 20},       // several chunks
                                           RoundTripCase{(1 << 20) + 4096, 256 << 10}),  // many requests
                         [](const auto& info) {
                           return "size" + std::to_string(info.param.size) + "_chunk" +
                                  std::to_string(info.param.piece);
                         });

// The backend says which path it runs.
TEST_F(UringBackend, ReportsIoUringPath) {
  EXPECT_EQ(tier->io_path().backend, kDirect);
  EXPECT_EQ(tier->io_path().fallback, "");
}

// Queue depth 1 with one-block requests still moves a multi-request object.
TEST_F(UringBackend, QueueDepthOneAndSmallRequests) {
  tier = mlbs::tiers::make_backend(1, uring_desc(root, 1, 4096));
  tier->probe();
  const auto data = pattern(10 * 4096 + 7);
  put(ref, data, 3 * 4096);
  EXPECT_EQ(get(ref, data.size(), 5 * 4096), data);
}

// Writes in pieces that are not block multiples (carried partial blocks) round-trip.
TEST_F(UringBackend, UnalignedWritePiecesRoundTrip) {
  const auto data = pattern(50'000);
  for (std::size_t piece : {1000u, 4095u, 4097u, 12'345u}) {
    put(ref, data, piece);
    EXPECT_EQ(get(ref, data.size(), 1 << 20), data) << "piece " << piece;
  }
}

// Buffers at unaligned addresses (e.g. a std::vector) go through bounce buffers.
TEST_F(UringBackend, UnalignedBuffersRoundTrip) {
  const auto data = pattern(3 * 65536 + 333);
  std::vector<std::byte> src(data.size() + 1);
  std::memcpy(src.data() + 1, data.data(), data.size());
  {
    auto w = tier->create(ref, data.size());
    w->write(0, src.data() + 1, data.size());
    w->commit(false);
  }
  std::vector<std::byte> back(data.size() + 1);
  auto r = tier->open(ref, data.size());
  r->read(0, back.data() + 1, data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + 1));
}

// Reads at any offset and length return exactly those bytes.
TEST_F(UringBackend, ReadsAtArbitraryOffsets) {
  const auto data = pattern(300'000);
  put(ref, data, 1 << 20);
  auto r = tier->open(ref, data.size());
  const std::pair<std::size_t, std::size_t> cases[] = {
      {0, 1}, {1, 1}, {4095, 2}, {4096, 4096}, {100, 200'000}, {8192, 70'000}, {299'999, 1}, {123'456, 176'544}};
  for (auto [off, len] : cases) {
    auto buf = mlbs::detail::Block::allocate(len);
    r->read(off, buf.data(), len);
    EXPECT_TRUE(std::equal(data.begin() + off, data.begin() + off + len, buf.data()))
        << "offset " << off << " length " << len;
  }
}

// Writes whose offsets are not sequential switch the file to buffered I/O and stay correct.
TEST_F(UringBackend, NonSequentialWritesStayCorrect) {
  const auto data = pattern(40'000);
  const auto src = aligned_copy(data);
  {
    auto w = tier->create(ref, data.size());
    w->write(20'000, src.data() + 20'000, 20'000);
    w->write(0, src.data(), 20'000);
    w->commit(false);
  }
  EXPECT_EQ(get(ref, data.size(), 8192), data);
}

// A durable commit leaves the complete file under its name.
TEST_F(UringBackend, DurableCommitLeavesCompleteFile) {
  const auto data = pattern(70'001);
  const auto src = aligned_copy(data);
  {
    auto w = tier->create(ref, data.size());
    w->write(0, src.data(), data.size());
    w->commit(true);
  }
  std::ifstream in(file(), std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(raw.size(), data.size());
  EXPECT_EQ(std::memcmp(raw.data(), data.data(), data.size()), 0);
}

// The file holds what was written, even when create() announced more (blocks allocated up front are cut).
TEST_F(UringBackend, FileHoldsWhatWasWritten) {
  const auto data = pattern(5000);
  const auto src = aligned_copy(data);
  {
    auto w = tier->create(ref, 3 << 20);
    w->write(0, src.data(), data.size());
    w->commit(false);
  }
  EXPECT_EQ(fs::file_size(file()), data.size());
  EXPECT_EQ(get(ref, data.size(), 4096), data);
}

// A held write (requests left in flight while the caller hashes) is whole
// once committed: more requests than the queue holds, an unaligned tail, and a
// plain write after it that continues the object.
TEST_F(UringBackend, HeldWriteIsCompleteOnceCommitted) {
  const auto data = pattern(20 * 65536 + 3000);  // 21 requests of 64 KiB over a queue of 4
  const auto src = aligned_copy(data);
  {
    auto w = tier->create(ref, data.size());
    w->write_held(0, src.data(), 12 * 65536 + 1000);
    w->write(12 * 65536 + 1000, src.data() + 12 * 65536 + 1000, data.size() - (12 * 65536 + 1000));
    w->commit(true);
  }
  EXPECT_EQ(fs::file_size(file()), data.size());
  EXPECT_EQ(get(ref, data.size(), 1 << 20), data);
  {
    auto w = tier->create(ref, data.size());
    w->write_held(0, src.data(), data.size());
    w->commit(false);
  }
  EXPECT_EQ(get(ref, data.size(), 1 << 20), data);
}

// Held writes queue behind the one before and return once it is done, so its buffer may be refilled then
// (tiers::transfer's three buffers): pieces of awkward sizes through three rotating buffers, each scribbled
// over as soon as the contract frees it, are byte-exact once committed.
TEST_F(UringBackend, HeldWritesQueueBehindTheLastAndFreeItsBuffer) {
  const std::size_t pieces[] = {3 * 65536, 2 * 65536 + 100, 3 * 65536, 5000, 65536, 3 * 65536 - 7, 4096};
  std::size_t total = 0;
  for (std::size_t n : pieces) total += n;
  const auto data = pattern(total, 3);
  std::vector<mlbs::detail::Block> buf;
  for (int i = 0; i < 3; ++i) buf.push_back(mlbs::detail::Block::allocate(3 * 65536));
  {
    auto w = tier->create(ref, total);
    std::size_t off = 0, k = 0;
    for (std::size_t n : pieces) {
      std::memcpy(buf[k % 3].data(), data.data() + off, n);
      w->write_held(off, buf[k % 3].data(), n);
      if (k > 0) std::memset(buf[(k - 1) % 3].data(), 0xEE, 3 * 65536);  // done once this call returned
      off += n;
      ++k;
    }
    w->commit(false);
  }
  EXPECT_EQ(get(ref, total, 1 << 20), data);
}

// A held write and a read of another object on the same thread (a copy between two tiers reads the next
// chunk while the last is written) each get their own completions: both byte-exact.
TEST_F(UringBackend, HeldWriteAndAReadOnOneThreadDoNotMix) {
  const ObjectRef other{space, 43, 1, store};
  const auto old_data = pattern(6 * 65536 + 17, 2);
  put(other, old_data, 1 << 20);
  const auto data = pattern(12 * 65536 + 999);
  const auto src = aligned_copy(data);
  auto into = aligned_copy(std::vector<std::byte>(old_data.size()));
  {
    auto w = tier->create(ref, data.size());
    w->write_held(0, src.data(), 8 * 65536);  // more requests than the queue holds: some still in flight
    auto r = tier->open(other, old_data.size());
    r->read(0, into.data(), old_data.size());
    w->write_held(8 * 65536, src.data() + 8 * 65536, data.size() - 8 * 65536);
    r->read(0, into.data(), 65536);
    w->commit(false);
  }
  EXPECT_EQ(std::memcmp(into.data(), old_data.data(), old_data.size()), 0);
  EXPECT_EQ(get(ref, data.size(), 1 << 20), data);
}

// A held read returns with its requests in flight (more than the queue holds here) and a held write on
// the same thread meanwhile keeps its own: once wait_held() returns both byte-exact, aligned or not.
TEST_F(UringBackend, HeldReadBesideAHeldWriteIsByteExact) {
  const ObjectRef other{space, 43, 1, store};
  const auto old_data = pattern(9 * 65536 + 17, 2);
  put(other, old_data, 1 << 20);
  const auto data = pattern(8 * 65536);
  const auto src = aligned_copy(data);
  auto into = aligned_copy(std::vector<std::byte>(old_data.size()));
  {
    auto w = tier->create(ref, data.size());
    auto r = tier->open(other, old_data.size());
    r->read_held(0, into.data(), 6 * 65536);
    w->write_held(0, src.data(), data.size());
    r->wait_held();
    r->read_held(6 * 65536, into.data() + 6 * 65536, old_data.size() - 6 * 65536);  // ends in a bounce
    r->wait_held();
    w->commit(false);
  }
  EXPECT_EQ(std::memcmp(into.data(), old_data.data(), old_data.size()), 0);
  EXPECT_EQ(get(ref, data.size(), 1 << 20), data);
}

// Held reads queue behind the last (three rotating buffers, the pieces' sizes ragged so that some end in
// a bounce): each call returns once the piece before is in, which is then checked and scribbled over as
// the contract frees it; wait_held() delivers the last. Byte-exact.
TEST_F(UringBackend, HeldReadsQueueBehindTheLastAndReturnOnceItIsIn) {
  const std::size_t pieces[] = {3 * 65536, 2 * 65536 + 100, 3 * 65536, 5000, 65536, 3 * 65536 - 7, 4096};
  std::size_t total = 0;
  for (std::size_t n : pieces) total += n;
  const auto data = pattern(total, 4);
  put(ref, data, 1 << 20);
  std::vector<mlbs::detail::Block> buf;
  for (int i = 0; i < 3; ++i) buf.push_back(mlbs::detail::Block::allocate(3 * 65536));
  std::vector<std::byte> back(total);
  auto r = tier->open(ref, total);
  std::size_t off = 0, k = 0, prev_off = 0, prev_n = 0;
  const auto keep = [&](std::size_t j) {  // piece j is in its buffer: keep it, then scribble over it
    std::memcpy(back.data() + prev_off, buf[j % 3].data(), prev_n);
    std::memset(buf[j % 3].data(), 0xEE, 3 * 65536);
  };
  for (std::size_t n : pieces) {
    r->read_held(off, buf[k % 3].data(), n);
    if (k > 0) keep(k - 1);
    prev_off = off, prev_n = n;
    off += n;
    ++k;
  }
  r->wait_held();
  keep(k - 1);
  EXPECT_EQ(back, data);
}

// A held read past the end shows its error at wait_held() (or at once), never as wrong bytes; a reader
// dropped with a held read waits for its requests first.
TEST_F(UringBackend, HeldReadPastEndFailsByWaitHeld) {
  put(ref, pattern(100), 4096);
  auto r = tier->open(ref, 100);
  auto buf = mlbs::detail::Block::allocate(8192);
  EXPECT_THROW(
      {
        r->read_held(80, buf.data(), 4096);
        r->wait_held();
      },
      mlbs::IoError);
  auto dropped = tier->open(ref, 100);
  dropped->read_held(0, buf.data(), 100);
  dropped.reset();
}

// A capped tier keeps only the requests its cap needs in flight (at least two), so that a record written
// down does not queue milliseconds of writes ahead of the reads feeding a slower tier; uncapped, the
// configured depth; never more than it.
TEST(UringDepth, CappedTierKeepsWhatItsCapNeedsInFlight) {
  using mlbs::tiers::uring::requests_in_flight;
  Tier t = Tier::directory("x");
  t.queue_depth = 8;
  t.io_request_bytes = 1 << 20;
  EXPECT_EQ(requests_in_flight(t), 8u) << "uncapped";
  t.bandwidth_bytes_per_s = 200ull << 20;
  EXPECT_EQ(requests_in_flight(t), 2u) << "200 MiB/s moves 0.2 MiB in a millisecond: two requests";
  t.bandwidth_bytes_per_s = 1ull << 30;
  EXPECT_EQ(requests_in_flight(t), 2u);
  t.bandwidth_bytes_per_s = 5ull << 30;
  EXPECT_EQ(requests_in_flight(t), 6u) << "5 GiB/s moves 5.1 MiB in a millisecond";
  t.bandwidth_bytes_per_s = 100ull << 30;
  EXPECT_EQ(requests_in_flight(t), 8u) << "never beyond queue_depth";
  t.queue_depth = 1;
  EXPECT_EQ(requests_in_flight(t), 1u) << "nor beyond a depth of one";
}

// A held writer dropped without commit() waits for its requests before the
// caller's memory goes (ASan would see the kernel write from freed memory
// otherwise) and removes the partial file.
TEST_F(UringBackend, UncommittedHeldWriterWaitsThenRemovesItsFile) {
  {
    const auto src = aligned_copy(pattern(8 * 65536));
    auto w = tier->create(ref, 8 * 65536);
    w->write_held(0, src.data(), 8 * 65536);
    w.reset();
  }
  EXPECT_FALSE(fs::exists(file()));
  EXPECT_EQ(mlbs::test::stored_records(root), 0u);
}

// A writer destroyed without commit() removes its partial file.
TEST_F(UringBackend, UncommittedWriterRemovesPartialFile) {
  const auto src = aligned_copy(pattern(10'000));
  {
    auto w = tier->create(ref, 10'000);
    w->write(0, src.data(), 10'000);
  }
  EXPECT_FALSE(fs::exists(file()));
  EXPECT_EQ(mlbs::test::stored_records(root), 0u);
}

// A file cut short after it was opened makes the read fail (EIO), never return wrong bytes.
TEST_F(UringBackend, TruncatedFileReadIsError) {
  const auto data = pattern(3 * 4096 + 10);
  put(ref, data, 1 << 20);
  auto r = tier->open(ref, data.size());
  fs::resize_file(file(), 5000);
  auto buf = mlbs::detail::Block::allocate(data.size());
  try {
    r->read(0, buf.data(), data.size());
    FAIL() << "expected IoError";
  } catch (const mlbs::IoError& e) {
    EXPECT_EQ(e.error_code(), EIO);
    EXPECT_EQ(e.context().tier, tier->label());
    EXPECT_EQ(e.context().id, 42u);
  }
}

// Reading past the end of an object is an error.
TEST_F(UringBackend, ReadPastEndIsError) {
  put(ref, pattern(100), 4096);
  auto r = tier->open(ref, 100);
  std::vector<std::byte> buf(50);
  EXPECT_THROW(r->read(80, buf.data(), buf.size()), mlbs::IoError);
}

// Opening with the wrong size is a SizeMismatchError; the descriptor is not leaked.
TEST_F(UringBackend, WrongSizeIsSizeMismatch) {
  put(ref, pattern(4096), 4096);
  EXPECT_THROW(tier->open(ref, 4095), mlbs::SizeMismatchError);
}

// A missing object is an ENOENT error naming the id.
TEST_F(UringBackend, OpenMissingObjectThrows) {
  ObjectRef other{space, 7, 1, store};
  try {
    tier->open(other, 1);
    FAIL() << "expected an error";
  } catch (const mlbs::Error& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
    EXPECT_EQ(e.context().id, 7u);
  }
}

// Several threads share one backend, each moving its own objects (one ring per thread).
TEST_F(UringBackend, ThreadsShareOneBackend) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        ObjectRef r{space, std::uint64_t(t * 100 + i), 1, store};
        const auto data = pattern(100'000 + std::size_t(t) * 4096 + std::size_t(i), unsigned(t + i));
        put(r, data, 32 << 10);
        if (get(r, data.size(), 48 << 10) != data) return;
      }
      ok[std::size_t(t)] = 1;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[std::size_t(t)], 1) << "thread " << t;
}

// An object may be created on one thread and used on another (rings hold nothing between calls).
TEST_F(UringBackend, ObjectsMayChangeThreads) {
  const auto data = pattern(200'003);
  const auto src = aligned_copy(data);
  auto w = tier->create(ref, data.size());
  std::thread([&] { w->write(0, src.data(), 100'000); }).join();
  w->write(100'000, src.data() + 100'000, data.size() - 100'000);
  std::thread([&] { w->commit(false); }).join();
  EXPECT_EQ(get(ref, data.size(), 1 << 20), data);
}

// ENOSPC from the device is a DeviceFullError naming the tier. Staged on a
// 256 KiB tmpfs mounted in a private mount namespace of a child process.
TEST_F(UringBackend, DeviceFullIsDeviceFullError) {
  const std::string small = dir / "small";
  fs::create_directories(small);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child runs on a fresh thread: its own ring, not one shared with the parent.
    int code = 0;
    std::thread([&] {
      if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        code = 77;
        return;
      }
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
      if (::mount("mlbs-test", small.c_str(), "tmpfs", 0, "size=256k") != 0) {
        code = 77;
        return;
      }
      try {
        auto t = mlbs::tiers::make_backend(1, uring_desc(small));
        t->probe();
        t->create_space("s");
        const std::string sp = "s", st = "u";
        const auto src = aligned_copy(pattern(1 << 20));
        auto w = t->create({sp, 1, 1, st}, 1 << 20);
        w->write(0, src.data(), 1 << 20);
        w->commit(false);
        code = 1;  // no error at all
      } catch (const mlbs::DeviceFullError& e) {
        code = e.error_code() == ENOSPC && !e.context().tier.empty() ? 0 : 2;
      } catch (const mlbs::TierError&) {
        code = 77;  // this tmpfs takes no O_DIRECT (older kernels)
      } catch (...) {
        code = 3;
      }
    }).join();
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a small tmpfs with O_DIRECT here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error, 2: wrong errno or no tier, 3: another error type";
}

// ---------------------------------------------------------------------------
// Choosing the path, and falling back

// auto takes io_uring when it can be had.
TEST_F(UringBackend, AutoPicksIoUring) {
  auto t = mlbs::tiers::make_backend(1, Tier::directory(dir / "auto"));
  t->probe();
  EXPECT_EQ(t->io_path().backend, kDirect);
}

// A failing io_uring set-up (simulated) makes auto run pread, saying why, and work.
TEST(UringFallback, AutoFallsBackWhenSetupFails) {
  ScopedEnv fail("MLBS_TEST_URING_FAIL", "EPERM");
  mlbs::test::TempDir dir;
  auto t = mlbs::tiers::make_backend(1, Tier::directory(dir / "t"));
  t->probe();
  EXPECT_EQ(t->io_path().backend, "pread");
  EXPECT_NE(t->io_path().fallback.find("io_uring"), std::string::npos) << t->io_path().fallback;
  const std::string space = "s", store = "u";
  t->create_space(space);
  const auto data = pattern(5000);
  auto w = t->create({space, 1, 1, store}, data.size());
  w->write(0, data.data(), data.size());
  w->commit(false);
  std::vector<std::byte> back(data.size());
  t->open({space, 1, 1, store}, data.size())->read(0, back.data(), back.size());
  EXPECT_EQ(back, data);
}

// An explicit io_uring that cannot be set up is a TierError naming the tier.
TEST(UringFallback, ExplicitIoUringUnavailableIsTierError) {
  ScopedEnv fail("MLBS_TEST_URING_FAIL", "ENOSYS");
  mlbs::test::TempDir dir;
  try {
    mlbs::tiers::make_backend(1, uring_desc(dir / "t"))->probe();
    FAIL() << "expected TierError";
  } catch (const mlbs::TierError& e) {
    EXPECT_NE(e.context().tier.find("tier 1"), std::string::npos);
    EXPECT_NE(e.message().find("io_uring"), std::string::npos) << e.what();
  }
}

// A file system that refuses O_DIRECT (simulated) makes auto run pread, found by probe().
TEST(UringFallback, AutoFallsBackWhenODirectRefused) {
  if (!mlbs::tiers::io_uring_compiled() || mlbs::tiers::io_uring_setup_error())
    GTEST_SKIP() << "io_uring unavailable here";
  ScopedEnv fail("MLBS_TEST_ODIRECT_FAIL", "1");
  mlbs::test::TempDir dir;
  auto t = mlbs::tiers::make_backend(1, Tier::directory(dir / "t"));
  t->probe();
  EXPECT_EQ(t->io_path().backend, "pread");
  EXPECT_NE(t->io_path().fallback.find("O_DIRECT"), std::string::npos) << t->io_path().fallback;
  // Explicitly asked for, the same is a TierError.
  EXPECT_THROW(mlbs::tiers::make_backend(1, uring_desc(dir / "u"))->probe(), mlbs::TierError);
}

// A tier that uses the page cache gets pread under auto.
TEST(UringFallback, PageCacheMeansPread) {
  mlbs::test::TempDir dir;
  Tier desc = Tier::directory(dir / "t");
  desc.page_cache = true;
  auto t = mlbs::tiers::make_backend(1, desc);
  t->probe();
  EXPECT_EQ(t->io_path().backend, "pread");
  EXPECT_NE(t->io_path().fallback.find("page_cache"), std::string::npos);
}

// io_backend = pread is pread, with nothing to explain.
TEST(UringFallback, ExplicitPreadIsPread) {
  mlbs::test::TempDir dir;
  Tier desc = Tier::directory(dir / "t");
  desc.io_backend = IoBackend::pread;
  auto t = mlbs::tiers::make_backend(1, desc);
  t->probe();
  EXPECT_EQ(t->io_path().backend, "pread");
  EXPECT_EQ(t->io_path().fallback, "");
}

// The runtime shows the path each tier runs in stats(), and a fallback's reason.
TEST(UringFallback, RuntimeStatsNameTheBackend) {
  mlbs::test::TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {Tier::memory(1 << 20), Tier::directory(dir / "a"), Tier::directory(dir / "b")};
  cfg.tiers[2].io_backend = IoBackend::pread;
  {
    ScopedEnv fail("MLBS_TEST_URING_FAIL", "1");
    mlbs::Runtime rt(cfg);
    const auto s = rt.stats();
    EXPECT_EQ(s.tiers[0].io_backend, "");
    EXPECT_EQ(s.tiers[1].io_backend, "pread");
    EXPECT_NE(s.tiers[1].io_fallback, "");
    EXPECT_EQ(s.tiers[2].io_backend, "pread");
    EXPECT_EQ(s.tiers[2].io_fallback, "");
  }
  if (mlbs::tiers::io_uring_compiled() && mlbs::tiers::io_uring_setup_error() == 0) {
    mlbs::Runtime rt(cfg);
    EXPECT_EQ(rt.stats().tiers[1].io_backend, kDirect);
  }
}

// A runtime whose tier demands io_uring that cannot be had fails to start with TierError.
TEST(UringFallback, RuntimeWithUnavailableIoUringThrows) {
  ScopedEnv fail("MLBS_TEST_URING_FAIL", "1");
  mlbs::test::TempDir dir;
  mlbs::Config cfg;
  cfg.tiers = {Tier::memory(1 << 20), uring_desc(dir / "a")};
  EXPECT_THROW(mlbs::Runtime rt(cfg), mlbs::TierError);
}

}  // namespace
