#include "tiers/memory/slot_pool.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "core/thread_name.hpp"
#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::tiers {

using detail::Block;
using detail::round_up_block;

namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack the name
#endif

/// Pre-faults in steps of one huge page: a step is short (a stop request is
/// seen within one) and a huge page is populated whole.
constexpr std::size_t kPrefaultStep = 2u << 20;

#if defined(__SANITIZE_THREAD__)
#define MLBS_PREFAULT_BY_MADVISE 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MLBS_PREFAULT_BY_MADVISE 1
#endif
#endif
#ifndef MLBS_PREFAULT_BY_MADVISE
#define MLBS_PREFAULT_BY_MADVISE 0
#endif

/// Populates [base, base + len) for writing without changing a byte of it,
/// so it is safe while the memory is in use: a locked OR of zero into one
/// byte of each page, which a concurrent copy's store lands before or after
/// whole. Not MADV_POPULATE_WRITE: it holds the memory-map lock for each
/// step (a huge page's first touch, 5-20 ms in a VM), and every mmap() of
/// the application's set-up waited behind it, while a fault takes only its
/// area's lock (Linux 6.4+). ThreadSanitizer builds use the madvise, which
/// it can see is no race. False when that kernel call is missing (< 5.14).
bool populate(std::byte* base, std::size_t len) {
#if MLBS_PREFAULT_BY_MADVISE
  return ::madvise(base, len, MADV_POPULATE_WRITE) == 0;
#else
  for (std::size_t page = 0; page < len; page += detail::kBlockAlign)
    __atomic_fetch_or(reinterpret_cast<unsigned char*>(base + page), 0, __ATOMIC_RELAXED);
  return true;
#endif
}

}  // namespace

/// Memory beside the budget (SlotPool::scratch()): its blocks are views of
/// it, and it is freed with its last owner, the block's or the arena's.
struct SlotPool::Scratch : detail::ExtentHome {
  Block memory;
  explicit Scratch(std::size_t bytes) : memory(Block::allocate_untouched(bytes)) {}
  void give_back(std::byte*, std::size_t) noexcept override {}
};

/// The slots' memory and its free extents. Extents may come home from any
/// thread (a Store destroyed while holding one), hence its own mutex.
/// Pages are populated in address order by the pool's pre-fault thread;
/// `faulted` is how far it has come.
struct SlotPool::Arena : detail::ExtentHome {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  std::atomic<std::size_t> faulted{0};  ///< [0, faulted) is populated
  std::atomic<bool> prefault_over{false};  ///< pre-faulting ended (done, stopped or given up)
  std::atomic<bool> stop_prefault{false};  ///< the pool is gone: stop after the current step
  /// Populated before the arena; fixed before the pre-fault thread starts.
  std::vector<std::shared_ptr<Scratch>> scratch;
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
    insert(0, n);
  }

  /// Populates the next step (populate(): safe while slots there are in use).
  bool populate_next() {
    const std::size_t off = faulted.load(std::memory_order_relaxed);
    const std::size_t len = std::min(kPrefaultStep, bytes - off);
    if (!populate(base + off, len)) return false;
    faulted.store(off + len, std::memory_order_release);
    return true;
  }
  /// The scratch blocks, a step at a time; false if populate() failed.
  bool populate_scratch() {
    for (const auto& s : scratch)
      for (std::size_t off = 0; off < s->memory.capacity(); off += kPrefaultStep) {
        if (stop_prefault.load(std::memory_order_relaxed)) return true;
        if (!populate(s->memory.data() + off, std::min(kPrefaultStep, s->memory.capacity() - off))) return false;
      }
    return true;
  }
  /// The first step of what comes first (scratch, else the arena): whether
  /// this kernel populates (MADV_POPULATE_WRITE is missing before 5.14).
  bool probe() {
    for (const auto& s : scratch)
      if (s->memory.capacity()) return populate(s->memory.data(), std::min(kPrefaultStep, s->memory.capacity()));
    return populate_next();
  }
  /// The old way, for kernels without MADV_POPULATE_WRITE: touch every page
  /// now, before any slot is handed out.
  void touch_all() {
    for (std::size_t off = faulted.load(); off < bytes; off += detail::kBlockAlign) base[off] = std::byte{0};
    faulted.store(bytes, std::memory_order_release);
    end_prefault();
  }
  void end_prefault() {
    prefault_over.store(true, std::memory_order_release);
    prefault_over.notify_all();
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
    // Best fit among the populated extents, so a copy into the slot runs at
    // copy speed; else best fit anywhere: the copy then touches the pages
    // itself rather than wait for the pre-fault thread.
    const std::size_t ready = faulted.load(std::memory_order_acquire);
    for (auto it = best; it != by_length.end(); ++it)
      if (it->second + len <= ready) {
        best = it;
        break;
      }
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

SlotPool::SlotPool(std::uint64_t capacity_bytes, bool prefault)
    : capacity_(capacity_bytes), arena_(std::make_shared<Arena>(checked_arena_bytes(capacity_bytes))) {
  if (prefault) start_prefault();
}

void SlotPool::start_prefault() {
  if (prefault_started_) return;
  prefault_started_ = true;
  if (arena_->bytes == 0) {
    arena_->end_prefault();
    return;
  }
  // Pre-fault in the background (first touch is slow: seconds for a few GiB
  // on some machines), so a runtime starts at once and no write waits on it.
  if (MLBS_PREFAULT_BY_MADVISE && !arena_->probe()) {
    arena_->touch_all();
    return;
  }
  // Detached, owning the arena: the pool's destructor only asks it to stop
  // and never waits, and a process that dies without destructors (a crash)
  // leaves no finished thread unjoined. At SCHED_IDLE: populating ahead is
  // speculative, so it takes only CPU no other thread wants. At normal
  // priority it shared the cores with the application's kernels (the demo's
  // RTM kernel ran 10% slower on two cores); a slot used before the thread
  // reaches it is populated by the copy into it instead. Best effort: a
  // system that refuses the policy keeps the thread at its priority.
  //
  // The scratch (helpers' staging) first: it is small and on the slowest
  // tier's path, where a helper's first copy between two file tiers paid its
  // first touch as 11-20 ms of that tier's time in half the runs of the
  // demo, while a slot not yet populated costs only the copy into it, on the
  // application's path (which has slack wherever the tiers are the
  // bottleneck). The demo's slow tier overran its copies by 26-29 ms per
  // run this way, against 32-63 ms with the arena first.
  std::thread prefault([arena = arena_] {
    sched_param idle{};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    // false: out of memory; first use faults pages in instead
    bool ok = arena->populate_scratch();
    while (ok && !arena->stop_prefault.load(std::memory_order_relaxed) &&
           arena->faulted.load(std::memory_order_relaxed) < arena->bytes)
      ok = arena->populate_next();
    arena->end_prefault();
  });
  detail::name_os_thread(prefault.native_handle(), "mlbs-prefault");
  prefault.detach();
}

Block SlotPool::scratch(std::size_t bytes) {
  if (prefault_started_ || arena_->bytes == 0 || bytes == 0) return Block::allocate(bytes);
  auto s = std::make_shared<Scratch>(bytes);
  Block view(s->memory.data(), s->memory.capacity(), s);
  arena_->scratch.push_back(std::move(s));
  return view;
}

SlotPool::~SlotPool() { arena_->stop_prefault.store(true, std::memory_order_relaxed); }

std::uint64_t SlotPool::prefaulted_bytes() const noexcept {
  return std::min<std::uint64_t>(arena_->faulted.load(std::memory_order_acquire), capacity_);
}

void SlotPool::wait_prefaulted() const { arena_->prefault_over.wait(false, std::memory_order_acquire); }

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
