// mlbs — 4096-byte-aligned memory blocks that move between a Store's working
// buffer and the DRAM slot pool without copying (the O(1) read swap).
#pragma once

#include <cstddef>
#include <memory>

#include "mlbs/export.h"

namespace mlbs::detail {

/// Alignment of every block: O_DIRECT's unit on the file systems we target.
inline constexpr std::size_t kBlockAlign = 4096;
/// "Any size" where a byte count may be asked for.
inline constexpr std::size_t kAnySize = ~std::size_t{0};
constexpr std::size_t round_up_block(std::size_t n) {
  return (n + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
}

/// Returns an extent to the arena it was carved from (implemented by the slot pool).
struct MLBS_API ExtentHome {
  virtual ~ExtentHome() = default;
  virtual void give_back(std::byte* ptr, std::size_t bytes) noexcept = 0;
};

/// Owning handle to aligned memory: either its own allocation or an extent of
/// a slot-pool arena (then `home` takes it back on destruction).
class MLBS_API Block {
 public:
  Block() = default;
  /// Fresh memory, rounded up to kBlockAlign and touched (so later copies
  /// into it run at copy speed, not first-touch speed).
  static Block allocate(std::size_t bytes);
  /// The same, left untouched: pages cost their first touch when written
  /// (codec frames, of which only the stored bytes are ever written).
  static Block allocate_untouched(std::size_t bytes);
  /// Zero-filled, and for large blocks left untouched (fresh pages of their
  /// own mapping, zero by the kernel's guarantee): a Store's working buffer,
  /// whose first touch is the application's own first write, as with any
  /// array it allocates (zeroing 1 GiB here would take seconds).
  static Block allocate_zeroed(std::size_t bytes);
  Block(std::byte* ptr, std::size_t capacity, std::shared_ptr<ExtentHome> home) noexcept
      : ptr_(ptr), capacity_(capacity), home_(std::move(home)) {}
  Block(Block&& o) noexcept { swap(o); }
  Block& operator=(Block&& o) noexcept {
    Block(std::move(o)).swap(*this);
    return *this;
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { reset(); }

  std::byte* data() const noexcept { return ptr_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool from_arena() const noexcept { return home_ != nullptr; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  void swap(Block& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(capacity_, o.capacity_);
    std::swap(mapped_, o.mapped_);
    home_.swap(o.home_);
  }
  void reset() noexcept;

 private:
  std::byte* ptr_ = nullptr;
  std::size_t capacity_ = 0;
  bool mapped_ = false;  ///< a mapping of its own (allocate_zeroed): unmapped, not freed
  std::shared_ptr<ExtentHome> home_;
};

}  // namespace mlbs::detail
