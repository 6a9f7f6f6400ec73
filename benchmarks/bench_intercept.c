/* What the interposition library costs a program's calls on files it does
 * not intercept (docs/transparent.md, "Overhead"). Times open+close, fstat,
 * stat, 4 KiB pwrite and pread, and lseek on a file in FOLDER, in ns per
 * call (the best of 5 rounds). Run it plainly and with the library preloaded
 * and another folder intercepted (benchmarks/intercept_overhead.sh does both). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

#define BEST(label, n, body)                                  \
  do {                                                        \
    double best = 1e30;                                       \
    for (int round = 0; round < 5; ++round) {                 \
      const double t = now();                                 \
      for (long i = 0; i < (n); ++i) { body; }                \
      const double per = (now() - t) / (double)(n);           \
      if (per < best) best = per;                             \
    }                                                         \
    printf("%s %.1f\n", label, best);                        \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FOLDER (not an intercepted one)\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_intercept.bin", argv[1]);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return perror(path), 1;
  static char buf[4096];
  if (pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return perror("pwrite"), 1;
  struct stat st;
  BEST("open+close", 20000, { int f = open(path, O_RDONLY); close(f); });
  BEST("stat", 100000, stat(path, &st));
  BEST("fstat", 200000, fstat(fd, &st));
  BEST("pwrite_4KiB", 100000, if (pwrite(fd, buf, sizeof buf, 0) < 0) return 1);
  BEST("pread_4KiB", 100000, if (pread(fd, buf, sizeof buf, 0) < 0) return 1);
  BEST("lseek", 200000, lseek(fd, 0, SEEK_SET));
  close(fd);
  unlink(path);
  return 0;
}
