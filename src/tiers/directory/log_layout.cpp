// Log layout: an append-only log per writing thread and space, and its index.
//
// Why: parallel file systems slow down with many small files (every create
// and unlink is a metadata-server round trip); a run writes a handful of
// large logs instead. Each helper appends only to its own log, so appends
// need no lock on the file and stay sequential on the device.
//
// Index files hold fixed-size entries at fixed positions, each with its own
// checksum, so a torn or never-written entry (a crash, a failed write) costs
// only itself: readers skip it and go on.
//
// Durability (commit(true)): the writer has fdatasync'ed the log; then the
// folder is synced once per log (its entries), the put entry is written and
// the index fdatasync'ed. Only after that does the engine journal the record.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "catalog/checksum.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/layout.hpp"

namespace mlbs::tiers {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kAlign = 4096;  // O_DIRECT: every object starts on a block
constexpr std::uint64_t align_up(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// An index entry as stored (host byte order: logs live on the node or run
/// that wrote them).
struct DiskEntry {
  std::uint32_t magic;
  std::uint32_t op;
  std::uint64_t id, generation, offset, size;
  std::uint64_t check;  ///< xxHash3 of the 40 bytes before it
};
static_assert(sizeof(DiskEntry) == kLogIndexEntryBytes);
constexpr std::uint32_t kMagic = 0x31474c4d;  // "MLG1"
constexpr std::size_t kChecked = offsetof(DiskEntry, check);

DiskEntry encode(const LogIndexEntry& e) {
  DiskEntry d{kMagic, static_cast<std::uint32_t>(e.op), e.id, e.generation, e.offset, e.size, 0};
  d.check = catalog::checksum(&d, kChecked);
  return d;
}

/// "log-<n>.<ext>" -> n; -1 for other names.
long lane_number(const std::string& name, std::string_view ext) {
  if (name.size() <= 4 + ext.size() || name.rfind("log-", 0) != 0 ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return -1;
  unsigned n = 0;
  const char* first = name.data() + 4;
  const char* last = name.data() + name.size() - ext.size();
  auto [end, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && end == last ? static_cast<long>(n) : -1;
}

/// Live objects after replaying an index: (id, generation) -> (offset, size).
using Replayed = std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>>;

Replayed replay(const std::vector<LogIndexEntry>& entries) {
  Replayed live;
  for (const LogIndexEntry& e : entries) {
    if (e.op == LogIndexEntry::Op::put) live[{e.id, e.generation}] = {e.offset, e.size};
    else live.erase({e.id, e.generation});
  }
  return live;
}

/// One log and its index.
struct Lane {
  unsigned number = 0;
  fs::path log_path, index_path;
  int fd = -1;  ///< the log, read + write; O_DIRECT when `direct`
  bool direct = false;
  int index_fd = -1;
  std::uint64_t index_end = 0;  ///< where the next index entry goes
  std::uint64_t tail = 0;       ///< where the next object goes
  std::uint64_t live = 0;       ///< committed objects not removed
  unsigned writing = 0;         ///< objects reserved, not yet committed or abandoned
  bool durable = false;         ///< took a durable commit: its truncations must be synced too
  bool folder_synced = false;   ///< the log's and index's folder entries are on the device (owner thread only)
  bool sealed = false;          ///< written by an earlier run: read only, deleted once empty

  ~Lane() {
    if (fd >= 0) ::close(fd);
    if (index_fd >= 0) ::close(index_fd);
  }
};

struct Extent {
  std::shared_ptr<Lane> lane;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct Space {
  fs::path dir;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Extent> objects;  ///< (id, generation)
  std::map<unsigned, std::shared_ptr<Lane>> lanes;
  std::unordered_map<std::thread::id, std::shared_ptr<Lane>> writers;  ///< the log each thread appends to
  unsigned next_lane = 0;
};

class LogLayout;

class LogPlacement final : public Placement {
 public:
  LogPlacement(LogLayout& layout, std::shared_ptr<Space> space, std::shared_ptr<Lane> lane,
               const ObjectRef& ref, std::uint64_t offset, std::uint64_t size, bool writing)
      : layout_(layout),
        space_(std::move(space)),
        lane_(std::move(lane)),
        id_(ref.id),
        generation_(ref.generation),
        size_(size),
        writing_(writing) {
    fd_ = lane_->fd;
    base_ = offset;
    room_ = align_up(size);
    path_ = lane_->log_path;
    direct_ = lane_->direct;
    whole_file_ = false;
  }
  ~LogPlacement() override;
  void commit(bool durable) override;

 private:
  friend class LogLayout;
  LogLayout& layout_;
  std::shared_ptr<Space> space_;
  std::shared_ptr<Lane> lane_;
  std::uint64_t id_, generation_, size_;
  bool writing_;
  bool committed_ = false;
};

class LogLayout final : public ObjectLayout {
 public:
  using ObjectLayout::ObjectLayout;

  void open_space(const std::string& space) override {
    auto s = std::make_shared<Space>();
    s->dir = tier_.space_path(space);
    std::error_code ec;
    std::map<unsigned, std::vector<LogIndexEntry>> found;
    for (const auto& e : fs::directory_iterator(s->dir, ec)) {
      const std::string name = e.path().filename().string();
      const long idx = lane_number(name, ".idx");
      const long log = lane_number(name, ".mlbs");
      if (idx >= 0) found[static_cast<unsigned>(idx)] = read_log_index(e.path());
      if (log >= 0) found.try_emplace(static_cast<unsigned>(log));  // a log without an index holds nothing
      if (idx >= 0 || log >= 0) s->next_lane = std::max(s->next_lane, static_cast<unsigned>(std::max(idx, log)) + 1);
    }
    for (auto& [n, entries] : found) {
      auto lane = std::make_shared<Lane>();
      lane->number = n;
      lane->log_path = s->dir / fmt::format("log-{}.mlbs", n);
      lane->index_path = s->dir / fmt::format("log-{}.idx", n);
      lane->sealed = lane->durable = true;
      // New entries go after everything there, torn tail included (readers skip it).
      const std::uint64_t bytes = fs::file_size(lane->index_path, ec);
      lane->index_end = ec ? 0 : (bytes + sizeof(DiskEntry) - 1) / sizeof(DiskEntry) * sizeof(DiskEntry);
      for (const auto& [key, where] : replay(entries)) {
        s->objects[key] = Extent{lane, where.first, where.second};
        ++lane->live;
        lane->tail = std::max(lane->tail, where.first + align_up(where.second));
      }
      s->lanes[n] = std::move(lane);  // even if empty: deleted once this runtime writes here (see create())
    }
    std::lock_guard lock(mu_);
    spaces_[space] = std::move(s);  // a reopened space is read afresh: another process may have changed it
  }

  void close_space(const std::string& space) noexcept override {
    std::lock_guard lock(mu_);
    spaces_.erase(space);  // descriptors close with the last placement that holds a lane
  }

  std::unique_ptr<Placement> create(const ObjectRef& ref, std::uint64_t size, OpenMode mode) override {
    std::shared_ptr<Space> s;
    std::shared_ptr<Lane> lane;
    std::uint64_t offset;
    const std::uint64_t room = align_up(size);
    {
      std::lock_guard lock(mu_);
      s = space(ref);
      std::shared_ptr<Lane>& mine = s->writers[std::this_thread::get_id()];
      if (!mine) {
        // Writing means the store is this runtime's (persistent stores are
        // locked by now; open_space ran before that): logs an earlier run
        // left with nothing live may go.
        for (auto it = s->lanes.begin(); it != s->lanes.end();) {
          auto next = std::next(it);
          if (it->second->sealed) maybe_empty(*s, it->second);
          it = next;
        }
        mine = new_lane(*s, mode, ref);
      }
      lane = mine;
      offset = lane->tail;
      lane->tail += room;
      ++lane->writing;
    }
    // Blocks allocated up front keep O_DIRECT writes within the file's size,
    // where ext4 and xfs run them side by side. Best effort.
    if (room > 0) ::fallocate(lane->fd, 0, static_cast<off_t>(offset), static_cast<off_t>(room));
    return std::make_unique<LogPlacement>(*this, std::move(s), std::move(lane), ref, offset, size, true);
  }

  std::unique_ptr<Placement> open(const ObjectRef& ref, std::uint64_t size, OpenMode mode) override {
    std::lock_guard lock(mu_);
    std::shared_ptr<Space> s = space(ref);
    auto it = s->objects.find({ref.id, ref.generation});
    if (it == s->objects.end())
      tier_.fail(ENOENT,
                 fmt::format("no object {} in the log indexes of {}", object_file_name(ref.id, ref.generation),
                             s->dir.string()),
                 &ref);
    const Extent& x = it->second;
    if (x.size != size)
      throw SizeMismatchError(EMSGSIZE,
                              fmt::format("{} holds {} bytes for {} at offset {}, the catalog says {}",
                                          x.lane->log_path.string(), x.size,
                                          object_file_name(ref.id, ref.generation), x.offset, size),
                              {ref.store, ref.id, tier_.label()});
    if (x.lane->fd < 0) {  // a log of an earlier run, first read since
      x.lane->fd = open_in_mode(x.lane->log_path, O_RDWR, mode, x.lane->direct);
      if (x.lane->fd < 0) tier_.fail(errno, fmt::format("cannot open {}", x.lane->log_path.string()), &ref);
    }
    return std::make_unique<LogPlacement>(*this, s, x.lane, ref, x.offset, size, false);
  }

  void remove(const ObjectRef& ref) override {
    std::lock_guard lock(mu_);
    auto sit = spaces_.find(ref.space);
    if (sit == spaces_.end()) return;
    Space& s = *sit->second;
    auto it = s.objects.find({ref.id, ref.generation});
    if (it == s.objects.end()) return;
    const Extent x = std::move(it->second);
    s.objects.erase(it);
    Lane& lane = *x.lane;
    // The erase entry only saves a later run from keeping dead blocks: the
    // journal, not the index, says which records exist. Errors are ignored.
    if (lane.index_fd < 0) lane.index_fd = ::open(lane.index_path.c_str(), O_WRONLY | O_CLOEXEC);
    if (lane.index_fd >= 0) put_entry(lane, {LogIndexEntry::Op::erase, ref.id, ref.generation, 0, 0});
    punch(lane, x.offset, align_up(x.size));
    --lane.live;
    maybe_empty(s, x.lane);
  }

  void commit(LogPlacement& p, bool durable) {
    Lane& lane = *p.lane_;
    if (durable && !lane.folder_synced) {
      if (int err = sync_directory(p.space_->dir))
        tier_.fail(err, fmt::format("cannot fsync the folder of {}", lane.log_path.string()), nullptr);
      lane.folder_synced = true;
    }
    std::uint64_t pos;
    {
      std::lock_guard lock(mu_);
      pos = lane.index_end;
      lane.index_end += sizeof(DiskEntry);
    }
    write_entry(lane, pos, {LogIndexEntry::Op::put, p.id_, p.generation_, p.base_, p.size_});
    if (durable && ::fdatasync(lane.index_fd) != 0)
      tier_.fail(errno, fmt::format("cannot fdatasync {}", lane.index_path.string()), nullptr);
    std::lock_guard lock(mu_);
    p.space_->objects[{p.id_, p.generation_}] = Extent{p.lane_, p.base_, p.size_};
    ++lane.live;
    --lane.writing;
    lane.durable = lane.durable || durable;
    p.committed_ = true;
  }

  void abandon(LogPlacement& p) noexcept {
    std::lock_guard lock(mu_);
    Lane& lane = *p.lane_;
    --lane.writing;
    if (p.base_ + p.room_ == lane.tail) lane.tail = p.base_;  // the last reservation: take it back
    else punch(lane, p.base_, p.room_);
    maybe_empty(*p.space_, p.lane_);
  }

 private:
  std::shared_ptr<Space> space(const ObjectRef& ref) {
    auto it = spaces_.find(ref.space);
    if (it == spaces_.end())
      tier_.fail(ENOENT, fmt::format("space {} is not open in the log layout", ref.space), &ref);
    return it->second;
  }

  std::shared_ptr<Lane> new_lane(Space& s, OpenMode mode, const ObjectRef& ref) {
    auto lane = std::make_shared<Lane>();
    // Never the number of a log already here: O_TRUNC would cut it. After an
    // earlier run's log numbered 2^32-1, next_lane wraps to numbers in use.
    while (s.lanes.contains(s.next_lane)) ++s.next_lane;
    lane->number = s.next_lane++;
    lane->log_path = s.dir / fmt::format("log-{}.mlbs", lane->number);
    lane->index_path = s.dir / fmt::format("log-{}.idx", lane->number);
    lane->fd = open_in_mode(lane->log_path, O_RDWR | O_CREAT | O_TRUNC, mode, lane->direct);
    if (lane->fd < 0) tier_.fail(errno, fmt::format("cannot create {}", lane->log_path.string()), &ref);
    lane->index_fd = ::open(lane->index_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (lane->index_fd < 0) tier_.fail(errno, fmt::format("cannot create {}", lane->index_path.string()), &ref);
    s.lanes[lane->number] = lane;
    return lane;
  }

  /// Appends an entry (mu_ held).
  void put_entry(Lane& lane, const LogIndexEntry& e) noexcept {
    const std::uint64_t pos = lane.index_end;
    lane.index_end += sizeof(DiskEntry);
    try {
      write_entry(lane, pos, e);
    } catch (...) {  // see remove(): a lost erase entry costs space, not data
    }
  }

  void write_entry(Lane& lane, std::uint64_t pos, const LogIndexEntry& e) {
    const DiskEntry d = encode(e);
    const auto* p = reinterpret_cast<const char*>(&d);
    std::size_t left = sizeof d;
    while (left > 0) {
      const ssize_t n = ::pwrite(lane.index_fd, p, left, static_cast<off_t>(pos));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) tier_.fail(n < 0 ? errno : EIO, fmt::format("cannot write {}", lane.index_path.string()), nullptr);
      p += n;
      pos += static_cast<std::uint64_t>(n);
      left -= static_cast<std::size_t>(n);
    }
  }

  /// Gives a dead extent's blocks back to the file system. Where holes
  /// cannot be punched the space returns when the whole log empties.
  static void punch(Lane& lane, std::uint64_t offset, std::uint64_t length) noexcept {
    if (lane.fd >= 0 && length > 0)
      ::fallocate(lane.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(length));
  }

  /// A log with nothing live or being written starts over (mu_ held): cut
  /// back to empty, or deleted if an earlier run wrote it. The index is cut
  /// first: a crash in between leaves an unindexed log, which holds nothing.
  void maybe_empty(Space& s, const std::shared_ptr<Lane>& lane) noexcept {
    if (lane->live > 0 || lane->writing > 0) return;
    if (lane->sealed) {
      ::unlink(lane->index_path.c_str());
      ::unlink(lane->log_path.c_str());
      s.lanes.erase(lane->number);
      return;
    }
    if (lane->index_fd >= 0 && ::ftruncate(lane->index_fd, 0) == 0) {
      if (lane->durable) ::fdatasync(lane->index_fd);
      lane->index_end = 0;
    }
    if (lane->fd >= 0 && ::ftruncate(lane->fd, 0) == 0) lane->tail = 0;
  }

  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Space>> spaces_;
};

LogPlacement::~LogPlacement() {
  if (writing_ && !committed_) layout_.abandon(*this);
}

void LogPlacement::commit(bool durable) { layout_.commit(*this, durable); }

}  // namespace

std::unique_ptr<ObjectLayout> make_log_layout(const DirectoryBackend& tier) {
  return std::make_unique<LogLayout>(tier);
}

std::array<std::byte, kLogIndexEntryBytes> encode_log_index_entry(const LogIndexEntry& e) {
  const DiskEntry d = encode(e);
  std::array<std::byte, kLogIndexEntryBytes> bytes;
  std::memcpy(bytes.data(), &d, sizeof d);
  return bytes;
}

std::vector<LogIndexEntry> read_log_index(const fs::path& index_file) {
  std::vector<LogIndexEntry> out;
  const int fd = ::open(index_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  DiskEntry d{};
  for (off_t pos = 0;; pos += static_cast<off_t>(sizeof d)) {
    const ssize_t n = ::pread(fd, &d, sizeof d, pos);
    if (n != static_cast<ssize_t>(sizeof d)) break;  // end, or a torn last entry
    if (d.magic != kMagic || d.check != catalog::checksum(&d, kChecked)) continue;
    if (d.op != static_cast<std::uint32_t>(LogIndexEntry::Op::put) &&
        d.op != static_cast<std::uint32_t>(LogIndexEntry::Op::erase))
      continue;
    out.push_back({static_cast<LogIndexEntry::Op>(d.op), d.id, d.generation, d.offset, d.size});
  }
  ::close(fd);
  return out;
}

StoredObject locate_stored_object(const fs::path& space_dir, std::uint64_t id, std::uint64_t generation) {
  StoredObject found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(space_dir, ec)) {
    const long n = lane_number(e.path().filename().string(), ".idx");
    if (n < 0) continue;
    const Replayed live = replay(read_log_index(e.path()));
    const auto it = live.find({id, generation});
    if (it == live.end()) continue;
    found.found = true;
    found.file = space_dir / fmt::format("log-{}.mlbs", n);
    found.offset = it->second.first;
    const std::uint64_t log_bytes = fs::file_size(found.file, ec);
    found.bytes = ec || log_bytes <= found.offset ? 0 : std::min(it->second.second, log_bytes - found.offset);
    return found;
  }
  found.file = space_dir / object_file_name(id, generation);
  const std::uint64_t bytes = fs::file_size(found.file, ec);
  found.found = !ec;
  found.bytes = ec ? 0 : bytes;
  return found;
}

std::vector<fs::path> list_stored_objects(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    if (e.path().extension() == ".rec") out.push_back(e.path());
    if (lane_number(e.path().filename().string(), ".idx") >= 0)
      for (const auto& [key, where] : replay(read_log_index(e.path())))
        out.push_back(e.path().parent_path() / object_file_name(key.first, key.second));
  }
  return out;
}

}  // namespace mlbs::tiers
