/* For the SIGKILL harness (check.sh sigkill): writes files of deterministic
 * content into FOLDER, fsync()s each, and only then records its number in
 * LOG (outside the folder, fsync'ed too), until it is killed. With --verify
 * it checks instead that every file LOG names is intact. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t size_of(int i) { return (size_t)(300000 + (i * 7919) % 2500000); }
static unsigned char byte_at(int i, size_t k) { return (unsigned char)((k * 31u + (unsigned)i * 101u + (k >> 13)) & 0xff); }

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FOLDER LOG [--verify]\n", argv[0]);
    return 2;
  }
  char path[4096];
  if (argc > 3 && strcmp(argv[3], "--verify") == 0) {
    FILE* log = fopen(argv[2], "r");
    int i, n = 0, bad = 0;
    while (log && fscanf(log, "%d", &i) == 1) {
      snprintf(path, sizeof path, "%s/f%05d.bin", argv[1], i);
      FILE* f = fopen(path, "rb");
      size_t k = 0;
      int c;
      int ok = f != NULL;
      while (ok && (c = fgetc(f)) != EOF) ok = (unsigned char)c == byte_at(i, k++);
      if (f) fclose(f);
      if (!ok || k != size_of(i)) {
        fprintf(stderr, "file %d (fsync'ed before the kill) is %s\n", i, f ? "damaged" : "missing");
        ++bad;
      }
      ++n;
    }
    printf("%d fsync'ed files checked, %d bad\n", n, bad);
    return bad ? 1 : 0;
  }
  int log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
  unsigned char* buf = malloc(3000000);
  for (int i = 0;; ++i) {
    snprintf(path, sizeof path, "%s/f%05d.bin", argv[1], i);
    const size_t n = size_of(i);
    for (size_t k = 0; k < n; ++k) buf[k] = byte_at(i, k);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, buf, n) != (ssize_t)n || (i % 3 != 2 && fsync(fd) != 0)) {
      fprintf(stderr, "file %d: %s\n", i, strerror(errno));
      return 1;
    }
    close(fd);
    if (i % 3 == 2) continue;  /* not fsync'ed: nothing is promised */
    char line[32];
    const int len = snprintf(line, sizeof line, "%d\n", i);
    if (write(log, line, (size_t)len) != len || fsync(log) != 0) return 1;
  }
}
