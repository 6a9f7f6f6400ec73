#include "catalog/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "catalog/checksum.hpp"
#include "mlbs/errors.hpp"
#include "tiers/directory/directory_backend.hpp"

namespace mlbs::catalog {
namespace {

constexpr char kHeader[Journal::kHeaderBytes + 1] = "MLBS-JOURNAL-v3\n";
constexpr char kHeaderV2[Journal::kHeaderBytes + 1] = "MLBS-JOURNAL-v2\n";  // plain xxHash3 only
constexpr char kHeaderV1[Journal::kHeaderBytes + 1] = "MLBS-JOURNAL-v1\n";  // no frame slots either
constexpr const char* kHeaders[] = {kHeader, kHeaderV2, kHeaderV1};
constexpr std::uint32_t kEntryMagic = 0x4a424c4d;  // "MLBJ"
constexpr unsigned char kFrameSlot = 3;            // a framed put's first slot

/// Whether `bytes` starts with one of our headers (`n` bytes of it: a torn one).
bool known_header(const std::string& bytes, std::size_t n = Journal::kHeaderBytes) {
  for (const char* h : kHeaders)
    if (bytes.compare(0, n, h, n) == 0) return true;
  return false;
}

/// An entry as appended: one slot, or a frame slot and its put.
struct Encoded {
  std::array<unsigned char, 2 * Journal::kEntryBytes> bytes{};
  std::size_t size = 0;
};

template <class T>
void put(unsigned char* at, T v) {
  std::memcpy(at, &v, sizeof v);  // little-endian hosts only, like the data files
}
template <class T>
T get(const unsigned char* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

void encode_slot(unsigned char* b, unsigned char op, ChecksumKind kind, std::uint64_t id, std::uint64_t generation,
                 std::uint64_t a, std::uint64_t c) {
  put(&b[0], kEntryMagic);
  b[4] = op;
  b[5] = static_cast<unsigned char>(kind);  // 0 (plain xxHash3) in v1 and v2, where the byte was padding
  put(&b[8], id);
  put(&b[16], generation);
  put(&b[24], a);
  put(&b[32], c);
  put(&b[40], checksum(b, 40));
}

Encoded encode(const JournalEntry& e) {
  Encoded out;
  if (e.op == JournalEntry::Op::put && e.stored) {
    encode_slot(out.bytes.data(), kFrameSlot, e.checksum_kind, e.id, e.generation, e.stored, e.frame_checksum);
    out.size = Journal::kEntryBytes;
  }
  encode_slot(out.bytes.data() + out.size, static_cast<unsigned char>(e.op), e.checksum_kind, e.id, e.generation,
              e.size, e.checksum);
  out.size += Journal::kEntryBytes;
  return out;
}

/// One slot; false if it is not a whole, valid one.
bool decode(const unsigned char* b, JournalEntry& e, bool& frame) {
  if (get<std::uint32_t>(b) != kEntryMagic) return false;
  if (get<std::uint64_t>(b + 40) != checksum(b, 40)) return false;
  if (b[4] != 1 && b[4] != 2 && b[4] != kFrameSlot) return false;
  if (b[5] > static_cast<unsigned char>(ChecksumKind::pieces)) return false;
  frame = b[4] == kFrameSlot;
  e = {};
  e.checksum_kind = static_cast<ChecksumKind>(b[5]);
  e.op = frame ? JournalEntry::Op::put : static_cast<JournalEntry::Op>(b[4]);
  e.id = get<std::uint64_t>(b + 8);
  e.generation = get<std::uint64_t>(b + 16);
  (frame ? e.stored : e.size) = get<std::uint64_t>(b + 24);
  (frame ? e.frame_checksum : e.checksum) = get<std::uint64_t>(b + 32);
  return true;
}

/// Entries from slots: a frame slot joins the put of the same record right
/// after it; one not followed by it (a torn append) names nothing.
class Joiner {
 public:
  /// Feeds one valid slot; true (and `e` the entry) when it completes one.
  bool feed(JournalEntry& e, bool frame) {
    if (frame) {
      frame_ = e;
      pending_ = true;
      return false;
    }
    if (pending_ && e.op == JournalEntry::Op::put && e.id == frame_.id && e.generation == frame_.generation) {
      e.stored = frame_.stored;
      e.frame_checksum = frame_.frame_checksum;
    }
    pending_ = false;
    return true;
  }
  void reset() { pending_ = false; }

 private:
  JournalEntry frame_;
  bool pending_ = false;
};

}  // namespace

std::map<std::uint64_t, JournalEntry> live_records(const std::vector<JournalEntry>& entries) {
  std::map<std::uint64_t, JournalEntry> live;
  for (const JournalEntry& e : entries) {
    if (e.op == JournalEntry::Op::put) {
      // Helpers may journal two generations of one id out of order: the
      // newest generation is the live one.
      auto it = live.find(e.id);
      if (it == live.end() || it->second.generation < e.generation) live[e.id] = e;
    } else if (auto it = live.find(e.id); it != live.end() && it->second.generation == e.generation) {
      // An erase names the generation it removes: a newer put of the same id
      // may already stand before it in the journal.
      live.erase(it);
    }
  }
  return live;
}

std::vector<JournalEntry> JournalReplay::all_entries() const {
  std::vector<JournalEntry> all = entries;
  all.insert(all.end(), after_damage.begin(), after_damage.end());
  return all;
}

JournalReplay replay_journal(const std::string& path) {
  JournalReplay r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return r;
    throw IoError(errno, fmt::format("cannot open journal {}", path));
  }
  r.exists = true;
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw IoError(err, fmt::format("cannot read journal {}", path));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (bytes.size() < Journal::kHeaderBytes) {
    // Torn while being created: a prefix of the header. Anything else is a
    // foreign file that must not be overwritten.
    if (!known_header(bytes, bytes.size()))
      throw CorruptionError(EBADMSG, fmt::format("{} is not an mlbs journal", path));
    r.torn_bytes = bytes.size();
    return r;
  }
  if (!known_header(bytes)) throw CorruptionError(EBADMSG, fmt::format("{} is not an mlbs journal", path));
  std::size_t off = Journal::kHeaderBytes;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  JournalEntry e;
  bool frame = false;
  Joiner join;
  // The first entry that fails its checksum ends the valid prefix: entries
  // are appended in order, so after a torn one nothing was acknowledged...
  while (off + Journal::kEntryBytes <= bytes.size() && decode(p + off, e, frame)) {
    if (join.feed(e, frame)) r.entries.push_back(e);
    off += Journal::kEntryBytes;
  }
  r.valid_bytes = off;
  r.torn_bytes = bytes.size() - off;
  r.live = live_records(r.entries);
  // ...unless valid entries follow it: then it was damaged after it was
  // written, and those entries (acknowledged, perhaps) must not be ignored.
  std::uint64_t bad = 0;
  join.reset();
  for (std::size_t at = off; at + Journal::kEntryBytes <= bytes.size(); at += Journal::kEntryBytes) {
    if (!decode(p + at, e, frame)) {
      ++bad;
      join.reset();
      continue;
    }
    if (!r.damaged_at) r.damaged_at = off;
    r.damaged_entries = bad;
    if (join.feed(e, frame)) r.after_damage.push_back(e);
  }
  return r;
}

std::uint64_t write_journal(const std::string& path, const std::vector<JournalEntry>& entries) {
  const std::string tmp = path + ".new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(errno, fmt::format("cannot create {}", tmp));
  std::string bytes(kHeader, Journal::kHeaderBytes);
  for (const JournalEntry& e : entries) {
    const Encoded b = encode(e);
    bytes.append(reinterpret_cast<const char*>(b.bytes.data()), b.size);
  }
  int err = 0;
  for (std::size_t done = 0; done < bytes.size() && !err;) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (!err) err = tiers::sync_directory(std::filesystem::path(path).parent_path());
  if (err) {
    ::unlink(tmp.c_str());
    if (err == ENOSPC || err == EDQUOT) throw DeviceFullError(err, fmt::format("cannot write journal {}", path));
    throw IoError(err, fmt::format("cannot write journal {}", path));
  }
  return bytes.size();
}

Journal::Journal(std::string path, std::uint64_t valid_bytes) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(errno, fmt::format("cannot open journal {}", path_));
  if (valid_bytes < kHeaderBytes) {
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, kHeader, kHeaderBytes, 0) != kHeaderBytes ||
        ::fdatasync(fd_) != 0) {
      int err = errno;
      ::close(fd_);
      throw IoError(err, fmt::format("cannot initialise journal {}", path_));
    }
    end_ = kHeaderBytes;
    // The journal's own folder entry must be durable before any put is.
    if (int err = tiers::sync_directory(std::filesystem::path(path_).parent_path())) {
      ::close(fd_);
      throw IoError(err, fmt::format("cannot fsync the folder of journal {}", path_));
    }
  } else {
    if (::ftruncate(fd_, static_cast<off_t>(valid_bytes)) != 0) {
      int err = errno;
      ::close(fd_);
      throw IoError(err, fmt::format("cannot cut the torn tail of journal {}", path_));
    }
    // A v1 or v2 journal may get frame slots and pieces checksums from now
    // on: say so, or an older mlbs would read them as damage or bad copies.
    // All headers are one length.
    char header[kHeaderBytes];
    if (::pread(fd_, header, kHeaderBytes, 0) == static_cast<ssize_t>(kHeaderBytes) &&
        std::memcmp(header, kHeader, kHeaderBytes) != 0 &&
        (::pwrite(fd_, kHeader, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes) || ::fdatasync(fd_) != 0)) {
      int err = errno;
      ::close(fd_);
      throw IoError(err, fmt::format("cannot upgrade the header of journal {}", path_));
    }
    end_ = valid_bytes;
  }
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const JournalEntry& e) {
  const Encoded b = encode(e);
  std::lock_guard lock(mu_);
  ssize_t n = ::pwrite(fd_, b.bytes.data(), b.size, static_cast<off_t>(end_));
  if (n != static_cast<ssize_t>(b.size)) {
    int err = n < 0 ? errno : EIO;
    // Cut a partial entry so later appends stay aligned to entries.
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) {}
    if (err == ENOSPC || err == EDQUOT)
      throw DeviceFullError(err, fmt::format("cannot append to journal {}", path_));
    throw IoError(err, fmt::format("cannot append to journal {}", path_));
  }
  end_ += b.size;
}

void Journal::sync() {
  std::lock_guard lock(mu_);
  if (::fdatasync(fd_) != 0) throw IoError(errno, fmt::format("cannot fdatasync journal {}", path_));
}

}  // namespace mlbs::catalog
