// The files tier's backend: a record is the byte range of the intercepted
// file it stands for (chunk k of file f at offset k * chunk_bytes), written
// behind with pwrite() and made durable with fdatasync(), read back with
// pread(), and dropped from the page cache once written or read, as a
// directory tier's files are (a run larger than memory would find them
// there no more than a run without mlbs-run does). Removing a record
// removes nothing: the file itself is the
// program's, and the cache deletes, truncates and renames it as the program
// asks.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "intercept/real.hpp"
#include "intercept/real_file.hpp"
#include "tiers/backend.hpp"
#include "tiers/registry.hpp"

namespace mlbs::intercept {

int RealFile::descriptor() {
  if (fd < 0) fd = real::open(path.c_str(), O_RDWR | O_CLOEXEC, 0);
  return fd;
}

RealFile::~RealFile() {
  if (fd >= 0) real::close(fd);
}

void Registry::add(std::uint64_t file, std::shared_ptr<RealFile> f) {
  std::lock_guard lock(mu_);
  files_[file] = std::move(f);
}

std::shared_ptr<RealFile> Registry::find(std::uint64_t file) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(file);
  return it == files_.end() ? nullptr : it->second;
}

void Registry::remove(std::uint64_t file) {
  std::lock_guard lock(mu_);
  files_.erase(file);
}

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: helpers may still look files up at exit
  return *r;
}

namespace {

/// Where chunk k starts.
std::uint64_t chunk_offset(std::uint64_t k) { return k * registry().chunk_bytes(); }

/// What a writer and a reader of one chunk's record share: the chunk, its
/// file, and failing as the tier (an error naming the file and the record).
class ChunkIo {
 protected:
  ChunkIo(const tiers::Backend& tier, std::shared_ptr<RealFile> file, ChunkId id)
      : tier_(tier), file_(std::move(file)), id_(id) {}
  [[noreturn]] void fail(int err, const char* what) const {
    tiers::ObjectRef ref{"", id_.id(), 0, ""};
    tier_.fail(err, fmt::format("{} {}", what, file_->path), &ref);
  }
  /// Moves `bytes` at `offset` within the chunk with `io` (pread or pwrite,
  /// whole or failing), file_->mu held; returns where in the file it started.
  template <class Io, class Ptr>
  std::uint64_t transfer(Io io, int fd, std::uint64_t offset, Ptr data, std::size_t bytes, const char* what) const {
    const std::uint64_t start = chunk_offset(id_.chunk) + offset;
    std::uint64_t at = start;
    while (bytes > 0) {
      const ssize_t n = io(fd, data, bytes, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n < 0 ? errno : EIO, n < 0 ? what : "short transfer of");
      data += n;
      bytes -= static_cast<std::size_t>(n);
      at += static_cast<std::uint64_t>(n);
    }
    return start;
  }
  const tiers::Backend& tier_;
  std::shared_ptr<RealFile> file_;
  ChunkId id_;
};

class FilesWriter final : public tiers::ObjectWriter, ChunkIo {
 public:
  FilesWriter(const tiers::Backend& tier, std::shared_ptr<RealFile> file, ChunkId id)
      : ChunkIo(tier, std::move(file), id) {}
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    std::lock_guard lock(file_->mu);
    if (!file_->is_current(id_.chunk, id_.version)) return;  // rewritten, cut off or gone since
    const int fd = file_->descriptor();
    if (fd < 0) fail(errno, "cannot open");
    transfer(real::pwrite, fd, offset, data, bytes, "cannot write");
    wrote_ = true;
  }
  void commit(bool durable) override {
    if (!wrote_) return;
    std::lock_guard lock(file_->mu);
    if (file_->fd < 0) return;
    // Durable, or at least on the device: only then do its pages drop.
    if (real::fdatasync(file_->fd) != 0 && durable) fail(errno, "cannot fdatasync");
    const std::uint64_t c = registry().chunk_bytes();
    real::posix_fadvise(file_->fd, static_cast<off_t>(id_.chunk * c), static_cast<off_t>(c), POSIX_FADV_DONTNEED);
  }

 private:
  bool wrote_ = false;
};

class FilesReader final : public tiers::ObjectReader, ChunkIo {
 public:
  FilesReader(const tiers::Backend& tier, std::shared_ptr<RealFile> file, ChunkId id)
      : ChunkIo(tier, std::move(file), id) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    std::lock_guard lock(file_->mu);
    const int fd = file_->descriptor();
    if (fd < 0) fail(errno, "cannot open");
    const std::uint64_t start = transfer(real::pread, fd, offset, data, bytes, "cannot read");
    real::posix_fadvise(fd, static_cast<off_t>(start), static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
  }
};

class FilesBackend final : public tiers::Backend {
 public:
  using Backend::Backend;

 private:
  std::shared_ptr<RealFile> file_of(const tiers::ObjectRef& ref) const {
    auto f = registry().find(ChunkId::of(ref.id).file);
    if (!f) fail(ENOENT, "no intercepted file for this record", &ref);
    return f;
  }
  void do_probe() override {
    struct stat st;
    if (real::stat(desc().path.c_str(), &st) != 0) fail(errno, "cannot reach the intercepted folder " + desc().path, nullptr);
  }
  void do_create_space(const std::string&) override {}
  void do_remove_space(const std::string&) noexcept override {}
  std::unique_ptr<tiers::ObjectWriter> do_create(const tiers::ObjectRef& ref, std::uint64_t) override {
    return std::make_unique<FilesWriter>(*this, file_of(ref), ChunkId::of(ref.id));
  }
  std::unique_ptr<tiers::ObjectReader> do_open(const tiers::ObjectRef& ref, std::uint64_t) override {
    return std::make_unique<FilesReader>(*this, file_of(ref), ChunkId::of(ref.id));
  }
  void do_remove(const tiers::ObjectRef&) override {}
  std::string do_space_path(const std::string&) const override { return {}; }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> do_list(const std::string&) const override { return {}; }
};

}  // namespace

void register_files_tier() {
  tiers::register_backend("files", [](int index, const Tier& desc, const core::Group*) {
    return std::make_unique<FilesBackend>(index, desc);
  });
}

}  // namespace mlbs::intercept
