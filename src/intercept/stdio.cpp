// mlbs — stdio on intercepted files. glibc's FILE functions reach the kernel
// through its own internal entry points, not the wrapped ones: a stream on
// an intercepted file is therefore a cookie stream (fopencookie) whose reads,
// writes, seeks and close are the wrapped calls on a descriptor the cache
// holds. fileno() gives that descriptor (fsync(fileno(f)) works); fdopen()
// of a cached descriptor makes such a stream too (numpy's tofile/fromfile
// go that way). freopen() onto an intercepted path cannot turn the stream it
// is given into a cookie stream: the file is made complete and left
// uncached, and the C library's freopen() does the rest.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "intercept/cache.hpp"
#include "intercept/paths.hpp"
#include "intercept/real.hpp"

using mlbs::intercept::Cache;
namespace real = mlbs::intercept::real;

#define MLBS_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" ssize_t read(int, void*, size_t);
extern "C" ssize_t write(int, const void*, size_t);
extern "C" off_t lseek(int, off_t, int);
extern "C" int close(int);
extern "C" int open(const char*, int, ...);

namespace {

/// The descriptor behind each cookie stream, for fileno().
std::mutex g_mu;
std::map<FILE*, int>& streams() {
  static auto* m = new std::map<FILE*, int>;  // never destroyed: streams may close during exit
  return *m;
}

ssize_t cookie_read(void* cookie, char* buf, size_t n) {
  return read(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), buf, n);
}
ssize_t cookie_write(void* cookie, const char* buf, size_t n) {
  // 0 would tell stdio the stream failed with no error set.
  const ssize_t w = write(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), buf, n);
  return w < 0 ? -1 : w;
}
int cookie_seek(void* cookie, off64_t* off, int whence) {
  const off_t r = lseek(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), *off, whence);
  if (r < 0) return -1;
  *off = r;
  return 0;
}
int cookie_close(void* cookie) { return close(static_cast<int>(reinterpret_cast<intptr_t>(cookie))); }

/// fopen()'s mode as open() flags; -1 for a mode it does not take.
int flags_of(const char* mode) {
  int flags;
  switch (mode[0]) {
    case 'r': flags = O_RDONLY; break;
    case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
    default: return -1;
  }
  for (const char* m = mode + 1; *m && *m != ','; ++m) {
    if (*m == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*m == 'x') flags |= O_EXCL;
    if (*m == 'e') flags |= O_CLOEXEC;
  }
  return flags;
}

FILE* cookie_stream(int fd, const char* mode) {
  cookie_io_functions_t io{cookie_read, cookie_write, cookie_seek, cookie_close};
  FILE* f = ::fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), mode, io);
  if (!f) return nullptr;
  std::lock_guard lock(g_mu);
  streams()[f] = fd;
  return f;
}

}  // namespace

MLBS_EXPORT FILE* fopen(const char* path, const char* mode) {
  Cache* c = Cache::get();
  const auto abs = c && path ? mlbs::intercept::absolute(AT_FDCWD, path) : std::nullopt;
  if (!abs || !c->intercepts(*abs)) return real::fopen(path, mode);
  const int flags = flags_of(mode);
  if (flags < 0) {
    errno = EINVAL;
    return nullptr;
  }
  const int fd = open(path, flags, 0666);
  if (fd < 0) return nullptr;
  if (!c->lookup(fd)) {  // not a regular file (a folder, a device): the C library's stream
    FILE* f = real::fdopen(fd, mode);
    if (!f) real::close(fd);
    return f;
  }
  if (flags & O_APPEND) lseek(fd, 0, SEEK_END);
  FILE* f = cookie_stream(fd, mode);
  if (!f) {
    const int err = errno;
    close(fd);
    errno = err;
  }
  return f;
}
MLBS_EXPORT FILE* fopen64(const char* path, const char* mode) { return fopen(path, mode); }

MLBS_EXPORT FILE* fdopen(int fd, const char* mode) {
  Cache* c = Cache::get();
  if (!c || !c->lookup(fd)) return real::fdopen(fd, mode);
  return cookie_stream(fd, mode);
}

MLBS_EXPORT FILE* freopen(const char* path, const char* mode, FILE* stream) {
  Cache* c = Cache::get();
  if (c && path)
    if (const auto abs = mlbs::intercept::absolute(AT_FDCWD, path); abs && c->intercepts(*abs)) c->uncache(*abs);
  return real::freopen(path, mode, stream);
}
MLBS_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* stream) { return freopen(path, mode, stream); }

MLBS_EXPORT int fileno(FILE* f) {
  {
    std::lock_guard lock(g_mu);
    if (auto it = streams().find(f); it != streams().end()) return it->second;
  }
  return real::fileno(f);
}
MLBS_EXPORT int fileno_unlocked(FILE* f) { return fileno(f); }

/// A closed cookie stream's entry goes (glibc calls the close function, then frees the FILE).
MLBS_EXPORT int fclose(FILE* f) {
  {
    std::lock_guard lock(g_mu);
    streams().erase(f);
  }
  using Fn = int (*)(FILE*);
  static const Fn real_fclose = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "fclose"));
  return real_fclose(f);
}
