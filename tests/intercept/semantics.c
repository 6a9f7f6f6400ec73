/* POSIX and stdio semantics of an unmodified program, for transparent mode's
 * tests (tests/intercept/): everything it does to files in the folder given
 * as argv[1], and everything it observes (what reads return, sizes, offsets,
 * errors), is printed. Run once plainly and once under mlbs-run, the two
 * outputs and the two folders must be byte-identical. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* dir;

static char* at(const char* name) {
  static char buf[8][4096];
  static int k;
  char* p = buf[k++ % 8];
  snprintf(p, 4096, "%s/%s", dir, name);
  return p;
}

static uint64_t fnv(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
#define FNV0 1469598103934665603ull

static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 11)) & 0xff);
}

#define CHECK(x)                                                                     \
  do {                                                                               \
    if (!(x)) {                                                                      \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, strerror(errno)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

/* The whole file through read() in pieces of `piece` bytes: size and checksum. */
static void show(const char* name, size_t piece) {
  int fd = open(at(name), O_RDONLY);
  if (fd < 0) {
    printf("%s: open: %s\n", name, strerror(errno));
    return;
  }
  unsigned char* buf = malloc(piece);
  uint64_t h = FNV0, total = 0;
  ssize_t n;
  while ((n = read(fd, buf, piece)) > 0) {
    h = fnv(buf, (size_t)n, h);
    total += (uint64_t)n;
  }
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  printf("%s: read %llu bytes (fstat %lld) fnv %016llx\n", name, (unsigned long long)total, (long long)st.st_size,
         (unsigned long long)h);
  free(buf);
  close(fd);
}

static void stdio_files(void) {
  FILE* f = fopen(at("text.txt"), "w");
  CHECK(f);
  for (int i = 0; i < 1000; ++i) fprintf(f, "line %d: %s\n", i, i % 7 ? "plain" : "seventh");
  unsigned char blob[10000];
  fill(blob, sizeof blob, 1);
  CHECK(fwrite(blob, 1, sizeof blob, f) == sizeof blob);
  CHECK(fflush(f) == 0);
  CHECK(fsync(fileno(f)) == 0);
  printf("text.txt: ftell %ld\n", ftell(f));
  CHECK(fclose(f) == 0);

  f = fopen(at("text.txt"), "r");
  CHECK(f);
  char line[256];
  uint64_t h = FNV0;
  int lines = 0;
  while (lines < 1000 && fgets(line, sizeof line, f)) {
    h = fnv(line, strlen(line), h);
    ++lines;
  }
  printf("text.txt: %d lines fnv %016llx\n", lines, (unsigned long long)h);
  fclose(f);

  f = fopen(at("text.txt"), "a");
  CHECK(f);
  fputs("appended\n", f);
  printf("append: ftell %ld\n", ftell(f));
  fclose(f);

  f = fopen(at("text.txt"), "r+");
  CHECK(f);
  CHECK(fseek(f, 100, SEEK_SET) == 0);
  fputs("OVERWRITTEN", f);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  printf("r+: end at %ld\n", ftell(f));
  fclose(f);
  show("text.txt", 4096);

  /* fdopen() of an open descriptor, as numpy's tofile() does. */
  int fd = open(at("fdopen.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, "head", 4) == 4);
  int fd2 = dup(fd);
  FILE* g = fdopen(fd2, "wb");
  CHECK(g);
  fill(blob, sizeof blob, 2);
  CHECK(fwrite(blob, 1, sizeof blob, g) == sizeof blob);
  long pos = ftell(g);
  fclose(g);
  printf("fdopen: ftell %ld, lseek on the first descriptor %ld\n", pos, (long)lseek(fd, 0, SEEK_CUR));
  close(fd);
  show("fdopen.bin", 777);
}

static void posix_files(void) {
  /* Odd-sized writes, a hole past the end, truncations both ways. */
  int fd = open(at("posix.bin"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  unsigned char* big = malloc(3 << 20);
  fill(big, 3 << 20, 3);
  for (size_t off = 0; off < (3u << 20); off += 7919) {
    size_t n = (3u << 20) - off < 7919 ? (3u << 20) - off : 7919;
    CHECK(write(fd, big + off, n) == (ssize_t)n);
  }
  printf("posix: after writes at %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
  CHECK(pwrite(fd, "far", 3, 5 << 20) == 3);
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  printf("posix: size with a hole %lld\n", (long long)st.st_size);
  unsigned char probe[64];
  CHECK(pread(fd, probe, sizeof probe, (4 << 20) + 100) == (ssize_t)sizeof probe);
  printf("posix: inside the hole fnv %016llx\n", (unsigned long long)fnv(probe, sizeof probe, FNV0));
  CHECK(ftruncate(fd, (2 << 20) + 12345) == 0);
  CHECK(fstat(fd, &st) == 0);
  printf("posix: cut to %lld\n", (long long)st.st_size);
  CHECK(ftruncate(fd, (2 << 20) + 20000) == 0);
  CHECK(pread(fd, probe, sizeof probe, (2 << 20) + 12340) == (ssize_t)sizeof probe);
  printf("posix: across the cut fnv %016llx\n", (unsigned long long)fnv(probe, sizeof probe, FNV0));
  printf("posix: SEEK_END %lld\n", (long long)lseek(fd, 0, SEEK_END));
  close(fd);
  CHECK(stat(at("posix.bin"), &st) == 0);
  printf("posix: stat %lld\n", (long long)st.st_size);
  show("posix.bin", 65536);

  /* O_APPEND, also for pwrite (Linux appends). */
  fd = open(at("append.log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, "one\n", 4) == 4);
  CHECK(pwrite(fd, "two\n", 4, 0) == 4);
  CHECK(write(fd, "three\n", 6) == 6);
  close(fd);
  show("append.log", 3);

  /* dup() and dup2() share the offset; readv/writev. */
  fd = open(at("dup.bin"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  int d = dup(fd);
  int d2 = dup2(fd, 100);
  CHECK(write(fd, "abc", 3) == 3 && write(d, "def", 3) == 3 && write(d2, "ghi", 3) == 3);
  struct iovec iov[3] = {{"jk", 2}, {"", 0}, {"lmnop", 5}};
  CHECK(writev(d, iov, 3) == 7);
  CHECK(lseek(d2, 2, SEEK_SET) == 2);
  char a[4] = {0}, b[6] = {0};
  struct iovec riov[2] = {{a, 3}, {b, 5}};
  printf("dup: readv %zd '%s' '%s'\n", readv(fd, riov, 2), a, b);
  close(fd);
  close(d);
  close(d2);
  show("dup.bin", 5);

  /* An unlinked file stays readable through a descriptor open on it. */
  fd = open(at("gone.bin"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(write(fd, big, 100000) == 100000);
  CHECK(unlink(at("gone.bin")) == 0);
  unsigned char back[100000];
  CHECK(pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back);
  printf("unlinked: reads back %s; stat: %s\n", memcmp(back, big, sizeof back) ? "OTHER BYTES" : "its bytes",
         stat(at("gone.bin"), &st) == 0 ? "still there" : strerror(errno));
  close(fd);

  /* Rename within the folder. */
  fd = open(at("old.name"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(write(fd, big, 50000) == 50000);
  close(fd);
  CHECK(rename(at("old.name"), at("new.name")) == 0);
  printf("rename: old %s\n", access(at("old.name"), F_OK) == 0 ? "exists" : strerror(errno));
  show("new.name", 4096);
  free(big);
}

static void large_files(void) {
  /* 40 MiB, written 1 MiB + 13 at a time (chunks of 16 MiB are crossed),
   * then overwritten in the middle across a chunk boundary. */
  size_t n = 40u << 20;
  unsigned char* data = malloc(n);
  fill(data, n, 4);
  int fd = open(at("large.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  for (size_t off = 0; off < n; off += (1 << 20) + 13) {
    size_t k = n - off < (1u << 20) + 13 ? n - off : (1u << 20) + 13;
    CHECK(write(fd, data + off, k) == (ssize_t)k);
  }
  CHECK(close(fd) == 0);
  show("large.bin", (3 << 20) + 5);
  fd = open(at("large.bin"), O_RDWR);
  fill(data, 1 << 20, 5);
  CHECK(pwrite(fd, data, 1 << 20, (16 << 20) - 4096) == (1 << 20));
  CHECK(fsync(fd) == 0);
  close(fd);
  show("large.bin", 1 << 20);
  free(data);
}

static void mapped(void) {
  int fd = open(at("mapped.bin"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  unsigned char buf[200000];
  fill(buf, sizeof buf, 6);
  CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
  unsigned char* m = mmap(NULL, sizeof buf, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED);
  printf("mmap: fnv %016llx\n", (unsigned long long)fnv(m, sizeof buf, FNV0));
  munmap(m, sizeof buf);
  CHECK(write(fd, "tail", 4) == 4);
  close(fd);
  show("mapped.bin", 4096);
}

static void forked(void) {
  int fd = open(at("parent.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  unsigned char buf[300000];
  fill(buf, sizeof buf, 7);
  CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    show("parent.bin", 4096);  /* the child sees what the parent wrote */
    fflush(stdout);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  CHECK(write(fd, "after", 5) == 5);
  close(fd);
  show("parent.bin", 4096);
}

static void* writer(void* arg) {
  int k = (int)(intptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "thread%d.bin", k);
  unsigned char* buf = malloc(5 << 20);
  fill(buf, 5 << 20, 10 + (unsigned)k);
  int fd = open(at(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
  for (int i = 0; i < 5; ++i) CHECK(write(fd, buf + (i << 20), 1 << 20) == 1 << 20);
  unsigned char* back = malloc(5 << 20);
  CHECK(pread(fd, back, 5 << 20, 0) == 5 << 20);
  CHECK(memcmp(back, buf, 5 << 20) == 0);
  close(fd);
  free(buf);
  free(back);
  return NULL;
}

static void threads(void) {
  pthread_t t[4];
  for (int k = 0; k < 4; ++k) pthread_create(&t[k], NULL, writer, (void*)(intptr_t)k);
  for (int k = 0; k < 4; ++k) pthread_join(t[k], NULL);
  for (int k = 0; k < 4; ++k) {
    char name[32];
    snprintf(name, sizeof name, "thread%d.bin", k);
    show(name, 1 << 20);
  }
}

static void copies(void) {
  int in = open(at("large.bin"), O_RDONLY), out = open(at("copied.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(in >= 0 && out >= 0);
  loff_t off = 1000;
  ssize_t n = copy_file_range(in, &off, out, NULL, 5 << 20, 0);
  printf("copy_file_range: %zd, offset now %lld\n", n, (long long)off);
  close(in);
  close(out);
  show("copied.bin", 4096);
}

/* Folders: mkdir, a file written inside, the folder renamed, access, rmdir. */
static void folders(void) {
  CHECK(mkdir(at("sub"), 0755) == 0);
  int fd = open(at("sub/inner.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  unsigned char b[5000];
  fill(b, sizeof b, 9);
  CHECK(write(fd, b, sizeof b) == (ssize_t)sizeof b);
  CHECK(close(fd) == 0);
  printf("access before rename: %s\n", access(at("sub/inner.bin"), R_OK | W_OK) == 0 ? "ok" : strerror(errno));
  CHECK(rename(at("sub"), at("sub2")) == 0);
  printf("access old path: %s\n", access(at("sub/inner.bin"), F_OK) == 0 ? "exists" : strerror(errno));
  printf("access new path: %s\n", access(at("sub2/inner.bin"), F_OK) == 0 ? "exists" : strerror(errno));
  show("sub2/inner.bin", 999);
  printf("rmdir non-empty: %s\n", rmdir(at("sub2")) == 0 ? "removed" : strerror(errno));
  CHECK(unlink(at("sub2/inner.bin")) == 0);
  printf("rmdir empty: %s\n", rmdir(at("sub2")) == 0 ? "removed" : strerror(errno));
}

/* Relative paths after chdir() into the folder and into a folder above it. */
static void relative(void) {
  char home[4096];
  CHECK(getcwd(home, sizeof home) != NULL);
  CHECK(chdir(dir) == 0);
  FILE* f = fopen("relative.txt", "w");
  CHECK(f != NULL);
  fprintf(f, "written after chdir into the folder\n");
  CHECK(fclose(f) == 0);
  CHECK(chdir("..") == 0);
  const char* leaf = strrchr(dir, '/');
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/relative.txt", leaf ? leaf + 1 : dir);
  int fd = open(rel, O_WRONLY | O_APPEND);
  CHECK(fd >= 0);
  CHECK(write(fd, "and appended from above it\n", 27) == 27);
  CHECK(close(fd) == 0);
  int here = open(".", O_RDONLY | O_DIRECTORY);
  CHECK(here >= 0);
  CHECK(chdir(home) == 0);
  CHECK(fchdir(here) == 0);
  struct stat st;
  CHECK(stat(rel, &st) == 0);
  printf("relative.txt: %lld bytes by a relative stat\n", (long long)st.st_size);
  close(here);
  CHECK(chdir(home) == 0);
  show("relative.txt", 7);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  stdio_files();
  posix_files();
  large_files();
  mapped();
  forked();
  threads();
  copies();
  folders();
  relative();
  printf("done\n");
  return 0;
}
