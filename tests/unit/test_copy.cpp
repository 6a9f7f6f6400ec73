// Tests of the bulk copy into and out of DRAM slots (src/copy/): every kernel
// this CPU has is byte-exact at every size and alignment and writes nothing
// past the destination; the threshold rule; sharing copies with workers; no
// nesting inside the application's OpenMP parallel regions.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "copy/copy.hpp"

#if MLBS_TEST_OPENMP
#include <omp.h>
#endif

namespace mlbs::copy {
// Test names and failure messages show "avx2", not the enum's bytes.
void PrintTo(Path path, std::ostream* os) { *os << name(path); }
}  // namespace mlbs::copy

namespace {

namespace copy = mlbs::copy;
using copy::Path;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGuard = 4096;  // bytes checked on either side of the destination
constexpr auto kGuardByte = std::byte{0xA5};

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

/// 4096-aligned memory of at least `bytes`.
std::unique_ptr<std::byte, FreeDeleter> aligned_bytes(std::size_t bytes) {
  const std::size_t n = (bytes + 4095) / 4096 * 4096;
  return std::unique_ptr<std::byte, FreeDeleter>(static_cast<std::byte*>(std::aligned_alloc(4096, n)));
}

/// Bytes whose pattern never repeats with a short period, so a copy shifted
/// by any offset is caught.
void fill_pattern(std::byte* p, std::size_t n, std::uint32_t seed) {
  std::uint32_t x = seed | 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = static_cast<std::byte>(x >> 24);
  }
}

/// A source of `max_bytes` readable from any offset 0..63, and a destination
/// with guard bytes before and after it.
class Buffers {
 public:
  explicit Buffers(std::size_t max_bytes)
      : max_(max_bytes),
        src_(aligned_bytes(max_bytes + 64)),
        dst_(aligned_bytes(kGuard + 64 + max_bytes + kGuard)) {
    fill_pattern(src_.get(), max_bytes + 64, 12345);
  }
  const std::byte* src(std::size_t offset) const { return src_.get() + offset; }
  /// The destination at `offset` past a 4096-aligned address, guards reset.
  std::byte* dst(std::size_t offset, std::size_t bytes) {
    std::memset(dst_.get(), static_cast<int>(kGuardByte), kGuard + offset + bytes + kGuard);
    return dst_.get() + kGuard + offset;
  }
  /// Empty when the copy is exact and both guards intact, else what went wrong.
  std::string check(std::size_t src_off, std::size_t dst_off, std::size_t bytes) const {
    const std::byte* d = dst_.get() + kGuard + dst_off;
    const auto untouched = [](const std::byte* p, std::size_t n) {
      return std::all_of(p, p + n, [](std::byte b) { return b == kGuardByte; });
    };
    if (!untouched(dst_.get(), kGuard + dst_off)) return "bytes before dst written";
    if (!untouched(d + bytes, kGuard)) return "bytes past the end of dst written";
    if (bytes && std::memcmp(d, src(src_off), bytes) != 0) {
      std::size_t i = 0;
      while (d[i] == src(src_off)[i]) ++i;
      return "first wrong byte at " + std::to_string(i);
    }
    return {};
  }
  std::size_t max() const { return max_; }

 private:
  std::size_t max_;
  std::unique_ptr<std::byte, FreeDeleter> src_, dst_;
};

std::string path_name(const ::testing::TestParamInfo<Path>& info) {
  return std::string(copy::name(info.param));
}

class CopyKernel : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (!copy::available(GetParam()))
      GTEST_SKIP() << copy::name(GetParam()) << " is not available on this CPU";
  }
};

// Each kernel alone is byte-exact for small, line-edge and large sizes, from
// every source offset 0..63 to aligned and misaligned destinations, and
// writes nothing outside the destination.
TEST_P(CopyKernel, ExactAtEverySizeAndAlignment) {
  const std::vector<std::size_t> sizes = {0,    1,    63,   64,   65,   255, 256,
                                          257,  4095, 4096, 4097, kMiB + 13};
  Buffers buf(kMiB + 13);
  for (std::size_t bytes : sizes)
    for (std::size_t dst_off : {0, 1, 31, 63})
      for (std::size_t src_off = 0; src_off < 64; ++src_off) {
        copy::copy_with(GetParam(), buf.dst(dst_off, bytes), buf.src(src_off), bytes);
        const std::string err = buf.check(src_off, dst_off, bytes);
        ASSERT_TRUE(err.empty()) << err << " (bytes " << bytes << ", src offset " << src_off
                                 << ", dst offset " << dst_off << ")";
      }
}

INSTANTIATE_TEST_SUITE_P(Paths, CopyKernel,
                         ::testing::Values(Path::memcpy, Path::sse2, Path::avx2, Path::avx512),
                         path_name);

class CopyBulk : public CopyKernel {};

// bulk() with each path is exact into 4096-aligned destinations (as slot
// extents are) from misaligned sources, below and above the threshold and
// split over threads.
TEST_P(CopyBulk, ExactAroundTheThresholdFromMisalignedSources) {
  const std::size_t t = copy::settings().nt_threshold_bytes;
  Buffers buf(t + 13);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, kMiB + 13, 3 * kMiB + 1,
                            t - 1, t + 13})
    for (std::size_t src_off : {0, 1, 7, 33, 63}) {
      const auto d = copy::bulk(buf.dst(0, bytes), buf.src(src_off), bytes, {GetParam(), 2});
      EXPECT_GE(d.threads, 1u);
      const std::string err = buf.check(src_off, 0, bytes);
      ASSERT_TRUE(err.empty()) << err << " (bytes " << bytes << ", src offset " << src_off << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, CopyBulk,
                         ::testing::Values(Path::automatic, Path::memcpy, Path::sse2, Path::avx2,
                                           Path::avx512),
                         path_name);

// The threshold is half the L3 (the copy's source plus destination fill it);
// an unknown or implausible L3 gives the default's.
TEST(Copy, ThresholdFollowsTheL3Size) {
  EXPECT_EQ(copy::nt_threshold_for_l3(32 * kMiB), 16 * kMiB);
  EXPECT_EQ(copy::nt_threshold_for_l3(256 * kMiB), 128 * kMiB);
  EXPECT_EQ(copy::nt_threshold_for_l3(6 * kMiB), 3 * kMiB);
  EXPECT_EQ(copy::nt_threshold_for_l3(0), copy::kDefaultL3Bytes / 2);
  EXPECT_EQ(copy::nt_threshold_for_l3(512 << 10), copy::kDefaultL3Bytes / 2);
  const auto& s = copy::settings();
  EXPECT_GT(s.l3_bytes, 0u);
  EXPECT_EQ(s.nt_threshold_bytes, copy::nt_threshold_for_l3(s.l3_bytes));
}

// Cache sizes parse in sysfs's syntax; anything else is 0 (unknown).
TEST(Copy, ParsesSysfsCacheSizes) {
  EXPECT_EQ(copy::parse_cache_size("32768K\n"), 32 * kMiB);
  EXPECT_EQ(copy::parse_cache_size("8M"), 8 * kMiB);
  EXPECT_EQ(copy::parse_cache_size("1G"), 1024 * kMiB);
  EXPECT_EQ(copy::parse_cache_size("1048576"), kMiB);
  EXPECT_EQ(copy::parse_cache_size(""), 0u);
  EXPECT_EQ(copy::parse_cache_size("K"), 0u);
  EXPECT_EQ(copy::parse_cache_size("12Q"), 0u);
}

// Path names round-trip (they are MLBS_COPY's values); memcpy is always there.
TEST(Copy, PathNamesRoundTrip) {
  for (Path p : {Path::automatic, Path::memcpy, Path::sse2, Path::avx2, Path::avx512})
    EXPECT_EQ(copy::parse_path(copy::name(p)), p);
  EXPECT_EQ(copy::parse_path("auto"), Path::automatic);
  EXPECT_FALSE(copy::parse_path("avx1024").has_value());
  EXPECT_TRUE(copy::available(Path::memcpy));
  EXPECT_TRUE(copy::available(Path::automatic));
  EXPECT_TRUE(copy::available(copy::settings().streaming));
}

// Chunks are whole pages, about four per thread, never tiny.
TEST(Copy, ChunksArePagesAboutFourPerThread) {
  EXPECT_EQ(copy::chunk_bytes(64 * kMiB, 2), 8 * kMiB);
  EXPECT_EQ(copy::chunk_bytes(64 * kMiB, 4), 4 * kMiB);
  EXPECT_EQ(copy::chunk_bytes(kMiB, 8), 256u << 10);  // the floor
  for (std::size_t bytes : {std::size_t{4097}, kMiB + 13, 3 * kMiB + 1, 64 * kMiB + 5})
    for (unsigned t = 1; t <= 8; ++t) {
      const std::size_t c = copy::chunk_bytes(bytes, t);
      EXPECT_EQ(c % 4096, 0u) << bytes << " bytes, " << t << " threads";
      EXPECT_LE((bytes + c - 1) / c, 4u * t) << bytes << " bytes, " << t << " threads";
    }
}

// auto streams from the threshold up and uses memcpy below; a forced path
// applies at every size; an unavailable one falls back to auto.
TEST(Copy, DecisionFollowsTheThreshold) {
  const auto& s = copy::settings();
  const std::size_t t = s.nt_threshold_bytes;
  EXPECT_EQ(copy::decide(t - 1, {}).path, Path::memcpy);
  EXPECT_EQ(copy::decide(t, {}).path, s.streaming);
  EXPECT_EQ(copy::decide(t, {Path::memcpy}).path, Path::memcpy);
  EXPECT_EQ(copy::decide(64, {Path::sse2}).path, copy::available(Path::sse2) ? Path::sse2 : Path::memcpy);
  for (Path p : {Path::sse2, Path::avx2, Path::avx512})
    if (!copy::available(p)) EXPECT_EQ(copy::decide(t, {p}).path, s.streaming);
}

// Small copies stay on one thread; large ones use up to the cap, at least
// 1 MiB each.
TEST(Copy, ThreadsScaleWithSize) {
  EXPECT_EQ(copy::decide(4096, {Path::automatic, 8}).threads, 1u);
  EXPECT_EQ(copy::decide(64 * kMiB, {Path::automatic, 4}).threads, 4u);
  EXPECT_EQ(copy::decide(3 * kMiB, {Path::automatic, 8}).threads, 3u);
  EXPECT_GE(copy::default_threads(), 1u);
}

// describe() names the streaming kernel and the threads, for stats and benchmarks.
TEST(Copy, DescribeNamesPathAndThreads) {
  const std::string d = copy::describe();
  EXPECT_NE(d.find(copy::name(copy::settings().streaming)), std::string::npos) << d;
  EXPECT_NE(d.find("thread"), std::string::npos) << d;
}

// Outside a parallel region a large copy is shared with a worker (one that
// starts late is not waited for, so this may take a few tries on a busy
// machine).
TEST(Copy, OutsideAParallelRegionWorkersJoinTheCopy) {
  Buffers buf(8 * kMiB);
  unsigned most = 0;
  for (int i = 0; i < 200 && most < 2; ++i) {
    const auto d = copy::bulk(buf.dst(0, 8 * kMiB), buf.src(5), 8 * kMiB, {Path::automatic, 2});
    most = std::max(most, d.threads);
    ASSERT_EQ(buf.check(5, 0, 8 * kMiB), "");
  }
  EXPECT_EQ(most, 2u);
}

// Many copies in a row, each inviting more workers than there are cores:
// every one is exact whether a worker joins, joins late or not at all.
TEST(Copy, WorkersThatStartLateNeverCorruptACopy) {
  Buffers buf(4 * kMiB + 4096);
  for (int i = 0; i < 100; ++i) {
    const std::size_t bytes = 4 * kMiB + static_cast<std::size_t>(i) * 37;
    const std::size_t off = static_cast<std::size_t>(i) % 64;
    copy::bulk(buf.dst(0, bytes), buf.src(off), bytes, {i % 2 ? Path::automatic : Path::memcpy, 4});
    ASSERT_EQ(buf.check(off, 0, bytes), "") << "copy " << i;
  }
}

// bulk_pieces copies exactly and calls back once per piece, with that piece's index, source and length
// (the last short), from whichever thread copied it.
TEST(Copy, PiecesAreCopiedExactlyAndEachIsHandedOnOnce) {
  struct Seen {
    std::vector<const std::byte*> src;
    std::vector<std::size_t> n;
  };
  for (const std::size_t bytes : {std::size_t{1}, kMiB - 1, kMiB, 4 * kMiB + 4096 + 37}) {
    Buffers buf(4 * kMiB + 4096 + 37);
    const std::size_t pieces = (bytes + kMiB - 1) / kMiB;
    Seen seen{std::vector<const std::byte*>(pieces), std::vector<std::size_t>(pieces)};
    copy::bulk_pieces(
        buf.dst(0, bytes), buf.src(3), bytes, kMiB,
        [](void* ctx, std::size_t i, const std::byte* src, std::size_t n) noexcept {
          auto& s = *static_cast<Seen*>(ctx);
          s.src[i] = src;  // each index once: a second call for it would be a race TSan reports
          s.n[i] = n;
        },
        &seen);
    ASSERT_EQ(buf.check(3, 0, bytes), "") << bytes << " bytes";
    for (std::size_t i = 0; i < pieces; ++i) {
      EXPECT_EQ(seen.src[i], buf.src(3) + i * kMiB) << "piece " << i;
      EXPECT_EQ(seen.n[i], std::min(kMiB, bytes - i * kMiB)) << "piece " << i;
    }
  }
}

// Application threads copying at once: one gets the workers, the others copy
// alone; none waits for another, all are exact.
TEST(Copy, ConcurrentCallersAreExact) {
  constexpr int kCallers = 3;
  constexpr std::size_t bytes = 4 * kMiB + 1;
  std::vector<std::unique_ptr<Buffers>> bufs;
  for (int i = 0; i < kCallers; ++i) bufs.push_back(std::make_unique<Buffers>(bytes));
  std::vector<std::string> errors(kCallers);
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < kCallers; ++t)
      callers.emplace_back([&, t] {
        for (int i = 0; i < 10 && errors[t].empty(); ++i) {
          copy::bulk(bufs[t]->dst(0, bytes), bufs[t]->src(t), bytes, {Path::automatic, 2});
          errors[t] = bufs[t]->check(t, 0, bytes);
        }
      });
  }
  for (int t = 0; t < kCallers; ++t) EXPECT_EQ(errors[t], "") << "caller " << t;
}

// Called from inside the application's parallel region, each thread copies
// alone: no nested team (even with nesting allowed), no deadlock, exact bytes.
TEST(Copy, InsideAParallelRegionItDoesNotNest) {
#if MLBS_TEST_OPENMP
  ASSERT_TRUE(copy::application_uses_openmp());  // found through the weak symbols
  constexpr std::size_t bytes = 8 * kMiB + 3;
  std::array<std::unique_ptr<Buffers>, 2> bufs{std::make_unique<Buffers>(bytes),
                                               std::make_unique<Buffers>(bytes)};
  std::array<std::byte*, 2> dsts{bufs[0]->dst(0, bytes), bufs[1]->dst(0, bytes)};
  std::array<copy::Decision, 2> got{};
  int team = 0;
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
  {
    const int me = omp_get_thread_num();
    if (me == 0) team = omp_get_num_threads();
    if (me < 2) got[me] = copy::bulk(dsts[me], bufs[me]->src(me + 1), bytes, {Path::automatic, 4});
  }
  omp_set_max_active_levels(levels);
  for (int i = 0; i < std::min(team, 2); ++i) {
    EXPECT_EQ(got[i].threads, 1u) << "thread " << i;
    EXPECT_EQ(bufs[i]->check(i + 1, 0, bytes), "") << "thread " << i;
  }
#else
  GTEST_SKIP() << "tests built without OpenMP (ThreadSanitizer build)";
#endif
}

}  // namespace
