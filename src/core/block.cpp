#include "mlbs/detail/block.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace mlbs::detail {
namespace {
constexpr std::size_t kHugePage = 2u << 20;
constexpr std::size_t round_up(std::size_t n, std::size_t unit) { return (n + unit - 1) / unit * unit; }
}  // namespace

Block Block::allocate(std::size_t bytes) {
  Block b = allocate_untouched(bytes);
  if (b.ptr_) std::memset(b.ptr_, 0, b.capacity_);  // touch every page now, not inside a later timed copy
  return b;
}

Block Block::allocate_untouched(std::size_t bytes) {
  const std::size_t cap = round_up_block(bytes);
  if (cap == 0) return {};
  // Large blocks on transparent huge pages: fewer TLB misses for copies, and
  // O_DIRECT requests from physically contiguous memory need few segments
  // (a 1 MiB request from 4 KiB pages exceeds virtio-blk's 254 and is split).
  const bool huge = cap >= kHugePage;
  void* p = std::aligned_alloc(huge ? kHugePage : kBlockAlign, huge ? round_up(cap, kHugePage) : cap);
  if (!p) throw std::bad_alloc();
  if (huge) ::madvise(p, round_up(cap, kHugePage), MADV_HUGEPAGE);  // advisory: 4 KiB pages otherwise
  return Block(static_cast<std::byte*>(p), cap, nullptr);
}

Block Block::allocate_zeroed(std::size_t bytes) {
  const std::size_t cap = round_up_block(bytes);
  if (cap < kHugePage) return allocate(bytes);  // zeroing a few pages costs nothing
  void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  ::madvise(p, cap, MADV_HUGEPAGE);  // advisory, as in allocate_untouched()
  Block b(static_cast<std::byte*>(p), cap, nullptr);
  b.mapped_ = true;
  return b;
}

void Block::reset() noexcept {
  if (!ptr_) return;
  if (home_)
    home_->give_back(ptr_, capacity_);
  else if (mapped_)
    ::munmap(ptr_, capacity_);
  else
    std::free(ptr_);
  ptr_ = nullptr;
  capacity_ = 0;
  mapped_ = false;
  home_.reset();
}

}  // namespace mlbs::detail
