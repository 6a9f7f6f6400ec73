// File per record: every object is a file of its own, <space>/<id>-<generation>.rec.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/layout.hpp"

namespace mlbs::tiers {
namespace fs = std::filesystem;

int open_in_mode(const fs::path& path, int flags, OpenMode mode, bool& direct) {
  direct = mode != OpenMode::buffered;
  int fd = ::open(path.c_str(), flags | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0 && errno == EINVAL && mode == OpenMode::direct_or_buffered) {
    direct = false;
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  }
  return fd;
}

namespace {

class FilePlacement final : public Placement {
 public:
  FilePlacement(const DirectoryBackend& tier, const ObjectRef& ref, fs::path path, bool writing,
                std::uint64_t size, OpenMode mode)
      : tier_(tier), writing_(writing) {
    path_ = std::move(path);
    room_ = size;
    const int flags = writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
    fd_ = open_in_mode(path_, flags, mode, direct_);
    if (fd_ < 0) tier.fail(errno, fmt::format("cannot {} {}", writing ? "create" : "open", path_.string()), &ref);
    if (writing) return;
    // A throwing constructor runs no destructor: close before every throw.
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      close_fd();
      tier.fail(err, fmt::format("cannot stat {}", path_.string()), &ref);
    }
    if (static_cast<std::uint64_t>(st.st_size) != size) {
      close_fd();
      throw SizeMismatchError(EMSGSIZE,
                              fmt::format("{} holds {} bytes, the catalog says {}", path_.string(),
                                          st.st_size, size),
                              {ref.store, ref.id, tier.label()});
    }
  }
  ~FilePlacement() override {
    close_fd();
    if (writing_ && !committed_) ::unlink(path_.c_str());
  }

  void commit(bool durable) override {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail(errno, "cannot close");
    // A durable file must also be findable after a crash: sync its folder entry.
    if (durable)
      if (int err = sync_directory(path_.parent_path())) fail(err, "cannot fsync the folder of");
    committed_ = true;
  }

 private:
  void close_fd() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[noreturn]] void fail(int err, const char* what) const {
    tier_.fail(err, fmt::format("{} {}", what, path_.string()), nullptr);
  }

  const DirectoryBackend& tier_;
  bool writing_;
  bool committed_ = false;
};

class FileLayout final : public ObjectLayout {
 public:
  using ObjectLayout::ObjectLayout;
  void open_space(const std::string&) override {}
  void close_space(const std::string&) noexcept override {}
  std::unique_ptr<Placement> create(const ObjectRef& ref, std::uint64_t size, OpenMode mode) override {
    return std::make_unique<FilePlacement>(tier_, ref, tier_.object_path(ref), true, size, mode);
  }
  std::unique_ptr<Placement> open(const ObjectRef& ref, std::uint64_t size, OpenMode mode) override {
    return std::make_unique<FilePlacement>(tier_, ref, tier_.object_path(ref), false, size, mode);
  }
  void remove(const ObjectRef& ref) override {
    const fs::path p = tier_.object_path(ref);
    if (::unlink(p.c_str()) != 0 && errno != ENOENT)
      tier_.fail(errno, fmt::format("cannot remove {}", p.string()), &ref);
  }
};

}  // namespace

std::unique_ptr<ObjectLayout> make_file_layout(const DirectoryBackend& tier) {
  return std::make_unique<FileLayout>(tier);
}

}  // namespace mlbs::tiers
