#include "mlbs/detail/block.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace mlbs::detail {

Block Block::allocate(std::size_t bytes) {
  const std::size_t cap = round_up_block(bytes);
  if (cap == 0) return {};
  void* p = std::aligned_alloc(kBlockAlign, cap);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, cap);  // touch every page now, not inside a later timed copy
  return Block(static_cast<std::byte*>(p), cap, nullptr);
}

void Block::reset() noexcept {
  if (!ptr_) return;
  if (home_)
    home_->give_back(ptr_, capacity_);
  else
    std::free(ptr_);
  ptr_ = nullptr;
  capacity_ = 0;
  home_.reset();
}

}  // namespace mlbs::detail
