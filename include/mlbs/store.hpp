// mlbs — Store<T>: a vector-like working buffer whose snapshots are records
// cached and prefetched across the runtime's tiers (DESIGN §3, §4).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlbs/detail/block.hpp"
#include "mlbs/detail/store_core.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/runtime.hpp"

#if MLBS_HAVE_MPI
#include "mlbs/detail/mpi.hpp"
#endif

namespace mlbs {

template <class T>
class Store {
  static_assert(std::is_trivially_copyable_v<T>,
                "mlbs::Store<T> moves raw bytes: T must be trivially copyable");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  /// A store named `name` with a working buffer of n value-initialised elements.
  /// In persistent mode an existing store of that name is recovered.
  Store(Runtime& rt, std::string name, size_type n = 0)
      : core_(rt, std::move(name), detail::element_kind<T>()) {
    resize(n);
  }
  /// The same with the store's own settings: its codec, its records' layout
  /// (docs/codecs.md, "Per store"), its parts (`n` x sizeof(T) is the record
  /// size StoreOptions::kAutoParts chooses for).
  Store(Runtime& rt, std::string name, const StoreOptions& options, size_type n = 0)
      : core_(rt, std::move(name), detail::element_kind<T>(), options, n * sizeof(T)) {
    resize(n);
  }
  /// A moved-from store is empty and can only be destroyed or assigned to.
  Store(Store&& o) noexcept
      : core_(std::move(o.core_)), buf_(std::move(o.buf_)), size_(std::exchange(o.size_, 0)) {
#if MLBS_HAVE_MPI
    comm_ = o.comm_;
#endif
  }
  Store& operator=(Store&& o) noexcept {
    core_ = std::move(o.core_);
    buf_ = std::move(o.buf_);
    size_ = std::exchange(o.size_, 0);
#if MLBS_HAVE_MPI
    comm_ = o.comm_;
#endif
    return *this;
  }

  // --- vector-like working buffer -------------------------------------------
  T* data() noexcept { return reinterpret_cast<T*>(buf_.data()); }
  const T* data() const noexcept { return reinterpret_cast<const T*>(buf_.data()); }
  size_type size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_type capacity() const noexcept { return buf_.capacity() / sizeof(T); }
  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  T& at(size_type i) { check_index(i); return data()[i]; }
  const T& at(size_type i) const { check_index(i); return data()[i]; }
  T& front() noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return data(); }
  const_iterator cend() const noexcept { return data() + size_; }

  void reserve(size_type n) {
    if (n > capacity()) regrow(n);
  }
  /// New elements are value-initialised (zero for arithmetic types).
  void resize(size_type n) {
    // Fresh memory reads as zero (Block::allocate_zeroed): arithmetic and enum
    // elements need no fill, and its pages stay untouched until the
    // application first writes them, in its own compute, as it would with
    // any buffer (a 1 GiB store starts in microseconds, not a second).
    const bool fresh_zeros = (std::is_arithmetic_v<T> || std::is_enum_v<T>) && n > capacity();
    reserve(n);
    if (n > size_ && !fresh_zeros) std::fill(data() + size_, data() + n, T{});
    size_ = n;
  }
  void resize(size_type n, const T& value) {
    reserve(n);
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void push_back(const T& x) {
    if (size_ == capacity()) regrow(std::max<size_type>(2 * size_, 16));
    data()[size_++] = x;
  }
  void pop_back() noexcept { --size_; }
  void clear() noexcept { size_ = 0; }

  // --- records ----------------------------------------------------------------
  /// Copies the working buffer into a DRAM slot as record `id` and returns;
  /// waits only while no slot is free. Throws DuplicateIdError if `id` exists.
  void write(std::uint64_t id) { core_.write(id, buf_.data(), size_ * sizeof(T)); }
  /// Waits until record `id` is in DRAM and makes it the working buffer
  /// (size() becomes the record's element count). In scratch mode the record
  /// is then released unless the schedule reads it again.
  void read(std::uint64_t id) { size_ = core_.read(id, buf_, sizeof(T)) / sizeof(T); }
  bool contains(std::uint64_t id) const { return core_.contains(id); }
  void erase(std::uint64_t id) { core_.erase(id); }
  /// Ids held by the store, ascending.
  std::vector<std::uint64_t> ids() const { return core_.ids(); }
  /// Returns once every record written before the call is durable on the
  /// last tier (persistent mode); in scratch mode, once write-behind is idle.
  void flush() { core_.flush(); }
  RecordInfo info(std::uint64_t id) const { return core_.info(id); }
  /// The parts each record is kept in (StoreOptions::parts; 1: whole), as chosen for kAutoParts.
  std::uint32_t parts() const noexcept { return core_.parts(); }
  const std::string& name() const noexcept { return core_.name(); }

#if MLBS_HAVE_MPI
  // --- collectives on the working buffer (docs/mpi.md) ----------------------
  /// The communicator reduce() and all_reduce() run over. Default: the
  /// runtime's (MPI_COMM_WORLD unless the Runtime was given one). The caller
  /// keeps `comm` alive while the store uses it; MPI_COMM_NULL restores the
  /// default. Records stay this rank's own whatever the communicator.
  void set_comm(MPI_Comm comm) noexcept { comm_ = comm; }
  MPI_Comm comm() const { return comm_ != MPI_COMM_NULL ? comm_ : core_.runtime_comm(); }
  /// Element-wise reduction of the working buffers of comm()'s ranks into
  /// root's buffer (e.g. MPI_SUM of every rank's partial image); the other
  /// ranks' buffers are unchanged. Collective; every rank's size() must be
  /// equal (InvalidArgumentError on all ranks otherwise). T: arithmetic or std::complex.
  void reduce(MPI_Op op, int root) { reduce_in_place(op, root, false); }
  /// The same, with the result in every rank's working buffer.
  void all_reduce(MPI_Op op) { reduce_in_place(op, 0, true); }
#endif

 private:
  void check_index(size_type i) const {
    if (i >= size_)
      throw InvalidArgumentError(EINVAL, "index " + std::to_string(i) + " out of range (size " +
                                             std::to_string(size_) + ")", {name(), {}, {}});
  }
  void regrow(size_type n) {
    if (n > std::numeric_limits<size_type>::max() / sizeof(T))
      throw InvalidArgumentError(EOVERFLOW, "element count " + std::to_string(n) + " overflows",
                                 {name(), {}, {}});
    detail::Block fresh = detail::Block::allocate_zeroed(n * sizeof(T));
    if (size_) std::memcpy(fresh.data(), buf_.data(), size_ * sizeof(T));
    buf_.swap(fresh);
  }

#if MLBS_HAVE_MPI
  void reduce_in_place(MPI_Op op, int root, bool all) {
    detail::reduce_elements(buf_.data(), size_, sizeof(T), detail::mpi_datatype<T>(), op, root, all, comm(), name());
  }
#endif

  detail::StoreCore core_;
  detail::Block buf_;
  size_type size_ = 0;
#if MLBS_HAVE_MPI
  MPI_Comm comm_ = MPI_COMM_NULL;
#endif
};

}  // namespace mlbs
