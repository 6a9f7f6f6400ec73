// Record and metadata checksums (src/catalog/checksum.*): what hashing leaves behind on the caller's thread.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "catalog/checksum.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace {

#if defined(__x86_64__)
/// XGETBV with ECX = 1 (XINUSE) is there: CPUID.(EAX=0DH, ECX=1):EAX bit 2.
bool has_xinuse() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(0xD, 1, &a, &b, &c, &d) && (a & (1u << 2));
}

/// The state components the calling thread has in use: bit 2 the upper halves of YMM0-15, bit 6 those of ZMM0-15.
std::uint64_t xinuse() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (std::uint64_t(hi) << 32) | lo;
}
#endif

// A record hashed on the caller's thread (write() does this on the application's) leaves no upper vector state
// in use: libxxhash's AVX-512 kernel returns with it dirty, and the application's SSE code then ran 3-4x slower.
TEST(Checksum, LeavesTheCallersUpperVectorStateClean) {
#if !defined(__x86_64__) || !defined(MLBS_HAVE_XXH3_DISPATCH)
  GTEST_SKIP() << "not x86-64 with libxxhash's dispatcher: nothing wider than SSE2 runs";
#else
  if (!has_xinuse()) GTEST_SKIP() << "the CPU cannot say which state is in use (no XGETBV 1)";
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2: the dispatcher runs its SSE2 kernel";
  constexpr std::uint64_t kUpper = (1u << 2) | (1u << 6);
  const std::vector<std::byte> data(3 * mlbs::catalog::kChecksumPiece + 100, std::byte{7});
  const std::uint64_t whole = mlbs::catalog::record_checksum(data.data(), data.size());
  EXPECT_EQ(xinuse() & kUpper, 0u) << "record_checksum";
  mlbs::catalog::Checksummer streamed;
  streamed.update(data.data(), 12345);
  EXPECT_EQ(xinuse() & kUpper, 0u) << "Checksummer::update";
  streamed.update(data.data() + 12345, data.size() - 12345);
  EXPECT_EQ(streamed.digest(), whole);
  (void)mlbs::catalog::checksum(data.data(), 4096);
  EXPECT_EQ(xinuse() & kUpper, 0u) << "checksum";
#endif
}

}  // namespace
