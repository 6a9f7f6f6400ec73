// mlbs — where a directory tier keeps an object's bytes: a file of its own
// (file per record) or an extent of an append-only log per writing thread,
// found through an index (log). The I/O backends (pread, io_uring) move bytes
// through whatever Placement the layout hands out, so every layout runs on
// every backend.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

class DirectoryBackend;

/// How a placement's descriptor is opened.
enum class OpenMode {
  buffered,            ///< through the page cache (pread backend)
  direct,              ///< O_DIRECT, or an error
  direct_or_buffered,  ///< O_DIRECT, buffered where the file system refuses it (EINVAL)
};

/// One object's bytes while a writer or a reader holds them: a descriptor and
/// the object's place in that file. Destroying a written placement that was
/// never committed discards the object (its file, or its log extent).
class Placement {
 public:
  virtual ~Placement() = default;
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  int fd() const noexcept { return fd_; }
  /// File offset of the object's byte 0 (a multiple of 4096).
  std::uint64_t base() const noexcept { return base_; }
  /// Bytes the object may occupy from base(): its size, rounded up to 4096 in a log.
  std::uint64_t room() const noexcept { return room_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  bool direct() const noexcept { return direct_; }
  /// True: the object is the whole file, which its writer may extend and cut
  /// back; false: it shares the file, and nothing outside [base, base+room) is its own.
  bool whole_file() const noexcept { return whole_file_; }

  /// The object's bytes are written, and on the device when `durable`: make
  /// it findable (after a crash too, when durable). Throws as the tier does.
  virtual void commit(bool durable) = 0;

 protected:
  Placement() = default;
  int fd_ = -1;
  std::uint64_t base_ = 0;
  std::uint64_t room_ = 0;
  std::filesystem::path path_;
  bool direct_ = false;
  bool whole_file_ = true;
};

/// The layout of one directory tier. Folders of spaces are created and
/// removed by the backend; the layout keeps what lives in them.
class ObjectLayout {
 public:
  explicit ObjectLayout(const DirectoryBackend& tier) : tier_(tier) {}
  virtual ~ObjectLayout() = default;
  ObjectLayout(const ObjectLayout&) = delete;
  ObjectLayout& operator=(const ObjectLayout&) = delete;

  /// The space's folder exists: pick up what an earlier run left in it.
  virtual void open_space(const std::string& space) = 0;
  /// The space's folder is about to be removed: let go of its files.
  virtual void close_space(const std::string& space) noexcept = 0;
  virtual std::unique_ptr<Placement> create(const ObjectRef& ref, std::uint64_t size, OpenMode mode) = 0;
  /// The object, for reading; holding other than `size` bytes is a SizeMismatchError.
  virtual std::unique_ptr<Placement> open(const ObjectRef& ref, std::uint64_t size, OpenMode mode) = 0;
  /// Removing an object that is not there is not an error.
  virtual void remove(const ObjectRef& ref) = 0;

 protected:
  const DirectoryBackend& tier_;
};

/// open(2) of `path` with `flags` as `mode` asks; `direct` says whether
/// O_DIRECT was had. -1 with errno on failure.
int open_in_mode(const std::filesystem::path& path, int flags, OpenMode mode, bool& direct);

/// One file per object: <space>/<id>-<generation>.rec.
std::unique_ptr<ObjectLayout> make_file_layout(const DirectoryBackend& tier);

/// Append-only logs: every thread that writes to a space appends to a log of
/// its own (<space>/log-<n>.mlbs, so one per helper), each object at a
/// 4096-aligned offset, and records where in log-<n>.idx. Removed objects'
/// blocks are punched out; a log whose objects are all gone is cut back to
/// empty (or deleted, if an earlier run wrote it). See docs/layout.md.
std::unique_ptr<ObjectLayout> make_log_layout(const DirectoryBackend& tier);

/// One entry of a log index file, as written.
struct LogIndexEntry {
  enum class Op : std::uint32_t { put = 1, erase = 2 };
  Op op = Op::put;
  std::uint64_t id = 0;
  std::uint64_t generation = 0;
  std::uint64_t offset = 0;  ///< put: where the object starts in the log
  std::uint64_t size = 0;    ///< put: its size in bytes
};

/// Bytes of one entry in a log index file.
inline constexpr std::size_t kLogIndexEntryBytes = 48;

/// One index entry as the log layout writes it, checksum included (for
/// tools, tests and fuzzers that build or patch an index).
std::array<std::byte, kLogIndexEntryBytes> encode_log_index_entry(const LogIndexEntry& e);

/// The valid entries of a log index file: entries that fail their checksum
/// are skipped, a torn last entry is ignored; empty if the file is missing.
std::vector<LogIndexEntry> read_log_index(const std::filesystem::path& index_file);

/// Where an object's bytes are, found from its space folder alone.
struct StoredObject {
  bool found = false;
  std::filesystem::path file;  ///< its own .rec file, or the log that holds it
  std::uint64_t offset = 0;    ///< where it starts in `file`
  std::uint64_t bytes = 0;     ///< bytes there: the file's size, or the index's size cut to what the log holds
};

/// The object (id, generation) of a space folder in either layout: a log
/// index entry first, else its .rec file. For tools (mlbs-inspect) and tests.
StoredObject locate_stored_object(const std::filesystem::path& space_dir, std::uint64_t id,
                                  std::uint64_t generation);

/// Objects stored below `dir` (searched recursively) in either layout: *.rec
/// files plus the puts in log indexes that no erase followed, each named
/// <its folder>/<id>-<generation>.rec as the file layout would name it. For
/// tests and tools.
std::vector<std::filesystem::path> list_stored_objects(const std::filesystem::path& dir);
inline std::size_t count_stored_objects(const std::filesystem::path& dir) { return list_stored_objects(dir).size(); }

}  // namespace mlbs::tiers
