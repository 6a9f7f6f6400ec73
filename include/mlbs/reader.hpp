// mlbs — Reader<T>: another process's read-only view of a store that a
// running writer fills (DESIGN §4, docs/readers.md). It reads the writer's
// live catalog (docs/live-catalog.md) and the record copies on its file
// tiers; it takes no lock the writer waits on and never slows its helpers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/export.h"

namespace mlbs {

namespace detail {

/// The type-erased reader behind Reader<T> (src/readers/). Its methods are
/// const and may be called from several threads at once.
class MLBS_API ReaderCore {
 public:
  ReaderCore(const Config& cfg, const std::string& store, int rank);
  ~ReaderCore();
  ReaderCore(ReaderCore&&) noexcept;
  ReaderCore& operator=(ReaderCore&&) noexcept;

  std::vector<std::uint64_t> ids() const;
  bool wait(std::uint64_t id, std::chrono::nanoseconds timeout) const;
  std::uint64_t size_bytes(std::uint64_t id) const;
  std::chrono::system_clock::time_point readable_since(std::uint64_t id) const;
  void read(std::uint64_t id, std::byte* out, std::size_t bytes, std::size_t elem) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace detail

template <class T>
class Reader {
  static_assert(std::is_trivially_copyable_v<T>, "mlbs::Reader<T> reads raw bytes: T must be trivially copyable");

 public:
  /// Attaches to store `name` of the running writer configured as `cfg`
  /// (the same tiers and durability; rank `rank` of an MPI job). Throws
  /// UnknownIdError when no running writer has that store open (a reader
  /// started first: try again, docs/readers.md), InvalidArgumentError naming
  /// the first difference when `cfg` is not the writer's.
  Reader(const Config& cfg, const std::string& name, int rank = 0) : core_(cfg, name, rank) {}

  /// Ids of the records readable now (a copy on a file tier), ascending.
  std::vector<std::uint64_t> ids() const { return core_.ids(); }
  /// True once record `id` is readable; false when `timeout` passes first.
  /// Throws ShutdownError when the writer closes the store or dies meanwhile.
  template <class Rep, class Period>
  bool wait(std::uint64_t id, std::chrono::duration<Rep, Period> timeout) const {
    return core_.wait(id, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }
  /// Elements of readable record `id`.
  std::size_t size(std::uint64_t id) const { return core_.size_bytes(id) / sizeof(T); }
  /// When record `id` first reached a file tier, i.e. became readable (the
  /// writer's clock; one node shares it): a reader's lag is now() - this.
  std::chrono::system_clock::time_point readable_since(std::uint64_t id) const { return core_.readable_since(id); }
  /// Copies readable record `id` into `out`, which must hold exactly its
  /// elements: the exact bytes the writer wrote (checked against its
  /// checksum), from the fastest file tier holding it, or a typed error
  /// (UnknownIdError if it is erased meanwhile), never other bytes.
  void read(std::uint64_t id, std::span<T> out) const {
    core_.read(id, reinterpret_cast<std::byte*>(out.data()), out.size_bytes(), sizeof(T));
  }
  std::vector<T> read(std::uint64_t id) const {
    std::vector<T> out(size(id));
    read(id, std::span<T>(out));
    return out;
  }

 private:
  detail::ReaderCore core_;
};

}  // namespace mlbs
