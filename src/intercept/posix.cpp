// mlbs — the POSIX file calls of a program run under mlbs-run, wrapped
// (LD_PRELOAD): a call on a path under the intercepted folder, or on a
// descriptor of such a file, goes to the cache (cache.hpp); every other call
// goes straight to the C library, after one test (a path prefix, or an
// atomic count of intercepted descriptors). 64-bit variants, the fortified
// (_chk) entry points and the old __xstat family are the same functions here
// (x86-64: off_t and struct stat are 64-bit already).
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "intercept/cache.hpp"
#include "intercept/paths.hpp"
#include "intercept/real.hpp"

using mlbs::intercept::Cache;
using mlbs::intercept::OpenFile;
namespace real = mlbs::intercept::real;

#define MLBS_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

/// The absolute path of `path` when the cache intercepts it. Most paths a
/// program uses are outside the folder, and told so without an allocation.
std::optional<std::string> intercepted(Cache* c, int dirfd, const char* path) {
  if (!c || !path) return std::nullopt;
  if (dirfd == AT_FDCWD && !c->may_intercept(path)) return std::nullopt;
  auto abs = mlbs::intercept::absolute(dirfd, path);
  if (!abs || !c->intercepts(*abs)) return std::nullopt;
  return abs;
}

/// The open file behind `fd` when the cache has it (none of the program's
/// descriptors are its: one atomic load).
std::shared_ptr<OpenFile> cached(Cache*& c, int fd) {
  c = nullptr;
  if (!Cache::fds_open()) return nullptr;
  c = Cache::get();
  return c ? c->lookup(fd) : nullptr;
}

int do_openat(int dirfd, const char* path, int flags, mode_t mode) {
  Cache* c = Cache::get();
  const auto abs = intercepted(c, dirfd, path);
  const int fd = real::openat(dirfd, path, flags, mode);
  if (abs && fd >= 0)
    if (const int err = c->opened(fd, *abs, flags)) {
      real::close(fd);
      errno = err;
      return -1;
    }
  return fd;
}

mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace

// --- opening and closing -----------------------------------------------------

MLBS_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_openat(AT_FDCWD, path, flags, mode);
}
MLBS_EXPORT int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_openat(AT_FDCWD, path, flags, mode);
}
MLBS_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_openat(dirfd, path, flags, mode);
}
MLBS_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_openat(dirfd, path, flags, mode);
}
MLBS_EXPORT int __open_2(const char* path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
MLBS_EXPORT int __open64_2(const char* path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
MLBS_EXPORT int __openat_2(int dirfd, const char* path, int flags) { return do_openat(dirfd, path, flags, 0); }
MLBS_EXPORT int __openat64_2(int dirfd, const char* path, int flags) { return do_openat(dirfd, path, flags, 0); }
MLBS_EXPORT int creat(const char* path, mode_t mode) {
  return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}
MLBS_EXPORT int creat64(const char* path, mode_t mode) {
  return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

MLBS_EXPORT int close(int fd) {
  Cache* c;
  if (cached(c, fd)) return c->close(fd);
  return real::close(fd);
}

MLBS_EXPORT int dup(int fd) {
  Cache* c;
  const bool ours = cached(c, fd) != nullptr;
  const int to = real::dup(fd);
  return ours ? c->dup_to(fd, to) : to;
}
MLBS_EXPORT int dup3(int fd, int to, int flags) {
  Cache* c;
  if (cached(c, to) && to != fd) c->close(to);  // dup3 closes `to` first, as the cache must see
  const bool ours = cached(c, fd) != nullptr;
  const int rc = real::dup3(fd, to, flags);
  return ours && rc >= 0 ? c->dup_to(fd, rc) : rc;
}
MLBS_EXPORT int dup2(int fd, int to) {
  if (fd == to) return real::dup2(fd, to);
  Cache* c;
  if (cached(c, to)) c->close(to);
  const bool ours = cached(c, fd) != nullptr;
  const int rc = real::dup2(fd, to);
  return ours && rc >= 0 ? c->dup_to(fd, rc) : rc;
}

MLBS_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const long arg = va_arg(ap, long);
  va_end(ap);
  Cache* c;
  std::shared_ptr<OpenFile> of = cached(c, fd);
  const int rc = real::fcntl(fd, cmd, arg);
  if (!of || rc < 0) return rc;
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return c->dup_to(fd, rc);
  if (cmd == F_SETFL) c->set_flags(*of, static_cast<int>(arg));
  return rc;
}
MLBS_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const long arg = va_arg(ap, long);
  va_end(ap);
  return fcntl(fd, cmd, arg);
}

// --- data ----------------------------------------------------------------------

MLBS_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->read(*of, buf, n);
  return real::read(fd, buf, n);
}
MLBS_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t) { return read(fd, buf, n); }
MLBS_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->write(*of, buf, n);
  return real::write(fd, buf, n);
}
MLBS_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->pread(*of, buf, n, off);
  return real::pread(fd, buf, n, off);
}
MLBS_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off_t off) { return pread(fd, buf, n, off); }
MLBS_EXPORT ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t) { return pread(fd, buf, n, off); }
MLBS_EXPORT ssize_t __pread64_chk(int fd, void* buf, size_t n, off_t off, size_t) { return pread(fd, buf, n, off); }
MLBS_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->pwrite(*of, buf, n, off);
  return real::pwrite(fd, buf, n, off);
}
MLBS_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
MLBS_EXPORT ssize_t readv(int fd, const struct iovec* iov, int n) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->readv(*of, iov, n, std::nullopt);
  return real::readv(fd, iov, n);
}
MLBS_EXPORT ssize_t writev(int fd, const struct iovec* iov, int n) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->writev(*of, iov, n, std::nullopt);
  return real::writev(fd, iov, n);
}
MLBS_EXPORT ssize_t preadv(int fd, const struct iovec* iov, int n, off_t off) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->readv(*of, iov, n, off);
  return real::preadv(fd, iov, n, off);
}
MLBS_EXPORT ssize_t preadv64(int fd, const struct iovec* iov, int n, off_t off) { return preadv(fd, iov, n, off); }
MLBS_EXPORT ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->writev(*of, iov, n, off);
  return real::pwritev(fd, iov, n, off);
}
MLBS_EXPORT ssize_t pwritev64(int fd, const struct iovec* iov, int n, off_t off) { return pwritev(fd, iov, n, off); }
MLBS_EXPORT ssize_t preadv2(int fd, const struct iovec* iov, int n, off_t off, int flags) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->readv(*of, iov, n, off == -1 ? std::nullopt : std::optional<off_t>(off));
  using Fn = ssize_t (*)(int, const struct iovec*, int, off_t, int);
  static const Fn f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "preadv2"));
  return f(fd, iov, n, off, flags);
}
MLBS_EXPORT ssize_t pwritev2(int fd, const struct iovec* iov, int n, off_t off, int flags) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->writev(*of, iov, n, off == -1 ? std::nullopt : std::optional<off_t>(off));
  using Fn = ssize_t (*)(int, const struct iovec*, int, off_t, int);
  static const Fn f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "pwritev2"));
  return f(fd, iov, n, off, flags);
}

MLBS_EXPORT off_t lseek(int fd, off_t off, int whence) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->lseek(*of, off, whence);
  return real::lseek(fd, off, whence);
}
MLBS_EXPORT off_t lseek64(int fd, off_t off, int whence) { return lseek(fd, off, whence); }

MLBS_EXPORT int fsync(int fd) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->fsync(*of);
  return real::fsync(fd);
}
MLBS_EXPORT int fdatasync(int fd) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->fsync(*of);
  return real::fdatasync(fd);
}

MLBS_EXPORT int ftruncate(int fd, off_t len) {
  Cache* c;
  if (auto of = cached(c, fd)) return c->ftruncate(*of, len);
  return real::ftruncate(fd, len);
}
MLBS_EXPORT int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }
MLBS_EXPORT int truncate(const char* path, off_t len) {
  Cache* c = Cache::get();
  const auto abs = intercepted(c, AT_FDCWD, path);
  const int rc = real::truncate(path, len);
  return abs && rc == 0 ? c->truncate(*abs, len) : rc;
}
MLBS_EXPORT int truncate64(const char* path, off_t len) { return truncate(path, len); }

MLBS_EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice) {
  Cache* c;
  if (cached(c, fd)) return 0;  // the cache decides what stays where
  return real::posix_fadvise(fd, off, len, advice);
}
MLBS_EXPORT int posix_fadvise64(int fd, off_t off, off_t len, int advice) { return posix_fadvise(fd, off, len, advice); }
MLBS_EXPORT int fallocate(int fd, int mode, off_t off, off_t len) {
  Cache* c;
  auto of = cached(c, fd);
  const int rc = real::fallocate(fd, mode, off, len);
  if (of && rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE)) return c->fallocate(*of, off, len);
  return rc;
}
MLBS_EXPORT int fallocate64(int fd, int mode, off_t off, off_t len) { return fallocate(fd, mode, off, len); }
MLBS_EXPORT int posix_fallocate(int fd, off_t off, off_t len) {
  Cache* c;
  auto of = cached(c, fd);
  const int rc = real::posix_fallocate(fd, off, len);
  if (of && rc == 0) c->fallocate(*of, off, len);
  return rc;
}
MLBS_EXPORT int posix_fallocate64(int fd, off_t off, off_t len) { return posix_fallocate(fd, off, len); }

// Copies between descriptors: through the cache when either end is in it
// (the kernel would copy the real file's bytes, which may not be there yet).
namespace {
ssize_t copy_through(int in, off_t* in_off, int out, off_t* out_off, size_t len) {
  std::vector<char> buf(std::min<size_t>(len, 1u << 20));
  size_t done = 0;
  while (done < len) {
    const size_t want = std::min(buf.size(), len - done);
    const ssize_t r = in_off ? pread(in, buf.data(), want, *in_off) : read(in, buf.data(), want);
    if (r < 0) return done ? static_cast<ssize_t>(done) : -1;
    if (r == 0) break;
    ssize_t w = 0;
    while (w < r) {
      const ssize_t k = out_off ? pwrite(out, buf.data() + w, static_cast<size_t>(r - w), *out_off + w)
                                : write(out, buf.data() + w, static_cast<size_t>(r - w));
      if (k < 0) return done ? static_cast<ssize_t>(done) : -1;
      w += k;
    }
    if (in_off) *in_off += r;
    if (out_off) *out_off += r;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}
}  // namespace

MLBS_EXPORT ssize_t copy_file_range(int in, off_t* in_off, int out, off_t* out_off, size_t len, unsigned flags) {
  Cache* c;
  if (cached(c, in) || cached(c, out)) return copy_through(in, in_off, out, out_off, len);
  return real::copy_file_range(in, in_off, out, out_off, len, flags);
}
MLBS_EXPORT ssize_t sendfile(int out, int in, off_t* off, size_t count) {
  Cache* c;
  if (cached(c, in) || cached(c, out)) return copy_through(in, off, out, nullptr, count);
  return real::sendfile(out, in, off, count);
}
MLBS_EXPORT ssize_t sendfile64(int out, int in, off_t* off, size_t count) { return sendfile(out, in, off, count); }

MLBS_EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  Cache* c;
  // Sharing extents with the real file would share bytes not written behind yet.
  if ((req == FICLONE || req == FICLONERANGE || req == FIDEDUPERANGE) && cached(c, fd)) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return real::ioctl(fd, req, arg);
}

MLBS_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  Cache* c;
  if (!(flags & MAP_ANONYMOUS) && cached(c, fd) && c->uncache(fd) != 0) return MAP_FAILED;
  return real::mmap(addr, len, prot, flags, fd, off);
}
MLBS_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

// --- metadata ----------------------------------------------------------------

namespace {
int stat_at(int dirfd, const char* path, struct stat* st, int flags) {
  const int rc = real::fstatat(dirfd, path, st, flags);
  if (rc != 0) return rc;
  Cache* c = Cache::get();
  if ((flags & AT_EMPTY_PATH) && path && !*path) {
    if (auto of = cached(c, dirfd)) c->patch(*of, st);
  } else if (auto abs = intercepted(c, dirfd, path)) {
    c->patch(*abs, st);
  }
  return 0;
}
}  // namespace

MLBS_EXPORT int stat(const char* path, struct stat* st) { return stat_at(AT_FDCWD, path, st, 0); }
// x86-64: struct stat64 is struct stat.
static_assert(sizeof(struct stat64) == sizeof(struct stat));
MLBS_EXPORT int stat64(const char* path, struct stat64* st) {
  return stat_at(AT_FDCWD, path, reinterpret_cast<struct stat*>(st), 0);
}
MLBS_EXPORT int lstat(const char* path, struct stat* st) { return stat_at(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW); }
MLBS_EXPORT int lstat64(const char* path, struct stat64* st) {
  return stat_at(AT_FDCWD, path, reinterpret_cast<struct stat*>(st), AT_SYMLINK_NOFOLLOW);
}
MLBS_EXPORT int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return stat_at(dirfd, path, st, flags);
}
MLBS_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return stat_at(dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}
MLBS_EXPORT int fstat(int fd, struct stat* st) {
  const int rc = real::fstat(fd, st);
  Cache* c;
  if (rc == 0)
    if (auto of = cached(c, fd)) c->patch(*of, st);
  return rc;
}
MLBS_EXPORT int fstat64(int fd, struct stat64* st) { return fstat(fd, reinterpret_cast<struct stat*>(st)); }
MLBS_EXPORT int __xstat(int, const char* path, struct stat* st) { return stat(path, st); }
MLBS_EXPORT int __xstat64(int, const char* path, struct stat* st) { return stat(path, st); }
MLBS_EXPORT int __lxstat(int, const char* path, struct stat* st) { return lstat(path, st); }
MLBS_EXPORT int __lxstat64(int, const char* path, struct stat* st) { return lstat(path, st); }
MLBS_EXPORT int __fxstat(int, int fd, struct stat* st) { return fstat(fd, st); }
MLBS_EXPORT int __fxstat64(int, int fd, struct stat* st) { return fstat(fd, st); }
MLBS_EXPORT int __fxstatat(int, int dirfd, const char* path, struct stat* st, int flags) {
  return stat_at(dirfd, path, st, flags);
}
MLBS_EXPORT int __fxstatat64(int, int dirfd, const char* path, struct stat* st, int flags) {
  return stat_at(dirfd, path, st, flags);
}
MLBS_EXPORT int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st) {
  const int rc = real::statx(dirfd, path, flags, mask, st);
  if (rc != 0) return rc;
  Cache* c = Cache::get();
  if ((flags & AT_EMPTY_PATH) && !*path) {
    if (auto of = cached(c, dirfd)) {
      struct stat s {};
      s.st_mode = S_IFREG;
      c->patch(*of, &s);
      st->stx_size = static_cast<std::uint64_t>(s.st_size);
      st->stx_blocks = std::max<std::uint64_t>(st->stx_blocks, static_cast<std::uint64_t>(s.st_blocks));
    }
  } else if (auto abs = intercepted(c, dirfd, path)) {
    c->patch(*abs, st);
  }
  return 0;
}

MLBS_EXPORT int unlink(const char* path) {
  Cache* c = Cache::get();
  const auto abs = intercepted(c, AT_FDCWD, path);
  const int rc = real::unlink(path);
  if (abs && rc == 0) c->unlinked(*abs);
  return rc;
}
MLBS_EXPORT int unlinkat(int dirfd, const char* path, int flags) {
  Cache* c = Cache::get();
  const auto abs = intercepted(c, dirfd, path);
  const int rc = real::unlinkat(dirfd, path, flags);
  if (abs && rc == 0) c->unlinked(*abs);
  return rc;
}

namespace {
int do_rename(int fromfd, const char* from, int tofd, const char* to, unsigned flags) {
  Cache* c = Cache::get();
  const auto a = intercepted(c, fromfd, from), b = intercepted(c, tofd, to);
  if (!a && b) {
    // A file renamed into the folder arrives whole: nothing of it is cached.
  }
  const int rc = flags ? real::renameat2(fromfd, from, tofd, to, flags) : real::renameat(fromfd, from, tofd, to);
  if (rc != 0 || !c) return rc;
  if (a && b) {
    c->renamed(*a, *b);
  } else if (a) {
    // Out of the folder: it was made complete first (below), nothing stays cached.
    c->unlinked(*a);
  } else if (b) {
    c->unlinked(*b);  // replaced by a file from outside
  }
  return rc;
}
/// A file leaving the folder must be complete before the rename moves it.
int before_leaving(int fromfd, const char* from, int tofd, const char* to) {
  Cache* c = Cache::get();
  const auto a = intercepted(c, fromfd, from), b = intercepted(c, tofd, to);
  if (a && !b) c->complete(*a);
  return 0;
}
}  // namespace

MLBS_EXPORT int rename(const char* from, const char* to) {
  before_leaving(AT_FDCWD, from, AT_FDCWD, to);
  return do_rename(AT_FDCWD, from, AT_FDCWD, to, 0);
}
MLBS_EXPORT int renameat(int fromfd, const char* from, int tofd, const char* to) {
  before_leaving(fromfd, from, tofd, to);
  return do_rename(fromfd, from, tofd, to, 0);
}
MLBS_EXPORT int renameat2(int fromfd, const char* from, int tofd, const char* to, unsigned flags) {
  before_leaving(fromfd, from, tofd, to);
  return do_rename(fromfd, from, tofd, to, flags);
}

// --- the working directory (relative paths are resolved against it) --------

MLBS_EXPORT int chdir(const char* path) {
  const int rc = real::chdir(path);
  if (rc == 0)
    if (Cache* c = Cache::get()) c->changed_directory();
  return rc;
}
MLBS_EXPORT int fchdir(int fd) {
  const int rc = real::fchdir(fd);
  if (rc == 0)
    if (Cache* c = Cache::get()) c->changed_directory();
  return rc;
}
