/* mlbs C quickstart: write a few snapshots, read them back in reverse order
 * (the RTM pattern) and print what moved between the tiers.
 *
 *   c_quickstart [base-directory]      (default ./mlbs-c-example)
 *
 * Tiers: 1 MiB of DRAM slots, a 2 MiB "fast" directory and an unlimited
 * "slow" directory under the base directory, so the 12 snapshots of 256 KiB
 * below spill over all three. */
#define _XOPEN_SOURCE 700   /* mkdir */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <mlbs/mlbs.h>

enum { kSteps = 12, kFloats = 64 * 1024 };   /* 12 snapshots of 256 KiB */

/* Prints the failed call and mlbs's explanation, then jumps to cleanup. */
#define TRY(call)                                                                \
  do {                                                                           \
    int rc_ = (call);                                                            \
    if (rc_ < 0) {                                                               \
      fprintf(stderr, "%s failed (%s): %s\n", #call, strerror(-rc_), mlbs_last_error()); \
      goto done;                                                                 \
    }                                                                            \
  } while (0)

/* mkdir -p for the tier directories. */
static int make_dirs(const char* path) {
  char buf[4096];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, path, len + 1);
  for (size_t i = 1; i <= len; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    buf[i] = saved;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* base = argc > 1 ? argv[1] : "./mlbs-c-example";
  char fast[2048], slow[2048], tiers[4200];
  snprintf(fast, sizeof fast, "%s/fast", base);
  snprintf(slow, sizeof slow, "%s/slow", base);
  if (make_dirs(fast) != 0 || make_dirs(slow) != 0) {
    perror("creating the tier directories");
    return 1;
  }
  snprintf(tiers, sizeof tiers, "mem:1MiB,dir:%s:2MiB,dir:%s", fast, slow);

  int status = 1;
  mlbs_runtime_t* rt = NULL;
  mlbs_store_t* u = NULL;

  /* [create] One runtime (the helper engine) and one store whose working
   * buffer holds kFloats floats. */
  TRY(mlbs_runtime_create(tiers, "lifo", MLBS_SCRATCH, &rt));
  TRY(mlbs_store_create(rt, "wavefield", kFloats * sizeof(float), &u));

  /* [forward] Compute into the working buffer, then snapshot it. write()
   * copies into a DRAM slot and returns; the buffer may change at once. */
  for (uint64_t step = 0; step < kSteps; ++step) {
    float* x = mlbs_store_data(u);
    for (size_t i = 0; i < kFloats; ++i) x[i] = (float)step + (float)i * 1e-3f;
    TRY(mlbs_store_write(u, step));
  }

  /* [backward] Read the snapshots back, last first. read() swaps the record
   * into the working buffer: fetch the data pointer again after each read. */
  for (uint64_t step = kSteps; step-- > 0;) {
    TRY(mlbs_store_read(u, step));
    const float* x = mlbs_store_data(u);
    size_t n = mlbs_store_size(u) / sizeof(float);
    if (n != kFloats || x[0] != (float)step || x[n - 1] != (float)step + (float)(n - 1) * 1e-3f) {
      fprintf(stderr, "snapshot %llu came back wrong\n", (unsigned long long)step);
      goto done;
    }
  }

  /* [stats] What the runtime did, overall and per tier. */
  mlbs_stats_t st;
  TRY(mlbs_runtime_stats(rt, &st));
  printf("writes %llu, reads %llu, write blocking %.3f ms, read blocking %.3f ms\n",
         (unsigned long long)st.writes, (unsigned long long)st.reads, st.write_block_ns / 1e6,
         st.read_block_ns / 1e6);
  for (uint32_t t = 0; t < st.ntiers; ++t) {
    mlbs_tier_stats_t ts;
    TRY(mlbs_runtime_tier_stats(rt, t, &ts));
    printf("tier %u: %llu KiB in, %llu KiB out, %llu stalls\n", t,
           (unsigned long long)(ts.bytes_in >> 10), (unsigned long long)(ts.bytes_out >> 10),
           (unsigned long long)ts.stalls);
  }
  status = 0;

done:
  /* [cleanup] Stores first, then the runtime; both accept NULL. */
  mlbs_store_destroy(u);
  mlbs_runtime_destroy(rt);
  return status;
}
