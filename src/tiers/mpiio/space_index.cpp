#include "tiers/mpiio/space_index.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "catalog/checksum.hpp"

namespace mlbs::tiers::mpiio {
namespace {

constexpr std::uint32_t kEntryMagic = 0x58494d4c;  // "LMIX"
constexpr std::uint32_t kPut = 1;
constexpr std::uint32_t kErase = 2;
constexpr std::size_t kEntryBytes = 64;

// Little-endian fields: magic u32, op u32, id, generation, size, offset,
// allocated, reserved (u64 each), xxHash3 of the 56 bytes before it.
void encode(std::uint32_t op, const IndexEntry& e, unsigned char* out) {
  std::memset(out, 0, kEntryBytes);
  const std::uint64_t fields[6] = {e.id, e.generation, e.size, e.extent.offset, e.extent.allocated, 0};
  std::memcpy(out, &kEntryMagic, 4);
  std::memcpy(out + 4, &op, 4);
  std::memcpy(out + 8, fields, sizeof fields);
  const std::uint64_t sum = catalog::checksum(out, 56);
  std::memcpy(out + 56, &sum, 8);
}

bool decode(const unsigned char* in, std::uint32_t& op, IndexEntry& e) {
  std::uint32_t magic = 0;
  std::uint64_t sum = 0, fields[6];
  std::memcpy(&magic, in, 4);
  std::memcpy(&op, in + 4, 4);
  std::memcpy(fields, in + 8, sizeof fields);
  std::memcpy(&sum, in + 56, 8);
  if (magic != kEntryMagic || (op != kPut && op != kErase) || sum != catalog::checksum(in, 56)) return false;
  e = {fields[0], fields[1], fields[2], {fields[3], fields[4]}};
  return true;
}

}  // namespace

SpaceIndex::~SpaceIndex() {
  if (fd_ >= 0) ::close(fd_);
}

int SpaceIndex::open(const std::filesystem::path& file) {
  std::lock_guard lock(mu_);
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return errno;
  unsigned char buf[kEntryBytes];
  for (;;) {
    const ssize_t n = ::pread(fd_, buf, kEntryBytes, static_cast<off_t>(end_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    std::uint32_t op = 0;
    IndexEntry e;
    if (static_cast<std::size_t>(n) < kEntryBytes || !decode(buf, op, e)) break;
    if (op == kPut)
      live_[{e.id, e.generation}] = e;
    else
      live_.erase({e.id, e.generation});
    end_ += kEntryBytes;
  }
  // A torn last append: later entries go where it began.
  if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) return errno;
  return 0;
}

std::optional<IndexEntry> SpaceIndex::find(std::uint64_t id, std::uint64_t generation) const {
  std::lock_guard lock(mu_);
  auto it = live_.find({id, generation});
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

int SpaceIndex::append(std::uint32_t op, const IndexEntry& entry) {
  if (fd_ < 0) return 0;
  unsigned char buf[kEntryBytes];
  encode(op, entry, buf);
  std::size_t done = 0;
  while (done < kEntryBytes) {
    const ssize_t n = ::pwrite(fd_, buf + done, kEntryBytes - done, static_cast<off_t>(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  end_ += kEntryBytes;
  return 0;
}

int SpaceIndex::put(const IndexEntry& entry, bool durable) {
  std::lock_guard lock(mu_);
  if (int err = append(kPut, entry)) return err;
  if (durable && fd_ >= 0 && ::fdatasync(fd_) != 0) return errno;
  live_[{entry.id, entry.generation}] = entry;
  return 0;
}

std::optional<Extent> SpaceIndex::erase(std::uint64_t id, std::uint64_t generation, int& err) {
  std::lock_guard lock(mu_);
  err = 0;
  auto it = live_.find({id, generation});
  if (it == live_.end()) return std::nullopt;
  if ((err = append(kErase, it->second))) return std::nullopt;
  const Extent extent = it->second.extent;
  live_.erase(it);
  return extent;
}

std::vector<IndexEntry> SpaceIndex::entries() const {
  std::lock_guard lock(mu_);
  std::vector<IndexEntry> out;
  out.reserve(live_.size());
  for (const auto& [key, e] : live_) out.push_back(e);
  return out;
}

}  // namespace mlbs::tiers::mpiio
