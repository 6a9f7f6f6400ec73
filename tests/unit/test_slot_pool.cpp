// Tests of the DRAM slot pool: the memory tier's byte budget, its 4096-aligned
// arena extents, coalescing, the fragmentation fallback and the O(1) exchange
// (src/tiers/memory/slot_pool.*, include/mlbs/detail/block.hpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include "tiers/memory/slot_pool.hpp"
#include "mlbs/detail/block.hpp"

namespace {

using mlbs::detail::Block;
using mlbs::detail::kBlockAlign;
using mlbs::tiers::SlotPool;

constexpr std::size_t kPage = kBlockAlign;

bool aligned(const Block& b) {
  return reinterpret_cast<std::uintptr_t>(b.data()) % kBlockAlign == 0;
}

// allocate() admits blocks until the budget is used up, then returns nullopt.
TEST(SlotPool, BudgetIsNeverExceeded) {
  SlotPool pool(4 * kPage);
  std::vector<Block> held;
  for (int i = 0; i < 4; ++i) {
    auto b = pool.allocate(kPage);
    ASSERT_TRUE(b.has_value());
    held.push_back(std::move(*b));
  }
  EXPECT_EQ(pool.used_bytes(), 4 * kPage);
  EXPECT_EQ(pool.free_bytes(), 0u);
  EXPECT_FALSE(pool.fits(1));
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_EQ(pool.used_bytes(), 4 * kPage);  // a refused request is not counted
}

// A request larger than the whole budget is refused outright.
TEST(SlotPool, RequestAboveBudgetIsRefused) {
  SlotPool pool(4 * kPage);
  EXPECT_FALSE(pool.allocate(4 * kPage + 1).has_value());
  EXPECT_EQ(pool.used_bytes(), 0u);
}

// A request whose rounding to 4096 would overflow size_t is refused, not granted as 0 bytes.
TEST(SlotPool, HugeRequestIsRefused) {
  SlotPool pool(4 * kPage);
  EXPECT_FALSE(pool.fits(std::numeric_limits<std::size_t>::max()));
  EXPECT_FALSE(pool.allocate(std::numeric_limits<std::size_t>::max()).has_value());
}

// Sizes are rounded up to whole 4096-byte blocks, both in the block and in used_bytes().
TEST(SlotPool, SizesRoundUpTo4096) {
  SlotPool pool(8 * kPage);
  auto a = pool.allocate(1);
  auto b = pool.allocate(kPage + 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->capacity(), kPage);
  EXPECT_EQ(b->capacity(), 2 * kPage);
  EXPECT_EQ(pool.used_bytes(), 3 * kPage);
}

// Every block handed out is 4096-byte aligned, usable memory from the arena.
TEST(SlotPool, BlocksAreAlignedAndWritable) {
  SlotPool pool(16 * kPage);
  std::vector<Block> held;
  for (std::size_t bytes : {1ul, 100ul, kPage, 3 * kPage - 7, 5 * kPage}) {
    auto b = pool.allocate(bytes);
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(aligned(*b)) << bytes;
    EXPECT_TRUE(b->from_arena()) << bytes;
    std::memset(b->data(), 0xab, b->capacity());
    held.push_back(std::move(*b));
  }
  EXPECT_EQ(pool.fallback_allocations(), 0u);
}

// release() gives the bytes back to the budget so a refused request succeeds again.
TEST(SlotPool, ReleaseMakesRoom) {
  SlotPool pool(2 * kPage);
  auto a = pool.allocate(2 * kPage);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(pool.allocate(kPage).has_value());
  pool.release(std::move(*a));
  EXPECT_EQ(pool.used_bytes(), 0u);
  auto b = pool.allocate(2 * kPage);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->from_arena());
}

// Freed neighbouring extents coalesce: after many small blocks come back, the whole budget is one extent.
TEST(SlotPool, FreedExtentsCoalesce) {
  constexpr std::size_t n = 32;
  SlotPool pool(n * kPage);
  std::vector<Block> held;
  for (std::size_t i = 0; i < n; ++i) held.push_back(std::move(*pool.allocate(kPage)));
  // Return them in a mixed order so both the "next" and "prev" merges are exercised.
  for (std::size_t i = 0; i < n; i += 2) pool.release(std::move(held[i]));
  for (std::size_t i = n; i-- > 0;)
    if (i % 2 == 1) pool.release(std::move(held[i]));
  EXPECT_EQ(pool.used_bytes(), 0u);
  auto all = pool.allocate(n * kPage);
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(all->from_arena());
  EXPECT_EQ(pool.fallback_allocations(), 0u);
}

// A fragmented arena still serves a request the budget admits, from fresh memory (counted).
TEST(SlotPool, FragmentationFallsBackWithinBudget) {
  constexpr std::size_t n = 16;
  SlotPool pool(n * kPage);
  std::vector<Block> held;
  for (std::size_t i = 0; i < n; ++i) held.push_back(std::move(*pool.allocate(kPage)));
  for (std::size_t i = 0; i < n; i += 2) pool.release(std::move(held[i]));  // holes of one page
  ASSERT_EQ(pool.free_bytes(), n / 2 * kPage);
  auto big = pool.allocate(n / 2 * kPage);
  ASSERT_TRUE(big.has_value());
  EXPECT_FALSE(big->from_arena());
  EXPECT_TRUE(aligned(*big));
  EXPECT_EQ(pool.fallback_allocations(), 1u);
  EXPECT_EQ(pool.used_bytes(), n * kPage);
  EXPECT_FALSE(pool.allocate(1).has_value());  // the budget still holds
  // Released, the fresh block is kept as a spare and serves the next request of its size.
  std::byte* p = big->data();
  pool.release(std::move(*big));
  auto again = pool.allocate(n / 2 * kPage);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->data(), p);
  EXPECT_EQ(pool.fallback_allocations(), 1u);
}

// exchange() takes a slot out of the budget and keeps the store's old block as a spare that is reused.
TEST(SlotPool, ExchangeKeepsAccountingAndReusesSpare) {
  SlotPool pool(4 * kPage);
  auto slot = pool.allocate(2 * kPage);
  ASSERT_TRUE(slot.has_value());
  Block working = Block::allocate(2 * kPage);  // the store's own buffer
  std::byte* spare = working.data();

  // The store now owns `slot`; its old buffer joins the pool in its place.
  Block owned = std::move(*slot);
  pool.exchange(owned.capacity(), std::move(working));
  EXPECT_EQ(pool.used_bytes(), 0u);

  auto next = pool.allocate(2 * kPage);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->data(), spare);
  EXPECT_EQ(pool.used_bytes(), 2 * kPage);
  EXPECT_EQ(pool.fallback_allocations(), 0u);
}

// exchange() with an empty replacement just removes the slot's bytes from the budget.
TEST(SlotPool, ExchangeWithEmptyReplacement) {
  SlotPool pool(4 * kPage);
  auto slot = pool.allocate(kPage);
  ASSERT_TRUE(slot.has_value());
  Block owned = std::move(*slot);
  pool.exchange(owned.capacity(), Block{});
  EXPECT_EQ(pool.used_bytes(), 0u);
}

// A zero-byte request yields an empty block and costs nothing, even with no room left.
TEST(SlotPool, ZeroByteAllocation) {
  SlotPool pool(kPage);
  auto full = pool.allocate(kPage);
  ASSERT_TRUE(full.has_value());
  auto empty = pool.allocate(0);
  ASSERT_TRUE(empty.has_value());
  EXPECT_FALSE(static_cast<bool>(*empty));
  EXPECT_EQ(empty->capacity(), 0u);
  EXPECT_EQ(pool.used_bytes(), kPage);
  pool.release(std::move(*empty));
  EXPECT_EQ(pool.used_bytes(), kPage);
}

// An arena block outliving its SlotPool stays valid and goes home safely (the extent holds the arena).
TEST(SlotPool, BlockOutlivesPool) {
  Block survivor;
  {
    SlotPool pool(4 * kPage);
    survivor = std::move(*pool.allocate(2 * kPage));
    ASSERT_TRUE(survivor.from_arena());
  }
  std::memset(survivor.data(), 0x5a, survivor.capacity());  // memory is still mapped
  EXPECT_EQ(survivor.data()[survivor.capacity() - 1], std::byte{0x5a});
  survivor.reset();  // returns to the (now orphaned) arena, which is then unmapped
  EXPECT_FALSE(static_cast<bool>(survivor));
}

// Slots handed out at once, before pre-faulting has come to them, keep every byte written into them while the pool pre-faults underneath.
TEST(SlotPool, PrefaultingNeverChangesSlotContents) {
  constexpr std::size_t kSlot = 4u << 20, kSlots = 8;
  SlotPool pool(kSlots * kSlot);
  std::vector<Block> held;
  for (std::size_t i = 0; i < kSlots; ++i) {
    held.push_back(std::move(*pool.allocate(kSlot)));
    std::memset(held.back().data(), int(0x11 * (i + 1)), kSlot);
  }
  pool.wait_prefaulted();
  EXPECT_EQ(pool.prefaulted_bytes(), kSlots * kSlot);
  for (std::size_t i = 0; i < kSlots; ++i) {
    const auto want = std::byte(static_cast<unsigned char>(0x11 * (i + 1)));
    for (std::size_t off = 0; off < kSlot; off += kPage / 2)
      ASSERT_EQ(held[i].data()[off], want) << "slot " << i << " offset " << off;
  }
}

// A pool destroyed while it is still pre-faulting stops its thread and returns (a large budget, dropped at once).
TEST(SlotPool, DestroyedWhilePrefaulting) {
  for (int round = 0; round < 3; ++round) {
    SlotPool pool(256u << 20);
    auto b = pool.allocate(kPage);
    ASSERT_TRUE(b);
    b->data()[0] = std::byte{1};
    pool.release(std::move(*b));
  }
  SUCCEED();
}

// A pool made to wait (as a runtime's is, until its set-up is done) populates nothing before start_prefault(), then all of it; slots work either way.
TEST(SlotPool, PrefaultingWaitsForItsStart) {
  constexpr std::size_t kBytes = 8u << 20;
  SlotPool pool(kBytes, false);
  auto b = pool.allocate(kPage);
  ASSERT_TRUE(b);
  std::memset(b->data(), 0x3c, kPage);
  EXPECT_EQ(pool.prefaulted_bytes(), 0u);
  pool.start_prefault();
  pool.start_prefault();  // once
  pool.wait_prefaulted();
  EXPECT_EQ(pool.prefaulted_bytes(), kBytes);
  EXPECT_EQ(b->data()[kPage - 1], std::byte{0x3c});
  pool.release(std::move(*b));
}

/// Whether a thread of this process runs at SCHED_IDLE (/proc/self/task/*/stat, field 41: policy 5).
bool some_thread_idle() {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i)
      if (i == 41 && field == "5") return true;
  }
  return false;
}

// The pre-fault thread runs at SCHED_IDLE (it takes only CPU nothing else wants, never the application's).
TEST(SlotPool, PrefaultingRunsAtIdlePriority) {
  constexpr std::size_t kBytes = 256u << 20;  // seconds to populate on a VM; tens of ms at the fastest
  SlotPool pool(kBytes);
  bool seen = false;
  // Until seen or populated (bounded: a thread that ran out of memory stops short).
  for (int scan = 0; scan < 100000 && !seen && pool.prefaulted_bytes() < kBytes; ++scan) seen = some_thread_idle();
  EXPECT_TRUE(seen) << "no SCHED_IDLE thread while the pool pre-faulted";
}

/// Pages of [data, data + bytes) resident in memory (mincore).
std::size_t resident_pages(const std::byte* data, std::size_t bytes) {
  std::vector<unsigned char> vec((bytes + kPage - 1) / kPage);
  if (::mincore(const_cast<std::byte*>(data), bytes, vec.data()) != 0) return 0;
  return static_cast<std::size_t>(std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return v & 1; }));
}

// Scratch beside the budget (helpers' staging) is populated by the pre-fault thread, keeps what was written
// into it, counts nothing against the budget and outlives the pool; asked for once pre-faulting has
// started, it comes populated.
TEST(SlotPool, ScratchIsPopulatedBesideTheArena) {
  constexpr std::size_t kScratch = 64u << 20;  // a fresh mapping of its own: untouched until populated
  Block early, late;
  {
    SlotPool pool(kPage, false);
    early = pool.scratch(kScratch);
    ASSERT_GE(early.capacity(), kScratch);
    EXPECT_EQ(pool.used_bytes(), 0u);
    std::memset(early.data(), 0x6b, kPage);
    pool.start_prefault();
    pool.wait_prefaulted();
    EXPECT_EQ(resident_pages(early.data(), kScratch), kScratch / kPage);
    EXPECT_EQ(early.data()[kPage - 1], std::byte{0x6b});
    late = pool.scratch(kScratch);
    EXPECT_EQ(resident_pages(late.data(), kScratch), kScratch / kPage);
  }
  std::memset(early.data(), 0x1e, early.capacity());  // still mapped: the block holds its memory
  EXPECT_EQ(early.data()[early.capacity() - 1], std::byte{0x1e});
}

// An empty budget has nothing to pre-fault: waiting for it returns at once.
TEST(SlotPool, EmptyPoolIsPrefaulted) {
  SlotPool pool(0);
  pool.wait_prefaulted();
  EXPECT_EQ(pool.prefaulted_bytes(), 0u);
}
// A zeroed block reads as zeros whatever its size (a mapping of its own when large, untouched until
// written) and goes back whole, also after moving between handles (ASan checks the unmap or free).
TEST(Block, ZeroedBlocksAreZeroAndGoBackWhole) {
  for (std::size_t bytes : {std::size_t{100}, std::size_t{3u << 20} + 5}) {
    mlbs::detail::Block b = mlbs::detail::Block::allocate_zeroed(bytes);
    ASSERT_TRUE(b);
    EXPECT_GE(b.capacity(), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % mlbs::detail::kBlockAlign, 0u);
    EXPECT_TRUE(std::all_of(b.data(), b.data() + b.capacity(), [](std::byte x) { return x == std::byte{0}; }));
    std::memset(b.data(), 0xab, bytes);
    mlbs::detail::Block other = mlbs::detail::Block::allocate(4096);
    b.swap(other);
    EXPECT_EQ(other.data()[bytes - 1], std::byte{0xab});
  }
}

// The scratch is populated before the arena: staging is on the slowest tier's path, a slot only on the
// copy into it (the arena's first step is there only once all of the scratch is).
TEST(SlotPool, ScratchIsPopulatedBeforeTheArena) {
  constexpr std::size_t kArena = 64u << 20, kScratch = 8u << 20;
  SlotPool pool(kArena, false);
  const Block staging = pool.scratch(kScratch);
  pool.start_prefault();
  // Until the arena's first step is in (bounded: a thread that ran out of memory stops short). The
  // pre-fault thread runs at SCHED_IDLE: yield the core to it.
  for (long scan = 0; scan < 100000000 && pool.prefaulted_bytes() == 0; ++scan) std::this_thread::yield();
  ASSERT_GT(pool.prefaulted_bytes(), 0u);
  EXPECT_EQ(resident_pages(staging.data(), kScratch), kScratch / kPage);
  pool.wait_prefaulted();
}

}  // namespace
