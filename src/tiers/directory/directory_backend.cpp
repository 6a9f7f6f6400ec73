#include "tiers/directory/directory_backend.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <system_error>

#include <fmt/format.h>

#include "tiers/tier_folder.hpp"

namespace mlbs::tiers {
namespace fs = std::filesystem;

std::string object_file_name(std::uint64_t id, std::uint64_t generation) {
  return fmt::format("{:016x}-{:x}.rec", id, generation);
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_object_file_name(std::string_view name) {
  constexpr std::string_view ext = ".rec";
  const auto dash = name.find('-');
  if (dash != 16 || name.size() <= dash + 1 + ext.size() || name.substr(name.size() - ext.size()) != ext)
    return std::nullopt;
  std::uint64_t id = 0, generation = 0;
  const char* first = name.data();
  const char* gen_end = name.data() + name.size() - ext.size();
  auto [id_end, id_ec] = std::from_chars(first, first + dash, id, 16);
  auto [g_end, g_ec] = std::from_chars(first + dash + 1, gen_end, generation, 16);
  if (id_ec != std::errc() || id_end != first + dash || g_ec != std::errc() || g_end != gen_end) return std::nullopt;
  return std::pair{id, generation};
}

int sync_directory(const fs::path& dir) noexcept {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

namespace {

/// What a pread writer and reader share: the object's placement, the names
/// errors need, and the loop that moves all bytes through pread/pwrite.
class FileObject {
 public:
  FileObject(const DirectoryBackend& tier, const ObjectRef& ref, std::unique_ptr<Placement> home)
      : tier_(tier), store_(ref.store), space_(ref.space), id_(ref.id), home_(std::move(home)) {}

 protected:
  /// Evicts the object's clean pages from the page cache. Advisory: a file
  /// system that cannot do it changes timings, not results, so errors are
  /// ignored.
  void drop_cached_pages() noexcept {
    if (home_->fd() >= 0)
      ::posix_fadvise(home_->fd(), static_cast<off_t>(home_->base()), static_cast<off_t>(home_->room()),
                      POSIX_FADV_DONTNEED);
  }
  [[noreturn]] void fail(int err, const char* what) {
    ObjectRef ref{space_, id_, 0, store_};
    tier_.fail(err, fmt::format("{} {}", what, home_->path().string()), &ref);
  }
  /// Transfers exactly `bytes` at the object's `offset`, resuming after short
  /// transfers and EINTR.
  template <class Syscall, class Ptr>
  void transfer(Syscall syscall, Ptr data, std::size_t bytes, std::uint64_t offset, const char* what,
                const char* at_eof) {
    offset += home_->base();
    while (bytes > 0) {
      ssize_t n = syscall(home_->fd(), data, bytes, static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(errno, what);
      }
      if (n == 0) fail(EIO, at_eof);
      data += n;
      offset += static_cast<std::uint64_t>(n);
      bytes -= static_cast<std::size_t>(n);
    }
  }

  const DirectoryBackend& tier_;
  std::string store_, space_;
  std::uint64_t id_;
  std::unique_ptr<Placement> home_;
};

class FileWriter final : public ObjectWriter, FileObject {
 public:
  using FileObject::FileObject;
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    transfer(::pwrite, data, bytes, offset, "cannot write", "wrote nothing to");
  }
  void commit(bool durable) override {
    // Without the page cache the data must be on the device before its pages
    // can be dropped (POSIX_FADV_DONTNEED leaves dirty pages alone).
    const bool drop = !tier_.desc().page_cache;
    if ((durable || drop) && ::fdatasync(home_->fd()) != 0 && (durable || errno != EINVAL))
      fail(errno, "cannot fdatasync");
    if (drop) drop_cached_pages();
    home_->commit(durable);
  }
};

class FileReader final : public ObjectReader, FileObject {
 public:
  using FileObject::FileObject;
  /// Done reading: what was read leaves the page cache (Tier::page_cache false).
  ~FileReader() override {
    if (!tier_.desc().page_cache) drop_cached_pages();
  }
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    transfer(::pread, data, bytes, offset, "cannot read", "unexpected end of file in");
  }
};

}  // namespace

DirectoryBackend::DirectoryBackend(int index, const Tier& desc, std::string fallback)
    : Backend(index, desc),
      fallback_(std::move(fallback)),
      root_(normalised_tier_path(desc.path)),
      layout_(desc.layout.value_or(Layout::file_per_record) == Layout::log ? make_log_layout(*this)
                                                                            : make_file_layout(*this)) {}

DirectoryBackend::~DirectoryBackend() {
  for (const auto& [space, fd] : owner_locks_) ::close(fd);
}

fs::path DirectoryBackend::object_path(const ObjectRef& ref) const {
  return root_ / ref.space / object_file_name(ref.id, ref.generation);
}

void DirectoryBackend::do_probe() {
  if (const FolderProblem problem = prepare_tier_folder(root_)) fail(problem.err, problem.what, nullptr);
  remove_abandoned_scratch();
}

namespace {
bool is_scratch(const std::string& space) {
  return space.size() > 8 && space.compare(space.size() - 8, 8, ".scratch") == 0;
}
constexpr const char* kOwnerLock = ".owner";  // flock()ed by the runtime using the space
}  // namespace

void DirectoryBackend::remove_abandoned_scratch() noexcept {
  // A scratch space whose owner lock can be taken belongs to a runtime that
  // died without cleaning up (SIGKILL, node crash): nobody will read it. The
  // lock goes with its process, however it ends. Shared tiers are left alone:
  // flock() need not be coherent across the nodes that share them.
  if (desc().shared) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_scratch(name) || !e.is_directory(ec)) continue;
    const int fd = ::open((e.path() / kOwnerLock).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // no owner lock: not ours to judge
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
      if (!rm) std::fprintf(stderr, "mlbs: %s: removed %s, left by a runtime that died\n", label().c_str(), name.c_str());
    }
    ::close(fd);
  }
}

void DirectoryBackend::do_create_space(const std::string& space) {
  fs::path dir = root_ / space;
  std::error_code ec;
  const bool fresh = fs::create_directories(dir, ec);
  if (ec) fail(ec.value(), fmt::format("cannot create {}", dir.string()), nullptr);
  if (fresh) sync_directory(root_);  // the space must survive a crash as its files do
  if (is_scratch(space)) {
    // The lock appears already held: created and locked under another name,
    // then renamed. Another runtime scanning for abandoned spaces (every MPI
    // rank probes the same paths) would otherwise find it unlocked in between,
    // take it for a dead runtime's, and remove the space being created.
    const fs::path fresh_lock = dir / (std::string(kOwnerLock) + ".new");
    const int fd = ::open(fresh_lock.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::rename(fresh_lock.c_str(), (dir / kOwnerLock).c_str()) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      fail(err, fmt::format("cannot lock {}", (dir / kOwnerLock).string()), nullptr);
    }
    std::lock_guard lock(owners_mu_);
    owner_locks_[space] = fd;
  }
  layout_->open_space(space);
}

void DirectoryBackend::do_remove_space(const std::string& space) noexcept {
  layout_->close_space(space);
  {
    std::lock_guard lock(owners_mu_);
    if (auto it = owner_locks_.find(space); it != owner_locks_.end()) {
      ::close(it->second);
      owner_locks_.erase(it);
    }
  }
  std::error_code ec;
  fs::remove_all(root_ / space, ec);
}

std::unique_ptr<ObjectWriter> DirectoryBackend::pread_writer(const ObjectRef& ref, std::unique_ptr<Placement> home) {
  return std::make_unique<FileWriter>(*this, ref, std::move(home));
}

std::unique_ptr<ObjectReader> DirectoryBackend::pread_reader(const ObjectRef& ref, std::unique_ptr<Placement> home) {
  return std::make_unique<FileReader>(*this, ref, std::move(home));
}

std::unique_ptr<ObjectWriter> DirectoryBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  return pread_writer(ref, layout_->create(ref, size, OpenMode::buffered));
}

std::unique_ptr<ObjectReader> DirectoryBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  return pread_reader(ref, layout_->open(ref, size, OpenMode::buffered));
}

void DirectoryBackend::do_remove(const ObjectRef& ref) { layout_->remove(ref); }

std::string DirectoryBackend::do_space_path(const std::string& space) const {
  return (root_ / space).string();
}

}  // namespace mlbs::tiers
