/* mlbs — tests of the C API (include/mlbs/mlbs.h) from plain C11.
 *
 * Run by ctest as `mlbs_capi_test <tmpdir>`: <tmpdir> is a scratch directory
 * (created if missing). Each run works in <tmpdir>/run-<pid>, removed again
 * when every check passes and kept for inspection otherwise.
 *
 * Tiers are "mem:64KiB,dir:<run>/fast:64KiB,dir:<run>/slow", so 16 KiB records
 * cannot all stay in DRAM or in the fast tier: they cross all three tiers.
 * Prints one line per failed check and a "N passed, N failed" summary; exits 0
 * only if every check passed. */
#define _XOPEN_SOURCE 700   /* mkdir, setenv, nftw, pthreads */

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mlbs/mlbs.h>

/* --- a minimal check harness ----------------------------------------------- */

static int g_passed = 0;
static int g_failed = 0;

static void check_(int ok, const char* expr, int line) {
  if (ok) {
    ++g_passed;
    return;
  }
  ++g_failed;
  fprintf(stderr, "FAIL test_capi.c:%d: %s\n     last error: \"%s\"\n", line, expr,
          mlbs_last_error());
}
#define CHECK(cond) check_((cond) ? 1 : 0, #cond, __LINE__)

/* True when the thread's last error is a fresh message from `call_text`'s
 * function: the C API prefixes every message with "<function>: ". */
static int error_names_function(const char* call_text) {
  const char* msg = mlbs_last_error();
  size_t n = strcspn(call_text, "( ");
  return msg[0] != '\0' && strncmp(msg, call_text, n) == 0 && msg[n] == ':';
}
static void check_errno_(int rc, int expected, const char* call_text, int line) {
  int ok = rc == expected && error_names_function(call_text);
  if (!ok) {
    char text[512];
    snprintf(text, sizeof text, "%s returned %d, expected %d with a message naming it", call_text,
             rc, expected);
    check_(0, text, line);
  } else {
    check_(1, call_text, line);
  }
}
/* The call fails with exactly `expected` (a negative errno) and leaves a
 * non-empty message that names the function. */
#define CHECK_ERRNO(call, expected) check_errno_((call), (expected), #call, __LINE__)

/* --- helpers ---------------------------------------------------------------- */

/* A non-NULL value for output handles, to see failed creates reset them. */
static char g_sentinel;

/* mkdir -p: creates every missing component of `path`. */
static int mkdir_p(const char* path) {
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

static int remove_entry(const char* path, const struct stat* sb, int type, struct FTW* ftw) {
  (void)sb;
  (void)type;
  (void)ftw;
  return remove(path);
}
/* rm -r of a directory this test created. */
static void remove_tree(const char* path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void join(char* out, size_t cap, const char* dir, const char* leaf) {
  if ((size_t)snprintf(out, cap, "%s/%s", dir, leaf) >= cap) {
    fprintf(stderr, "path too long: %s/%s\n", dir, leaf);
    exit(2);
  }
}

/* Byte i of record `id`: differs between records already at i = 0. */
static unsigned char pattern(uint64_t id, size_t i) {
  return (unsigned char)(id * 37u + i * 7u + (i >> 8) * 13u + 1u);
}

static void fill(mlbs_store_t* s, uint64_t id) {
  unsigned char* p = mlbs_store_data(s);
  size_t n = mlbs_store_size(s);
  for (size_t i = 0; i < n; ++i) p[i] = pattern(id, i);
}

/* The working buffer holds exactly record `id` of `bytes` bytes. */
static int holds(mlbs_store_t* s, uint64_t id, size_t bytes) {
  const unsigned char* p = mlbs_store_data(s);
  if (mlbs_store_size(s) != bytes || (bytes && !p)) return 0;
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != pattern(id, i)) return 0;
  return 1;
}

/* Overwrites the working buffer so a read that delivers nothing is caught. */
static void scribble(mlbs_store_t* s) {
  void* p = mlbs_store_data(s);
  if (p) memset(p, 0xEE, mlbs_store_size(s));
}

enum { kRecords = 16, kRecordBytes = 16 * 1024, kOddId = 100, kOddBytes = 5000 };

/* Writes records 0..n-1 and reads them back newest first: 1 when every write succeeded and every read is exact. */
static int round_trips(mlbs_store_t* s, uint64_t n) {
  int ok = 1;
  for (uint64_t id = 0; id < n; ++id) {
    fill(s, id);
    ok = ok && mlbs_store_write(s, id) == 0;
  }
  for (uint64_t id = n; id-- > 0;) {
    scribble(s);
    ok = ok && mlbs_store_read(s, id) == 0 && holds(s, id, kRecordBytes);
  }
  return ok;
}

/* --- the tests ---------------------------------------------------------------- */

/* Write 16 records (plus one odd-sized one), inspect the catalog, read all
 * back in LIFO order and check the counters. */
static void test_scratch_round_trip(const char* run) {
  char fast[4096], slow[4096], tiers[9000];
  join(fast, sizeof fast, run, "fast");
  join(slow, sizeof slow, run, "slow");
  snprintf(tiers, sizeof tiers, "mem:64KiB,dir:%s:64KiB,dir:%s", fast, slow);

  mlbs_runtime_t* rt = NULL;
  mlbs_store_t* s = NULL;
  /* a runtime starts from a three-tier spec, a schedule and a durability */
  CHECK(mlbs_runtime_create(tiers, "lifo", MLBS_SCRATCH, &rt) == 0 && rt != NULL);
  if (!rt) return;
  /* a store starts with the requested number of bytes */
  CHECK(mlbs_store_create(rt, "capi", kRecordBytes, &s) == 0 && s != NULL);
  if (!s) {
    mlbs_runtime_destroy(rt);
    return;
  }
  /* the working buffer has the requested size */
  CHECK(mlbs_store_size(s) == kRecordBytes);
  /* the working buffer is 4096-byte aligned */
  CHECK(mlbs_store_data(s) != NULL && (uintptr_t)mlbs_store_data(s) % 4096 == 0);
  /* the working buffer starts zeroed */
  {
    const unsigned char* p = mlbs_store_data(s);
    size_t nonzero = 0;
    for (size_t i = 0; i < kRecordBytes; ++i) nonzero += p[i] != 0;
    CHECK(nonzero == 0);
  }

  /* ids in write order; the reads below go through this list backwards */
  uint64_t order[kRecords + 2];
  size_t written = 0;
  int write_failures = 0;
  for (uint64_t id = 0; id < kRecords; ++id) {
    fill(s, id);
    if (mlbs_store_write(s, id) != 0) ++write_failures;
    order[written++] = id;
  }
  /* sixteen 16 KiB records are written without error */
  CHECK(write_failures == 0);

  size_t count = 0;
  uint64_t ids[kRecords + 4];
  /* ids() reports every record */
  CHECK(mlbs_store_ids(s, ids, kRecords + 4, &count) == 0 && count == kRecords);
  {
    int ascending = 1;
    for (size_t i = 0; i < count && i < kRecords; ++i) ascending &= ids[i] == i;
    /* ids() lists them in ascending order */
    CHECK(ascending);
  }
  /* ids() with a small buffer fills `cap` entries and still reports the total */
  {
    uint64_t few[4] = {99, 99, 99, 99};
    CHECK(mlbs_store_ids(s, few, 2, &count) == 0 && count == kRecords && few[0] == 0 &&
          few[1] == 1 && few[2] == 99);
  }
  /* ids() with cap 0 and no buffer only counts */
  CHECK(mlbs_store_ids(s, NULL, 0, &count) == 0 && count == kRecords);
  /* contains() is 1 for a written id */
  CHECK(mlbs_store_contains(s, 3) == 1);
  /* contains() is 0 for an id never written */
  CHECK(mlbs_store_contains(s, 999) == 0);
  /* writing an id the store already holds fails with -EEXIST */
  CHECK_ERRNO(mlbs_store_write(s, 5), -EEXIST);

  /* erase() removes a record */
  CHECK(mlbs_store_erase(s, kRecords - 1) == 0);
  /* an erased id is no longer contained */
  CHECK(mlbs_store_contains(s, kRecords - 1) == 0);
  /* erasing an id the store does not hold fails with -ENOENT */
  CHECK_ERRNO(mlbs_store_erase(s, kRecords - 1), -ENOENT);
  --written;   /* kRecords - 1 leaves the write order; it comes back last */

  /* resize() gives the buffer an odd size */
  CHECK(mlbs_store_resize(s, kOddBytes) == 0 && mlbs_store_size(s) == kOddBytes);
  fill(s, kOddId);
  /* a record of an odd size is written */
  CHECK(mlbs_store_write(s, kOddId) == 0);
  order[written++] = kOddId;

  /* resize() back to the record size */
  CHECK(mlbs_store_resize(s, kRecordBytes) == 0 && mlbs_store_size(s) == kRecordBytes);
  fill(s, kRecords - 1);
  /* an erased id can be written again */
  CHECK(mlbs_store_write(s, kRecords - 1) == 0);
  order[written++] = kRecords - 1;

  /* the application may change its buffer right after write() returns */
  scribble(s);

  int read_failures = 0, wrong_bytes = 0;
  while (written > 0) {
    uint64_t id = order[--written];
    size_t bytes = id == kOddId ? kOddBytes : kRecordBytes;
    scribble(s);
    if (mlbs_store_read(s, id) != 0) {
      ++read_failures;
      fprintf(stderr, "  read of id %llu failed: %s\n", (unsigned long long)id, mlbs_last_error());
      continue;
    }
    if (!holds(s, id, bytes)) {
      ++wrong_bytes;
      fprintf(stderr, "  id %llu: wrong size or bytes\n", (unsigned long long)id);
    }
  }
  /* every record reads back in LIFO order */
  CHECK(read_failures == 0);
  /* every byte of every record (and each record's size) comes back intact */
  CHECK(wrong_bytes == 0);

  /* in scratch mode a record that has been read is released */
  CHECK(mlbs_store_contains(s, 0) == 0);
  /* after reading everything back the store holds nothing */
  CHECK(mlbs_store_ids(s, NULL, 0, &count) == 0 && count == 0);
  /* reading an id the store never held fails with -ENOENT */
  CHECK_ERRNO(mlbs_store_read(s, 12345), -ENOENT);
  /* reading an id again after scratch released it fails with -ENOENT */
  CHECK_ERRNO(mlbs_store_read(s, 0), -ENOENT);
  /* flush() succeeds in scratch mode */
  CHECK(mlbs_store_flush(s) == 0);

  mlbs_stats_t st;
  memset(&st, 0xFF, sizeof st);
  /* runtime stats are available */
  CHECK(mlbs_runtime_stats(rt, &st) == 0);
  /* stats report the three configured tiers */
  CHECK(st.ntiers == 3);
  /* stats count every successful write (16 + odd one + rewrite) */
  CHECK(st.writes >= kRecords + 2);
  /* stats count every successful read */
  CHECK(st.reads >= kRecords + 1);
  /* the records that did not fit in DRAM were written back */
  CHECK(st.writebacks > 0);

  mlbs_tier_stats_t t0, t1, t2;
  /* stats of tier 0, 1 and 2 are available */
  CHECK(mlbs_runtime_tier_stats(rt, 0, &t0) == 0 && mlbs_runtime_tier_stats(rt, 1, &t1) == 0 &&
        mlbs_runtime_tier_stats(rt, 2, &t2) == 0);
  /* tier capacities are those of the spec (tier 2 unlimited) */
  CHECK(t0.capacity_bytes == 64 * 1024 && t1.capacity_bytes == 64 * 1024 &&
        t2.capacity_bytes == 0);
  /* bytes moved into the fast directory tier (1) */
  CHECK(t1.bytes_in > 0 && t1.ops_in > 0);
  /* bytes moved back out of the fast directory tier (1) */
  CHECK(t1.bytes_out > 0 && t1.ops_out > 0);
  /* bytes moved into the slow directory tier (2): 17 records exceed tiers 0 and 1 */
  CHECK(t2.bytes_in >= kRecordBytes && t2.ops_in > 0);
  /* bytes moved back out of the slow directory tier (2) */
  CHECK(t2.bytes_out >= kRecordBytes && t2.ops_out > 0);
  /* a tier index past the last fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_tier_stats(rt, 3, &t0), -EINVAL);

  /* a runtime with open stores is not destroyed (-EBUSY) */
  CHECK_ERRNO(mlbs_runtime_destroy(rt), -EBUSY);
  /* destroying the store succeeds */
  CHECK(mlbs_store_destroy(s) == 0);
  /* then destroying the runtime succeeds */
  CHECK(mlbs_runtime_destroy(rt) == 0);
}

static void* last_error_of_new_thread(void* arg) {
  const char** out = arg;
  *out = mlbs_last_error();
  return NULL;
}

/* NULL handles, bad specs and bad arguments are reported as -errno with a message. */
static void test_error_paths(const char* run) {
  char tiers[9000], path[4096];
  join(path, sizeof path, run, "err");
  snprintf(tiers, sizeof tiers, "mem:64KiB,dir:%s", path);

  mlbs_runtime_t* bad_rt = (mlbs_runtime_t*)(void*)&g_sentinel;
  /* a malformed tier spec fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create("mem:64KiB,tape:/dev/st0", NULL, MLBS_SCRATCH, &bad_rt), -EINVAL);
  /* a failed create leaves *out NULL */
  CHECK(bad_rt == NULL);
  /* an empty tier spec fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create("", NULL, MLBS_SCRATCH, &bad_rt), -EINVAL);
  /* a size that is not a size fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create("mem:lots,dir:/tmp", NULL, MLBS_SCRATCH, &bad_rt), -EINVAL);
  /* a malformed schedule fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create(tiers, "sideways", MLBS_SCRATCH, &bad_rt), -EINVAL);
  /* a durability outside the enum fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create(tiers, NULL, (mlbs_durability_t)7, &bad_rt), -EINVAL);
  /* a NULL out pointer fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create(tiers, NULL, MLBS_SCRATCH, NULL), -EINVAL);
  /* a NULL TOML path fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create_from_file(NULL, &bad_rt), -EINVAL);
  join(path, sizeof path, run, "no-such-config.toml");
  /* a missing TOML file fails with a negative errno and a message */
  CHECK(mlbs_runtime_create_from_file(path, &bad_rt) < 0 && bad_rt == NULL &&
        error_names_function("mlbs_runtime_create_from_file"));

  mlbs_stats_t st;
  mlbs_tier_stats_t ts;
  size_t count = 0;
  uint64_t ids[4];
  mlbs_store_t* s = (mlbs_store_t*)(void*)&g_sentinel;
  /* stats of a NULL runtime fail with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_stats(NULL, &st), -EINVAL);
  /* tier stats of a NULL runtime fail with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_tier_stats(NULL, 0, &ts), -EINVAL);
  /* a store on a NULL runtime fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_create(NULL, "x", 16, &s), -EINVAL);
  /* ... and leaves *out NULL */
  CHECK(s == NULL);
  /* write through a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_write(NULL, 1), -EINVAL);
  /* read through a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_read(NULL, 1), -EINVAL);
  /* contains on a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_contains(NULL, 1), -EINVAL);
  /* erase on a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_erase(NULL, 1), -EINVAL);
  /* ids of a NULL store fail with -EINVAL */
  CHECK_ERRNO(mlbs_store_ids(NULL, ids, 4, &count), -EINVAL);
  /* flush of a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_flush(NULL), -EINVAL);
  /* resize of a NULL store fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_resize(NULL, 16), -EINVAL);
  /* data of a NULL store is NULL, with a message */
  CHECK(mlbs_store_data(NULL) == NULL && error_names_function("mlbs_store_data"));
  /* size of a NULL store is 0, with a message */
  CHECK(mlbs_store_size(NULL) == 0 && error_names_function("mlbs_store_size"));
  /* destroying a NULL store is a no-op, like free(NULL) */
  CHECK(mlbs_store_destroy(NULL) == 0);
  /* destroying a NULL runtime is a no-op, like free(NULL) */
  CHECK(mlbs_runtime_destroy(NULL) == 0);

  const char* other_thread_error = NULL;
  pthread_t th;
  /* the last error is per thread: a new thread sees "" */
  CHECK(pthread_create(&th, NULL, last_error_of_new_thread, &other_thread_error) == 0 &&
        pthread_join(th, NULL) == 0 && other_thread_error != NULL &&
        other_thread_error[0] == '\0');

  mlbs_runtime_t* rt = NULL;
  /* a runtime for the argument checks below starts */
  CHECK(mlbs_runtime_create(tiers, "2,1,0", MLBS_SCRATCH, &rt) == 0 && rt != NULL);
  if (!rt) return;
  /* a store with a NULL name fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_create(rt, NULL, 16, &s), -EINVAL);
  /* a store with a NULL out pointer fails with -EINVAL */
  CHECK_ERRNO(mlbs_store_create(rt, "x", 16, NULL), -EINVAL);
  /* NULL stats output fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_stats(rt, NULL), -EINVAL);
  /* NULL tier stats output fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_tier_stats(rt, 0, NULL), -EINVAL);
  /* a two-tier runtime has no tier 2 */
  CHECK_ERRNO(mlbs_runtime_tier_stats(rt, 2, &ts), -EINVAL);
  /* a store with an explicit-order schedule starts */
  CHECK(mlbs_store_create(rt, "err", 64, &s) == 0 && s != NULL);
  if (s) {
    /* ids with a NULL buffer but cap > 0 fails with -EINVAL */
    CHECK_ERRNO(mlbs_store_ids(s, NULL, 4, &count), -EINVAL);
    /* ids with a NULL count fails with -EINVAL */
    CHECK_ERRNO(mlbs_store_ids(s, ids, 4, NULL), -EINVAL);
    /* the store is destroyed */
    CHECK(mlbs_store_destroy(s) == 0);
  }
  /* the runtime is destroyed */
  CHECK(mlbs_runtime_destroy(rt) == 0);
}

/* A store with its own settings: its codec ("none" on a runtime without one
 * round-trips; a codec this build may lack is skipped), bad specs and
 * element kinds refused naming the store. */
static void test_store_options(const char* run) {
  char fast[4096], tiers[5000];
  join(fast, sizeof fast, run, "fast");
  snprintf(tiers, sizeof tiers, "mem:64KiB,dir:%s", fast);
  mlbs_runtime_t* rt = NULL;
  mlbs_store_t* s = NULL;
  /* a runtime for the per-store settings starts */
  CHECK(mlbs_runtime_create(tiers, "lifo", MLBS_SCRATCH, &rt) == 0 && rt != NULL);
  if (!rt) return;
  /* NULL options are the runtime's settings */
  CHECK(mlbs_store_create_with(rt, "plain", kRecordBytes, NULL, &s) == 0 && s != NULL);
  CHECK(mlbs_store_destroy(s) == 0);
  /* a store with codec lz4 (or, in a build without it, -EINVAL naming the codec) */
  mlbs_store_options_t o;
  memset(&o, 0, sizeof o);
  o.codec = "lz4";
  s = NULL;
  int rc = mlbs_store_create_with(rt, "packed", kRecordBytes, &o, &s);
  CHECK(rc == 0 || (rc == -EINVAL && strstr(mlbs_last_error(), "lz4") != NULL));
  if (rc == 0) {
    /* its records cross DRAM (64 KiB) and come back exact */
    CHECK(round_trips(s, 8));
    CHECK(mlbs_store_destroy(s) == 0);
  }
  /* a store in 4 parts: 8 records cross DRAM (64 KiB) and come back exact; parts 65 is -EINVAL */
  memset(&o, 0, sizeof o);
  o.parts = 4;
  s = NULL;
  CHECK(mlbs_store_create_with(rt, "in-parts", kRecordBytes, &o, &s) == 0 && s != NULL);
  if (s) {
    mlbs_stats_t before, after;
    CHECK(mlbs_runtime_stats(rt, &before) == 0);
    CHECK(round_trips(s, 8));
    /* each record went in as four */
    CHECK(mlbs_runtime_stats(rt, &after) == 0 && after.writes - before.writes == 32);
    CHECK(mlbs_store_destroy(s) == 0);
  }
  /* MLBS_PARTS_AUTO: 32 KiB records (DRAM holds two) in 4 parts, 16 KiB ones (four) whole */
  o.parts = MLBS_PARTS_AUTO;
  s = NULL;
  CHECK(mlbs_store_create_with(rt, "auto-split", 2 * kRecordBytes, &o, &s) == 0 && mlbs_store_parts(s) == 4);
  CHECK(mlbs_store_destroy(s) == 0);
  s = NULL;
  CHECK(mlbs_store_create_with(rt, "auto-whole", kRecordBytes, &o, &s) == 0 && mlbs_store_parts(s) == 1);
  CHECK(mlbs_store_destroy(s) == 0);
  CHECK_ERRNO(mlbs_store_parts(NULL), -EINVAL);
  o.parts = 65;
  CHECK_ERRNO(mlbs_store_create_with(rt, "too-many-parts", 16, &o, &s), -EINVAL);
  CHECK(strstr(mlbs_last_error(), "too-many-parts") != NULL);
  o.parts = 0;
  /* a bad codec spec fails with -EINVAL naming the store */
  o.codec = "zstd:99";
  CHECK_ERRNO(mlbs_store_create_with(rt, "bad-codec", 16, &o, &s), -EINVAL);
  CHECK(strstr(mlbs_last_error(), "bad-codec") != NULL);
  /* an element kind out of range fails with -EINVAL */
  o.codec = NULL;
  o.elements = 7;
  CHECK_ERRNO(mlbs_store_create_with(rt, "bad-elements", 16, &o, &s), -EINVAL);
  CHECK(mlbs_runtime_destroy(rt) == 0);
}

/* Persistent records survive the runtime and are recovered by a new one. */
static void test_persistent(const char* run) {
  char fast[4096], slow[4096], tiers[9000];
  join(fast, sizeof fast, run, "p-fast");
  join(slow, sizeof slow, run, "p-slow");
  snprintf(tiers, sizeof tiers, "mem:64KiB,dir:%s:64KiB,dir:%s", fast, slow);
  const uint64_t kIds[3] = {10, 20, 30};

  mlbs_runtime_t* rt = NULL;
  mlbs_store_t* s = NULL;
  /* a persistent runtime starts */
  CHECK(mlbs_runtime_create(tiers, "fifo", MLBS_PERSISTENT, &rt) == 0 && rt != NULL);
  if (!rt) return;
  /* a persistent store starts */
  CHECK(mlbs_store_create(rt, "ckpt", kRecordBytes, &s) == 0 && s != NULL);
  if (!s) {
    mlbs_runtime_destroy(rt);
    return;
  }
  int failures = 0;
  for (int i = 0; i < 3; ++i) {
    fill(s, kIds[i]);
    failures += mlbs_store_write(s, kIds[i]) != 0;
  }
  /* three persistent records are written */
  CHECK(failures == 0);
  /* flush() makes them durable on the last tier */
  CHECK(mlbs_store_flush(s) == 0);
  {
    mlbs_reader_t* r = NULL;
    /* a reader attaches to the running writer's store */
    CHECK(mlbs_reader_open(tiers, MLBS_PERSISTENT, "ckpt", 0, &r) == 0 && r != NULL);
    if (r) {
      uint64_t ids[4] = {0};
      size_t count = 0, bytes = 0;
      /* it lists the three readable records */
      CHECK(mlbs_reader_ids(r, ids, 4, &count) == 0 && count == 3 && ids[0] == 10 && ids[2] == 30);
      /* a readable record's wait returns 1 at once */
      CHECK(mlbs_reader_wait(r, 20, 1000) == 1);
      /* a record never written times out: 0 */
      CHECK(mlbs_reader_wait(r, 99, 10) == 0);
      /* its size is the record's */
      CHECK(mlbs_reader_size(r, 20, &bytes) == 0 && bytes == kRecordBytes);
      /* it reached a file tier at some time since the epoch; a null out-parameter is -EINVAL */
      uint64_t since = 0;
      CHECK(mlbs_reader_readable_since(r, 20, &since) == 0 && since > 0);
      CHECK(mlbs_reader_readable_since(r, 20, NULL) == -EINVAL);
      unsigned char* buf = malloc(kRecordBytes);
      if (buf) {
        /* it reads the exact bytes */
        CHECK(mlbs_reader_read(r, 20, buf, kRecordBytes) == 0);
        int same = 1;
        for (size_t i = 0; i < kRecordBytes; ++i) same &= buf[i] == pattern(20, i);
        CHECK(same);
        /* an unknown id is -ENOENT */
        CHECK_ERRNO(mlbs_reader_read(r, 99, buf, kRecordBytes), -ENOENT);
        /* a buffer of the wrong size is -EINVAL */
        CHECK_ERRNO(mlbs_reader_read(r, 20, buf, kRecordBytes - 1), -EINVAL);
        free(buf);
      }
      CHECK(mlbs_reader_close(r) == 0);
    }
    /* a store nobody writes is -ENOENT */
    CHECK_ERRNO(mlbs_reader_open(tiers, MLBS_PERSISTENT, "nosuch", 0, &r), -ENOENT);
    /* another durability than the writer's is -EINVAL */
    CHECK_ERRNO(mlbs_reader_open(tiers, MLBS_SCRATCH, "ckpt", 0, &r), -EINVAL);
  }
  /* the store is destroyed */
  CHECK(mlbs_store_destroy(s) == 0);
  /* the runtime is destroyed */
  CHECK(mlbs_runtime_destroy(rt) == 0);

  rt = NULL;
  s = NULL;
  /* a second persistent runtime on the same tiers starts */
  CHECK(mlbs_runtime_create(tiers, "fifo", MLBS_PERSISTENT, &rt) == 0 && rt != NULL);
  if (!rt) return;
  /* reopening the store by name succeeds */
  CHECK(mlbs_store_create(rt, "ckpt", 0, &s) == 0 && s != NULL);
  if (!s) {
    mlbs_runtime_destroy(rt);
    return;
  }
  size_t count = 0;
  uint64_t ids[8] = {0};
  /* the recovered store lists the three ids */
  CHECK(mlbs_store_ids(s, ids, 8, &count) == 0 && count == 3 && ids[0] == 10 && ids[1] == 20 &&
        ids[2] == 30);
  /* a recovered record reads back byte for byte */
  CHECK(mlbs_store_read(s, 20) == 0 && holds(s, 20, kRecordBytes));
  /* in persistent mode a record stays after it has been read */
  CHECK(mlbs_store_contains(s, 20) == 1);
  scribble(s);
  /* and can be read again */
  CHECK(mlbs_store_read(s, 20) == 0 && holds(s, 20, kRecordBytes));
  /* the other recovered records read back too */
  CHECK(mlbs_store_read(s, 10) == 0 && holds(s, 10, kRecordBytes) && mlbs_store_read(s, 30) == 0 &&
        holds(s, 30, kRecordBytes));
  /* records are erased */
  CHECK(mlbs_store_erase(s, 10) == 0 && mlbs_store_erase(s, 20) == 0 &&
        mlbs_store_erase(s, 30) == 0);
  /* nothing is left */
  CHECK(mlbs_store_ids(s, NULL, 0, &count) == 0 && count == 0);
  /* the store and runtime are destroyed */
  CHECK(mlbs_store_destroy(s) == 0 && mlbs_runtime_destroy(rt) == 0);
}

/* MLBS_* variables configure a runtime made by mlbs_runtime_create_from_env. */
static void test_from_env(const char* run) {
  char dir[4096], tiers[9000];
  join(dir, sizeof dir, run, "env");
  snprintf(tiers, sizeof tiers, "mem:128KiB,dir:%s", dir);
  unsetenv("MLBS_CONFIG");
  setenv("MLBS_TIERS", tiers, 1);
  setenv("MLBS_SCHEDULE", "fifo", 1);

  mlbs_runtime_t* rt = NULL;
  mlbs_stats_t st;
  mlbs_tier_stats_t t0;
  /* a runtime starts from MLBS_TIERS and MLBS_SCHEDULE */
  CHECK(mlbs_runtime_create_from_env(&rt) == 0 && rt != NULL);
  if (rt) {
    /* it has the two tiers of MLBS_TIERS */
    CHECK(mlbs_runtime_stats(rt, &st) == 0 && st.ntiers == 2);
    /* with the DRAM capacity of MLBS_TIERS */
    CHECK(mlbs_runtime_tier_stats(rt, 0, &t0) == 0 && t0.capacity_bytes == 128 * 1024);
    /* it is destroyed */
    CHECK(mlbs_runtime_destroy(rt) == 0);
  }
  setenv("MLBS_TIERS", "mem:", 1);
  /* a malformed MLBS_TIERS fails with -EINVAL */
  CHECK_ERRNO(mlbs_runtime_create_from_env(&rt), -EINVAL);
  unsetenv("MLBS_TIERS");
  unsetenv("MLBS_SCHEDULE");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch-directory>\n", argv[0]);
    return 2;
  }
  char run[4096], dirs[6][4096];
  if ((size_t)snprintf(run, sizeof run, "%s/run-%ld", argv[1], (long)getpid()) >= sizeof run) {
    fprintf(stderr, "scratch directory path too long\n");
    return 2;
  }
  const char* leaves[6] = {"fast", "slow", "p-fast", "p-slow", "env", "err"};
  for (int i = 0; i < 6; ++i) {
    join(dirs[i], sizeof dirs[i], run, leaves[i]);
    if (mkdir_p(dirs[i]) != 0) {
      fprintf(stderr, "cannot create %s: %s\n", dirs[i], strerror(errno));
      return 2;
    }
  }

  /* before any failure the last error is "" */
  CHECK(mlbs_last_error() != NULL && mlbs_last_error()[0] == '\0');

  test_scratch_round_trip(run);
  test_error_paths(run);
  test_store_options(dirs[5]);
  test_persistent(run);
  test_from_env(run);

  printf("%d passed, %d failed\n", g_passed, g_failed);
  if (g_failed == 0)
    remove_tree(run);
  else
    fprintf(stderr, "kept %s for inspection\n", run);
  return g_failed == 0 ? 0 : 1;
}
