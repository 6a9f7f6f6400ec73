#include "catalog/live.hpp"

#include <fcntl.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "catalog/checksum.hpp"
#include "mlbs/errors.hpp"
#include "tiers/tier_folder.hpp"

namespace mlbs::catalog::live {

namespace {

constexpr char kMagic[8] = {'M', 'L', 'B', 'S', 'L', 'I', 'V', 'E'};
constexpr std::size_t kText = 256;

using A32 = std::atomic<std::uint32_t>;
using A64 = std::atomic<std::uint64_t>;
static_assert(A32::is_always_lock_free && A64::is_always_lock_free,
              "the live catalog is shared between processes: its atomics must be lock-free");

std::uint64_t unix_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

void put_text(char (&dst)[kText], const std::string& s) {
  const std::size_t n = std::min(s.size(), kText - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

std::string text(const char (&src)[kText]) { return std::string(src, ::strnlen(src, kText)); }

long futex(A32* word, int op, std::uint32_t val, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: writer and readers are different processes.
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, val, timeout, nullptr, 0);
}

}  // namespace

/// One record's slot: a seqlock over the writer's fields, and one field that
/// readers write (read_generation, outside the seqlock). Two cache lines.
struct Slot {
  A32 seq;     ///< odd while the writer changes the slot
  A32 state;   ///< 0 = never used, else RecordState + 1
  A32 copies;  ///< TierMask
  A32 flags;   ///< bit 0: has_checksum; bit 1: its kind (catalog::ChecksumKind)
  A64 id, size, generation, checksum, updated_ns;
  A64 filed_ns;  ///< when this generation first had a copy on a file tier (0: not yet)
  /// The newest generation of this slot's id a reader has read whole: readers
  /// raise it (compare-and-swap to a maximum), the writer only reads it. An
  /// ack for an id's older write is below the new write's generation, so a
  /// reused slot never looks read.
  A64 read_generation;
  A64 stored;          ///< bytes of its file copies when a codec framed them (0: raw)
  A64 frame_checksum;  ///< of that frame
  A64 reserved[5];     ///< room for the next fields without a new layout
};
static_assert(sizeof(Slot) == 128);

struct TierSlot {
  A64 used_bytes, peak_used_bytes, capacity_bytes, bytes_in, bytes_out, ops_in, ops_out, errors, records, busy_ns,
      stalls, raw_bytes_in, raw_bytes_out, codec_ns;
  char kind[kText];
  char path[kText];
};

/// The mapped layout: what the format comment in live.hpp describes.
struct Segment {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;  ///< offset of the first slot
  std::uint32_t slot_count;
  std::uint32_t tier_count;
  std::uint64_t fingerprint;
  std::int32_t pid, rank, ranks;
  std::uint32_t persistent;
  std::uint64_t started_unix_ns;
  char store[kText], space[kText], persistent_space[kText];
  A32 status;     ///< 1 open, 2 closed by its writer
  A32 changes;    ///< futex word: bumped by every notify()
  A32 waiters;    ///< readers sleeping on `changes`
  A32 readers;    ///< in-transit readers attached (View::attach_reader); a crashed one stays counted
  A64 unpublished;
  TierSlot tiers[kMaxTiers];
  std::uint32_t part, parts;  ///< WriterInfo::part and parts

  Slot* slots() { return reinterpret_cast<Slot*>(reinterpret_cast<char*>(this) + header_bytes); }
  const Slot* slots() const {
    return reinterpret_cast<const Slot*>(reinterpret_cast<const char*>(this) + header_bytes);
  }
};

namespace {

constexpr std::uint32_t kHeaderBytes = (sizeof(Segment) + 4095) / 4096 * 4096;

std::size_t segment_bytes(std::uint32_t slots) { return kHeaderBytes + std::size_t{slots} * sizeof(Slot); }

std::uint32_t home(std::uint64_t id, std::uint32_t slots) {
  return static_cast<std::uint32_t>((id * 0x9e3779b97f4a7c15ull) >> 32) % slots;
}

/// The writer's lock: an open-file-description lock over the whole segment.
bool lock_held_by_other(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) return false;
  return fl.l_type != F_UNLCK;
}

}  // namespace

std::string segment_name(const std::string& last_tier_path, const std::string& store, int rank) {
  const std::string key =
      fmt::format("v{}\n{}\n{}\n{}", kLiveVersion, tiers::normalised_tier_path(last_tier_path).string(), store, rank);
  return fmt::format("/mlbs-{}-{:016x}", ::getuid(), checksum(key.data(), key.size()));
}

std::uint64_t config_fingerprint(const Config& cfg) {
  std::string key = fmt::format("{}", static_cast<int>(cfg.durability));
  for (const Tier& t : cfg.tiers)
    key += fmt::format("\n{}:{}", t.kind,
                       t.path.empty() ? std::string() : tiers::normalised_tier_path(t.path).string());
  return checksum(key.data(), key.size());
}

// ----------------------------------------------------------------------------
// writer
// ----------------------------------------------------------------------------

std::unique_ptr<Writer> Writer::create(const WriterInfo& info, std::uint32_t slots) {
  const std::string name = segment_name(info.tier_paths.empty() ? std::string() : info.tier_paths.back(),
                                        info.store, info.rank);
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) break;
    // A segment of that name: a live writer's (leave it) or one a dead writer left (replace it).
    const int old = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
    const bool alive = old >= 0 && lock_held_by_other(old);
    if (old >= 0) ::close(old);
    if (alive) return nullptr;
    ::shm_unlink(name.c_str());
  }
  if (fd < 0)
    throw IoError(errno, fmt::format("cannot create the live catalog {} under /dev/shm: {}", name,
                                     std::strerror(errno)),
                  {info.store, {}, {}});
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const std::size_t bytes = segment_bytes(slots);
  void* p = MAP_FAILED;
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      (p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw IoError(err, fmt::format("cannot set up the live catalog {}: {}", name, std::strerror(err)),
                  {info.store, {}, {}});
  }
  auto w = std::unique_ptr<Writer>(new Writer);
  w->name_ = name;
  w->fd_ = fd;
  w->seg_ = static_cast<Segment*>(p);
  w->bytes_ = bytes;
  w->slots_ = slots;
  Segment& s = *w->seg_;  // fresh pages: all zero
  s.version = kLiveVersion;
  s.header_bytes = kHeaderBytes;
  s.slot_count = slots;
  s.tier_count = static_cast<std::uint32_t>(std::min(info.tier_paths.size(), kMaxTiers));
  s.fingerprint = info.fingerprint;
  s.pid = info.pid;
  s.rank = info.rank;
  s.ranks = info.ranks;
  s.persistent = info.persistent;
  s.started_unix_ns = info.started_unix_ns;
  s.part = info.part;
  s.parts = info.parts;
  put_text(s.store, info.store);
  put_text(s.space, info.space);
  put_text(s.persistent_space, info.persistent_space);
  for (std::uint32_t t = 0; t < s.tier_count; ++t) {
    put_text(s.tiers[t].path, info.tier_paths[t]);
    if (t < info.tier_kinds.size()) put_text(s.tiers[t].kind, info.tier_kinds[t]);
  }
  s.status.store(1, std::memory_order_relaxed);
  // The magic last: a reader that sees it sees a complete header.
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(s.magic, kMagic, sizeof kMagic);
  return w;
}

Writer::~Writer() {
  seg_->status.store(2, std::memory_order_release);
  notify();
  ::munmap(seg_, bytes_);
  ::shm_unlink(name_.c_str());
  ::close(fd_);  // releases the lock: readers see the writer gone
}

std::uint32_t Writer::find_slot(std::uint64_t id, bool insert) {
  Slot* slots = seg_->slots();
  std::uint32_t reuse = slots_;  // the first erased slot on the probe path
  for (std::uint32_t n = 0, i = home(id, slots_); n < slots_; ++n, i = (i + 1) % slots_) {
    const std::uint32_t st = slots[i].state.load(std::memory_order_relaxed);
    if (st == 0) return insert ? (reuse < slots_ ? reuse : i) : slots_;
    if (slots[i].id.load(std::memory_order_relaxed) == id) return i;
    if (reuse == slots_ && st == static_cast<std::uint32_t>(RecordState::erased) + 1) reuse = i;
  }
  return insert ? reuse : slots_;
}

void Writer::publish(const Record& r, RecordState state) {
  const bool erased = state == RecordState::erased;
  const std::uint32_t i = find_slot(r.id, !erased);
  if (i == slots_) {
    if (!erased) seg_->unpublished.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Slot& s = seg_->slots()[i];
  // A retired record's slot may already hold the id's next write: leave that one.
  const bool same_write = s.state.load(std::memory_order_relaxed) != 0 &&
                          s.generation.load(std::memory_order_relaxed) == r.gen;
  if (erased && !same_write) return;
  const std::uint64_t now = unix_ns();
  // A write's first copy on a file tier stamps filed_ns once (readers measure their lag from it).
  std::uint64_t filed = same_write ? s.filed_ns.load(std::memory_order_relaxed) : 0;
  if (!filed && !erased && (r.copies & ~bit(0))) filed = now;
  const std::uint32_t seq = s.seq.load(std::memory_order_relaxed);
  s.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.id.store(r.id, std::memory_order_relaxed);
  s.size.store(r.size, std::memory_order_relaxed);
  s.generation.store(r.gen, std::memory_order_relaxed);
  s.checksum.store(r.checksum, std::memory_order_relaxed);
  s.stored.store(r.stored, std::memory_order_relaxed);
  s.frame_checksum.store(r.frame_checksum, std::memory_order_relaxed);
  s.flags.store((r.has_checksum ? 1u : 0u) | (static_cast<std::uint32_t>(r.checksum_kind) << 1),
                std::memory_order_relaxed);
  s.copies.store(erased ? 0u : r.copies, std::memory_order_relaxed);
  s.updated_ns.store(now, std::memory_order_relaxed);
  s.filed_ns.store(filed, std::memory_order_relaxed);
  s.state.store(static_cast<std::uint32_t>(state) + 1, std::memory_order_relaxed);
  s.seq.store(seq + 2, std::memory_order_release);
}

bool Writer::read_by_reader(std::uint64_t id, std::uint64_t generation) {
  const std::uint32_t i = find_slot(id, false);
  if (i == slots_) return false;
  const Slot& s = seg_->slots()[i];
  return s.read_generation.load(std::memory_order_acquire) >= generation;
}

void Writer::publish_tier(std::size_t t, const TierStats& s, std::uint64_t used_bytes) {
  if (t >= kMaxTiers) return;
  TierSlot& d = seg_->tiers[t];
  d.used_bytes.store(used_bytes, std::memory_order_relaxed);
  d.peak_used_bytes.store(s.peak_used_bytes, std::memory_order_relaxed);
  d.capacity_bytes.store(s.capacity_bytes, std::memory_order_relaxed);
  d.bytes_in.store(s.bytes_in, std::memory_order_relaxed);
  d.bytes_out.store(s.bytes_out, std::memory_order_relaxed);
  d.ops_in.store(s.ops_in, std::memory_order_relaxed);
  d.ops_out.store(s.ops_out, std::memory_order_relaxed);
  d.errors.store(s.errors, std::memory_order_relaxed);
  d.records.store(s.records, std::memory_order_relaxed);
  d.busy_ns.store(s.busy_ns, std::memory_order_relaxed);
  d.stalls.store(s.stalls, std::memory_order_relaxed);
  d.raw_bytes_in.store(s.raw_bytes_in, std::memory_order_relaxed);
  d.raw_bytes_out.store(s.raw_bytes_out, std::memory_order_relaxed);
  d.codec_ns.store(s.codec_ns, std::memory_order_relaxed);
}

void Writer::notify() {
  seg_->changes.fetch_add(1, std::memory_order_seq_cst);
  if (seg_->waiters.load(std::memory_order_seq_cst) != 0) futex(&seg_->changes, FUTEX_WAKE, INT32_MAX, nullptr);
}

std::uint64_t Writer::unpublished() const noexcept { return seg_->unpublished.load(std::memory_order_relaxed); }

std::uint32_t Writer::readers() const noexcept { return seg_->readers.load(std::memory_order_relaxed); }

// ----------------------------------------------------------------------------
// reader
// ----------------------------------------------------------------------------

std::unique_ptr<View> View::open(const std::string& last_tier_path, const std::string& store, int rank) {
  const std::string name = segment_name(last_tier_path, store, rank);
  const ErrorContext where{store, {}, last_tier_path};
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == ENOENT)
      throw UnknownIdError(ENOENT,
                           fmt::format("no running writer publishes store '{}' (rank {}) on '{}': it is not open "
                                       "in a runtime with that last tier, or that runtime has ended",
                                       store, rank, last_tier_path),
                           where);
    throw IoError(errno, fmt::format("cannot open the live catalog {}: {}", name, std::strerror(errno)), where);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < sizeof(Segment)) {
    ::close(fd);
    throw CorruptionError(EPROTO, fmt::format("the live catalog {} is too short to be one", name), where);
  }
  const std::size_t bytes = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    throw IoError(err, fmt::format("cannot map the live catalog {}: {}", name, std::strerror(err)), where);
  }
  auto v = std::unique_ptr<View>(new View);
  v->fd_ = fd;
  v->seg_ = static_cast<Segment*>(p);
  v->bytes_ = bytes;
  const Segment& s = *v->seg_;
  if (std::memcmp(s.magic, kMagic, sizeof kMagic) != 0)
    throw CorruptionError(EPROTO, fmt::format("{} is not an mlbs live catalog (or its writer is still setting it up)", name),
                          where);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.version != kLiveVersion)
    throw InvalidArgumentError(EPROTO,
                               fmt::format("the live catalog of store '{}' has format version {}; this mlbs reads "
                                           "version {} (use the mlbs the writer was built with)",
                                           store, s.version, kLiveVersion),
                               where);
  if (s.header_bytes < sizeof(Segment) || segment_bytes(s.slot_count) - kHeaderBytes + s.header_bytes > bytes)
    throw CorruptionError(EPROTO, fmt::format("the live catalog {} has a header that does not fit it", name), where);
  WriterInfo& i = v->info_;
  i.version = s.version;
  i.pid = s.pid;
  i.rank = s.rank;
  i.ranks = s.ranks;
  i.persistent = s.persistent != 0;
  i.fingerprint = s.fingerprint;
  i.started_unix_ns = s.started_unix_ns;
  i.store = text(s.store);
  i.space = text(s.space);
  i.persistent_space = text(s.persistent_space);
  i.slot_count = s.slot_count;
  i.part = s.part;
  i.parts = s.parts;
  for (std::uint32_t t = 0; t < std::min<std::uint32_t>(s.tier_count, kMaxTiers); ++t) {
    i.tier_paths.push_back(text(s.tiers[t].path));
    i.tier_kinds.push_back(text(s.tiers[t].kind));
  }
  return v;
}

View::~View() {
  if (attached_) seg_->readers.fetch_sub(1, std::memory_order_relaxed);
  ::munmap(seg_, bytes_);
  ::close(fd_);
}

void View::attach_reader() {
  if (std::exchange(attached_, true)) return;
  seg_->readers.fetch_add(1, std::memory_order_relaxed);
}

bool View::writer_alive() const { return lock_held_by_other(fd_); }

bool View::closed() const { return seg_->status.load(std::memory_order_acquire) == 2; }

namespace {

/// One consistent copy of a slot; none while it is never used. A writer
/// changes a slot in a few stores; one that stays odd for long belongs to a
/// writer that died in the middle (`fd`'s lock tells): a typed error, not a hang.
std::optional<RecordView> read_slot(const Slot& s, int fd) {
  for (std::uint64_t spins = 0;; ++spins) {
    const std::uint32_t before = s.seq.load(std::memory_order_acquire);
    if (before & 1) {
      if (spins % 64 == 63) ::sched_yield();
      if (spins % 4096 == 4095 && !lock_held_by_other(fd))
        throw CorruptionError(EPROTO, "the writer of this live catalog died while changing a record's slot",
                              {{}, s.id.load(std::memory_order_relaxed), {}});
      continue;
    }
    RecordView r;
    const std::uint32_t state = s.state.load(std::memory_order_relaxed);
    r.id = s.id.load(std::memory_order_relaxed);
    r.size = s.size.load(std::memory_order_relaxed);
    r.generation = s.generation.load(std::memory_order_relaxed);
    r.checksum = s.checksum.load(std::memory_order_relaxed);
    r.stored = s.stored.load(std::memory_order_relaxed);
    r.frame_checksum = s.frame_checksum.load(std::memory_order_relaxed);
    const std::uint32_t flags = s.flags.load(std::memory_order_relaxed);
    r.has_checksum = flags & 1u;
    r.checksum_kind = static_cast<ChecksumKind>((flags >> 1) & 1u);
    r.copies = s.copies.load(std::memory_order_relaxed);
    r.updated_ns = s.updated_ns.load(std::memory_order_relaxed);
    r.filed_ns = s.filed_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != before) continue;
    if (state == 0) return std::nullopt;
    r.state = static_cast<RecordState>(state - 1);
    r.read = s.read_generation.load(std::memory_order_acquire) >= r.generation;
    return r;
  }
}

}  // namespace

std::optional<RecordView> View::find(std::uint64_t id) const {
  const std::uint32_t n = seg_->slot_count;
  const Slot* slots = seg_->slots();
  for (std::uint32_t k = 0, i = home(id, n); k < n; ++k, i = (i + 1) % n) {
    const std::optional<RecordView> r = read_slot(slots[i], fd_);
    if (!r) return std::nullopt;  // a never-used slot ends the probe
    if (r->id == id) return r;
  }
  return std::nullopt;
}

void View::acknowledge(std::uint64_t id, std::uint64_t generation) {
  const std::uint32_t n = seg_->slot_count;
  Slot* slots = seg_->slots();
  for (std::uint32_t k = 0, i = home(id, n); k < n; ++k, i = (i + 1) % n) {
    const std::optional<RecordView> r = read_slot(slots[i], fd_);
    if (!r) return;  // not published (any more): nothing to keep
    if (r->id != id) continue;
    // Raise, never lower: a late ack of an older write must not undo a newer one's.
    A64& acked = slots[i].read_generation;
    std::uint64_t seen = acked.load(std::memory_order_relaxed);
    while (seen < generation && !acked.compare_exchange_weak(seen, generation, std::memory_order_release,
                                                             std::memory_order_relaxed)) {
    }
    return;
  }
}

std::vector<RecordView> View::records() const {
  std::vector<RecordView> out;
  const Slot* slots = seg_->slots();
  for (std::uint32_t i = 0; i < seg_->slot_count; ++i)
    if (auto r = read_slot(slots[i], fd_)) out.push_back(*r);
  std::sort(out.begin(), out.end(), [](const RecordView& a, const RecordView& b) { return a.id < b.id; });
  return out;
}

std::vector<TierStats> View::tiers() const {
  std::vector<TierStats> out;
  for (std::uint32_t t = 0; t < std::min<std::uint32_t>(seg_->tier_count, kMaxTiers); ++t) {
    const TierSlot& d = seg_->tiers[t];
    TierStats s;
    s.path = info_.tier_paths[t];
    s.kind = info_.tier_kinds[t];
    s.used_bytes = d.used_bytes.load(std::memory_order_relaxed);
    s.peak_used_bytes = d.peak_used_bytes.load(std::memory_order_relaxed);
    s.capacity_bytes = d.capacity_bytes.load(std::memory_order_relaxed);
    s.bytes_in = d.bytes_in.load(std::memory_order_relaxed);
    s.bytes_out = d.bytes_out.load(std::memory_order_relaxed);
    s.ops_in = d.ops_in.load(std::memory_order_relaxed);
    s.ops_out = d.ops_out.load(std::memory_order_relaxed);
    s.errors = d.errors.load(std::memory_order_relaxed);
    s.records = d.records.load(std::memory_order_relaxed);
    s.busy_ns = d.busy_ns.load(std::memory_order_relaxed);
    s.stalls = d.stalls.load(std::memory_order_relaxed);
    s.raw_bytes_in = d.raw_bytes_in.load(std::memory_order_relaxed);
    s.raw_bytes_out = d.raw_bytes_out.load(std::memory_order_relaxed);
    s.codec_ns = d.codec_ns.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  return out;
}

std::uint64_t View::unpublished() const { return seg_->unpublished.load(std::memory_order_relaxed); }

std::uint32_t View::changes() const { return seg_->changes.load(std::memory_order_acquire); }

bool View::wait_change(std::uint32_t seen, std::chrono::milliseconds timeout) const {
  if (changes() != seen) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  seg_->waiters.fetch_add(1, std::memory_order_seq_cst);
  while (changes() == seen) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    futex(&seg_->changes, FUTEX_WAIT, seen, &ts);  // EAGAIN (changed), EINTR, ETIMEDOUT: look again
  }
  seg_->waiters.fetch_sub(1, std::memory_order_seq_cst);
  return changes() != seen;
}

}  // namespace mlbs::catalog::live
