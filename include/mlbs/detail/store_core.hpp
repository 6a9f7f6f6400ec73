// mlbs — the type-erased part of Store<T>: everything works on bytes here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "mlbs/detail/block.hpp"
#include "mlbs/export.h"
#include "mlbs/features.hpp"
#include "mlbs/stats.hpp"
#include "mlbs/store_options.hpp"

#if MLBS_HAVE_MPI
#include <mpi.h>
#endif

namespace mlbs {
class Runtime;
namespace engine { class Engine; }

namespace detail {

/// What a store's elements are, for its codec (ZFP codes float and double
/// only) — Store<T> says it from T.
/// `bytes`: one-byte elements, which may be anything (StoreOptions::elements
/// can say what); `other`: a type of its own (int, a struct).
enum class ElementKind : std::uint8_t { bytes, float32, float64, other };

template <class T>
constexpr ElementKind element_kind() noexcept {
  if constexpr (std::is_same_v<T, float>) return ElementKind::float32;
  else if constexpr (std::is_same_v<T, double>) return ElementKind::float64;
  else if constexpr (sizeof(T) == 1) return ElementKind::bytes;
  else return ElementKind::other;
}

class MLBS_API StoreCore {
 public:
  /// `plane_nx`, `plane_ny`: the records' layout when known, x fastest
  /// (StoreOptions: planes, rows with ny = 0, or flat), for ZFP.
  StoreCore(Runtime& rt, std::string name, ElementKind element = ElementKind::bytes, std::uint32_t plane_nx = 0,
            std::uint32_t plane_ny = 0);
  /// The same with the store's own settings (its codec, layout, elements,
  /// parts). `record_bytes`: the records' size when known, for kAutoParts.
  StoreCore(Runtime& rt, std::string name, ElementKind element, const StoreOptions& options,
            std::size_t record_bytes = 0);
  ~StoreCore();
  StoreCore(StoreCore&&) noexcept;
  StoreCore& operator=(StoreCore&&) noexcept;
  StoreCore(const StoreCore&) = delete;
  StoreCore& operator=(const StoreCore&) = delete;

  void write(std::uint64_t id, const std::byte* data, std::size_t bytes);
  /// Delivers record `id` into `buf` (swapping blocks when capacities match,
  /// else copying, reallocating `buf` if it is too small); returns the size in
  /// bytes. Throws SizeMismatchError when the size is not a multiple of elem_size.
  std::size_t read(std::uint64_t id, Block& buf, std::size_t elem_size);
  /// The same for a record that must hold exactly `bytes` (a fixed-shape
  /// store, e.g. Python's): SizeMismatchError otherwise, before the record is
  /// consumed.
  void read_exact(std::uint64_t id, Block& buf, std::size_t bytes);
  /// Persistent stores: bytes [offset, offset + len) of record `id`, clipped
  /// to its size, into `dst`; the record stays (mlbs-run reads files in
  /// pieces), and counts as read (by the schedule) once a part reaching its
  /// end was. Returns the bytes copied.
  std::size_t read_into(std::uint64_t id, std::byte* dst, std::size_t offset, std::size_t len);
  /// A DRAM slot of at least `bytes` to fill in place, when room can be made
  /// now; write_lent() makes it record `id` without a copy (the slot is
  /// moved out of `slot` on success), return_slot() gives it back.
  std::optional<Block> lend_slot(std::size_t bytes);
  void write_lent(std::uint64_t id, Block& slot, std::size_t bytes);
  void return_slot(Block slot) noexcept;
  bool contains(std::uint64_t id) const;
  void erase(std::uint64_t id);
  std::vector<std::uint64_t> ids() const;
  void flush();
  RecordInfo info(std::uint64_t id) const;
  const std::string& name() const noexcept { return name_; }
  /// StoreOptions::parts: 1 for a store of whole records.
  std::uint32_t parts() const noexcept { return static_cast<std::uint32_t>(handles_.size()); }
#if MLBS_HAVE_MPI
  /// The communicator of the runtime the store belongs to (MPI_COMM_NULL: none).
  MPI_Comm runtime_comm() const;
#endif

 private:
  void close_parts() noexcept;

  std::shared_ptr<engine::Engine> engine_;
  /// One engine store per part (one for whole records): part j is `name#j`.
  std::vector<std::uint32_t> handles_;
  /// Where a record may be cut into parts: whole planes or rows of the
  /// layout (ZFP codes each part alone), else whole DRAM blocks.
  std::size_t granule_ = 0;
  std::string name_;
};

}  // namespace detail
}  // namespace mlbs
