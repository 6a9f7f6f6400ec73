#include "intercept/real.hpp"

#include <dlfcn.h>
#include <sys/ioctl.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mlbs::intercept::real {
namespace {

/// The next definition of `name` after this library. Failing to find one
/// of the C library's file functions leaves nothing sensible to do.
void* next(const char* name) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "mlbs-run: the C library has no '%s' (%s)\n", name, ::dlerror());
    std::abort();
  }
  return f;
}

}  // namespace

// Each function's pointer, looked up on first use: a relaxed atomic, as two
// threads that race to find it find the same one.
#define MLBS_REAL(ret, name, params, args)                                  \
  ret name params {                                                         \
    using Fn = ret(*) params;                                               \
    static std::atomic<Fn> fn{nullptr};                                     \
    Fn found = fn.load(std::memory_order_relaxed);                          \
    if (!found) fn.store(found = reinterpret_cast<Fn>(next(#name)), std::memory_order_relaxed); \
    return found args;                                                      \
  }

MLBS_REAL(int, open, (const char* path, int flags, mode_t mode), (path, flags, mode))
MLBS_REAL(int, openat, (int dirfd, const char* path, int flags, mode_t mode), (dirfd, path, flags, mode))
MLBS_REAL(int, close, (int fd), (fd))
MLBS_REAL(ssize_t, read, (int fd, void* buf, size_t n), (fd, buf, n))
MLBS_REAL(ssize_t, write, (int fd, const void* buf, size_t n), (fd, buf, n))
MLBS_REAL(ssize_t, pread, (int fd, void* buf, size_t n, off_t off), (fd, buf, n, off))
MLBS_REAL(ssize_t, pwrite, (int fd, const void* buf, size_t n, off_t off), (fd, buf, n, off))
MLBS_REAL(ssize_t, readv, (int fd, const struct iovec* iov, int n), (fd, iov, n))
MLBS_REAL(ssize_t, writev, (int fd, const struct iovec* iov, int n), (fd, iov, n))
MLBS_REAL(ssize_t, preadv, (int fd, const struct iovec* iov, int n, off_t off), (fd, iov, n, off))
MLBS_REAL(ssize_t, pwritev, (int fd, const struct iovec* iov, int n, off_t off), (fd, iov, n, off))
MLBS_REAL(off_t, lseek, (int fd, off_t off, int whence), (fd, off, whence))
MLBS_REAL(int, fsync, (int fd), (fd))
MLBS_REAL(int, fdatasync, (int fd), (fd))
MLBS_REAL(int, ftruncate, (int fd, off_t len), (fd, len))
MLBS_REAL(int, truncate, (const char* path, off_t len), (path, len))
MLBS_REAL(int, fstat, (int fd, struct stat* st), (fd, st))
MLBS_REAL(int, stat, (const char* path, struct stat* st), (path, st))
MLBS_REAL(int, lstat, (const char* path, struct stat* st), (path, st))
MLBS_REAL(int, fstatat, (int dirfd, const char* path, struct stat* st, int flags), (dirfd, path, st, flags))
MLBS_REAL(int, statx, (int dirfd, const char* path, int flags, unsigned mask, struct statx* st),
          (dirfd, path, flags, mask, st))
MLBS_REAL(int, unlink, (const char* path), (path))
MLBS_REAL(int, unlinkat, (int dirfd, const char* path, int flags), (dirfd, path, flags))
MLBS_REAL(int, rename, (const char* from, const char* to), (from, to))
MLBS_REAL(int, renameat, (int fromfd, const char* from, int tofd, const char* to), (fromfd, from, tofd, to))
MLBS_REAL(int, renameat2, (int fromfd, const char* from, int tofd, const char* to, unsigned flags),
          (fromfd, from, tofd, to, flags))
MLBS_REAL(int, dup, (int fd), (fd))
MLBS_REAL(int, dup2, (int fd, int to), (fd, to))
MLBS_REAL(int, dup3, (int fd, int to, int flags), (fd, to, flags))
MLBS_REAL(int, fcntl, (int fd, int cmd, long arg), (fd, cmd, arg))
MLBS_REAL(int, ioctl, (int fd, unsigned long req, void* arg), (fd, req, arg))
MLBS_REAL(int, posix_fadvise, (int fd, off_t off, off_t len, int advice), (fd, off, len, advice))
MLBS_REAL(int, fallocate, (int fd, int mode, off_t off, off_t len), (fd, mode, off, len))
MLBS_REAL(int, posix_fallocate, (int fd, off_t off, off_t len), (fd, off, len))
MLBS_REAL(void*, mmap, (void* addr, size_t len, int prot, int flags, int fd, off_t off),
          (addr, len, prot, flags, fd, off))
MLBS_REAL(ssize_t, copy_file_range, (int in, off_t* in_off, int out, off_t* out_off, size_t len, unsigned flags),
          (in, in_off, out, out_off, len, flags))
MLBS_REAL(ssize_t, sendfile, (int out, int in, off_t* off, size_t count), (out, in, off, count))
MLBS_REAL(ssize_t, readlink, (const char* path, char* buf, size_t size), (path, buf, size))
MLBS_REAL(int, chdir, (const char* path), (path))
MLBS_REAL(int, fchdir, (int fd), (fd))
MLBS_REAL(FILE*, fopen, (const char* path, const char* mode), (path, mode))
MLBS_REAL(FILE*, fdopen, (int fd, const char* mode), (fd, mode))
MLBS_REAL(FILE*, freopen, (const char* path, const char* mode, FILE* stream), (path, mode, stream))
MLBS_REAL(int, fileno, (FILE * f), (f))
MLBS_REAL(int, execve, (const char* path, char* const argv[], char* const envp[]), (path, argv, envp))
MLBS_REAL(int, execvpe, (const char* file, char* const argv[], char* const envp[]), (file, argv, envp))
MLBS_REAL(int, fexecve, (int fd, char* const argv[], char* const envp[]), (fd, argv, envp))

#undef MLBS_REAL

}  // namespace mlbs::intercept::real
