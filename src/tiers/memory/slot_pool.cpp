#include "tiers/memory/slot_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::tiers {

using detail::Block;
using detail::round_up_block;

/// The pre-faulted region and its free extents. Extents may come home from
/// any thread (a Store destroyed while holding one), hence its own mutex.
struct SlotPool::Arena : detail::ExtentHome {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  std::mutex mu;
  std::map<std::size_t, std::size_t> by_offset;          // offset -> length
  std::multimap<std::size_t, std::size_t> by_length;     // length -> offset

  explicit Arena(std::size_t n) : bytes(n) {
    if (n == 0) return;
    // Transparent huge pages where the system allows them (asked for before
    // the pages are touched): fewer TLB misses for copies, and O_DIRECT
    // requests from slots need few segments (a 1 MiB request from 4 KiB
    // pages exceeds virtio-blk's 254 and is split). Advisory, like the base
    // address: the arena is not 2 MiB aligned itself, so its ends may stay on
    // small pages.
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw CapacityError(errno, fmt::format("cannot map {} for the memory tier's slots", format_bytes(n)),
                          {{}, {}, "tier 0 (memory)"});
    base = static_cast<std::byte*>(p);
    ::madvise(p, n, MADV_HUGEPAGE);
    // Touch every page so the first copy into a slot runs at copy speed.
    for (std::size_t off = 0; off < n; off += detail::kBlockAlign) base[off] = std::byte{0};
    insert(0, n);
  }
  ~Arena() override {
    if (base) munmap(base, bytes);
  }

  void insert(std::size_t off, std::size_t len) {
    by_offset.emplace(off, len);
    by_length.emplace(len, off);
  }
  void erase(std::map<std::size_t, std::size_t>::iterator it) {
    auto [lo, hi] = by_length.equal_range(it->second);
    for (auto j = lo; j != hi; ++j)
      if (j->second == it->first) {
        by_length.erase(j);
        break;
      }
    by_offset.erase(it);
  }

  std::byte* take(std::size_t len) {
    std::lock_guard lock(mu);
    auto best = by_length.lower_bound(len);
    if (best == by_length.end()) return nullptr;
    const std::size_t off = best->second, have = best->first;
    erase(by_offset.find(off));
    if (have > len) insert(off + len, have - len);
    return base + off;
  }

  void give_back(std::byte* ptr, std::size_t len) noexcept override {
    std::lock_guard lock(mu);
    std::size_t off = static_cast<std::size_t>(ptr - base);
    // Coalesce with the neighbours so large extents reappear.
    auto next = by_offset.lower_bound(off);
    if (next != by_offset.end() && off + len == next->first) {
      len += next->second;
      auto victim = next++;
      erase(victim);
    }
    if (next != by_offset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        len += prev->second;
        erase(prev);
      }
    }
    insert(off, len);
  }
};

namespace {
/// The arena's size, checked: a budget beyond the node's memory would be
/// pre-faulted into the OOM killer, so it is refused with a typed error.
std::size_t checked_arena_bytes(std::uint64_t capacity) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t ram = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  if (ram && capacity > ram)
    throw CapacityError(ENOMEM,
                        fmt::format("the memory tier's capacity {} exceeds this node's memory ({})",
                                    format_bytes(capacity), format_bytes(ram)),
                        {{}, {}, "tier 0 (memory)"});
  return round_up_block(capacity);
}
}  // namespace

SlotPool::SlotPool(std::uint64_t capacity_bytes)
    : capacity_(capacity_bytes), arena_(std::make_shared<Arena>(checked_arena_bytes(capacity_bytes))) {}

SlotPool::~SlotPool() = default;

std::optional<Block> SlotPool::allocate(std::size_t bytes) {
  if (!fits(bytes)) return std::nullopt;
  const std::size_t cap = round_up_block(bytes);
  used_ += cap;
  if (cap == 0) return Block{};
  if (auto it = spares_.find(cap); it != spares_.end()) {
    Block b = std::move(it->second);
    spares_.erase(it);
    spare_bytes_ -= cap;
    return b;
  }
  if (std::byte* p = arena_->take(cap)) return Block(p, cap, arena_);
  // Fragmented arena: stay within the logical budget with fresh memory.
  ++fallbacks_;
  try {
    return Block::allocate(cap);
  } catch (...) {
    used_ -= cap;
    throw;
  }
}

void SlotPool::release(Block block) noexcept {
  used_ -= block.capacity();
  // Spares of odd sizes beyond the budget are returned to the system.
  if (!block.from_arena() && block && spare_bytes_ + block.capacity() <= capacity_) {
    spare_bytes_ += block.capacity();
    spares_.emplace(block.capacity(), std::move(block));
  }
  // Arena extents go home when `block` is destroyed here.
}

void SlotPool::exchange(std::size_t capacity, Block replacement) noexcept {
  used_ -= capacity;
  if (replacement) {
    used_ += replacement.capacity();
    release(std::move(replacement));
  }
}

}  // namespace mlbs::tiers
