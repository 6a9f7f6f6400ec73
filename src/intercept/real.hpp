// mlbs — the C library's own file functions, found past the interposition
// library (dlsym RTLD_NEXT): what the wrappers call for everything they do
// not cache, and what the library itself uses on the program's files.
#pragma once

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

namespace mlbs::intercept::real {

// One pointer per function, resolved on first use (thread-safe, cheap after).
int open(const char* path, int flags, mode_t mode);
int openat(int dirfd, const char* path, int flags, mode_t mode);
int close(int fd);
ssize_t read(int fd, void* buf, size_t n);
ssize_t write(int fd, const void* buf, size_t n);
ssize_t pread(int fd, void* buf, size_t n, off_t off);
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off);
ssize_t readv(int fd, const struct iovec* iov, int n);
ssize_t writev(int fd, const struct iovec* iov, int n);
ssize_t preadv(int fd, const struct iovec* iov, int n, off_t off);
ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off);
off_t lseek(int fd, off_t off, int whence);
int fsync(int fd);
int fdatasync(int fd);
int ftruncate(int fd, off_t len);
int truncate(const char* path, off_t len);
int fstat(int fd, struct stat* st);
int stat(const char* path, struct stat* st);
int lstat(const char* path, struct stat* st);
int fstatat(int dirfd, const char* path, struct stat* st, int flags);
int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st);
int unlink(const char* path);
int unlinkat(int dirfd, const char* path, int flags);
int rename(const char* from, const char* to);
int renameat(int fromfd, const char* from, int tofd, const char* to);
int renameat2(int fromfd, const char* from, int tofd, const char* to, unsigned flags);
int dup(int fd);
int dup2(int fd, int to);
int dup3(int fd, int to, int flags);
int fcntl(int fd, int cmd, long arg);
int ioctl(int fd, unsigned long req, void* arg);
int posix_fadvise(int fd, off_t off, off_t len, int advice);
int fallocate(int fd, int mode, off_t off, off_t len);
int posix_fallocate(int fd, off_t off, off_t len);
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);
ssize_t copy_file_range(int in, off_t* in_off, int out, off_t* out_off, size_t len, unsigned flags);
ssize_t sendfile(int out, int in, off_t* off, size_t count);
ssize_t readlink(const char* path, char* buf, size_t size);
int chdir(const char* path);
int fchdir(int fd);
FILE* fopen(const char* path, const char* mode);
FILE* fdopen(int fd, const char* mode);
FILE* freopen(const char* path, const char* mode, FILE* stream);
int fileno(FILE* f);
int execve(const char* path, char* const argv[], char* const envp[]);
int execvpe(const char* file, char* const argv[], char* const envp[]);
int fexecve(int fd, char* const argv[], char* const envp[]);

}  // namespace mlbs::intercept::real
