// mlbs Python bindings — numpy arrays in and out of records: the store's
// fixed shape and dtype, checks that name expected and given, strided copies
// (any layout the caller's array has), and arrays that own a record's block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "mlbs/detail/block.hpp"

namespace mlbs::python {

namespace nb = nanobind;

/// Any CPU array nanobind can view (numpy, or anything with __dlpack__).
using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

/// What every record of a Python store or reader holds: one array shape and
/// one numeric dtype, so records are exactly `nbytes` of C-order elements.
struct ArraySpec {
  std::vector<std::size_t> shape;
  nb::dlpack::dtype dtype{};
  std::size_t itemsize = 0;
  std::size_t nbytes = 0;
  nb::object np_dtype;   ///< numpy.dtype, for Python-side properties

  /// From a shape (int or sequence of ints) and anything numpy.dtype()
  /// accepts; TypeError/ValueError naming what is wrong.
  static ArraySpec from_python(nb::handle shape, nb::handle dtype);
  std::string describe() const;   ///< "float32 arrays of shape (4, 5)"
  nb::tuple shape_tuple() const;

  /// `array` viewed as this spec's array; TypeError (not an array, other
  /// dtype) or ValueError (other shape) naming `who` and `op` ("store 'u'",
  /// "write": the message is built only on failure).
  AnyArray check(nb::handle array, std::string_view who, std::string_view op) const;
  /// The same for out=: also writable (any writable CPU array: numpy, or a DLPack exporter).
  AnyArray check_out(nb::handle array, std::string_view who, std::string_view op) const;

 private:
  void verify(const AnyArray& a, std::string_view who, std::string_view op) const;
};

/// True when `a`'s elements lie in C order without gaps (a direct copy).
bool c_contiguous(const AnyArray& a);
/// Copies `a`'s elements in C order into `dst` (a.nbytes() bytes).
void pack(std::byte* dst, const AnyArray& a);
/// Copies C-ordered `src` into `a`'s elements wherever its strides put them.
void unpack(const AnyArray& a, const std::byte* src);

/// Record-sized blocks kept between calls of one store: a read swaps one
/// with the DRAM slot holding the record (no copy), and a returned array's
/// block comes back here when Python frees it, so a loop of reads neither
/// copies nor touches fresh memory in its steady state. Thread-safe.
class BlockCache {
 public:
  explicit BlockCache(std::size_t bytes) : bytes_(bytes) {}
  detail::Block take();
  void give(detail::Block b) noexcept;

 private:
  static constexpr std::size_t kKeep = 2;   ///< a read's block plus one in flight
  std::size_t bytes_;
  std::mutex mu_;
  std::vector<detail::Block> blocks_;
};

/// A numpy array of `spec` that owns `block` (its first spec.nbytes bytes);
/// the block goes back to `cache` (if still alive) when the array dies.
nb::object adopt(detail::Block block, const ArraySpec& spec, const std::shared_ptr<BlockCache>& cache);
/// numpy's C API for adopt(); once, at module import.
void import_numpy();

}  // namespace mlbs::python
