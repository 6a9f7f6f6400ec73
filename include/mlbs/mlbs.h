/* mlbs — C API for C and Fortran callers. Opaque handles; every function
 * returns 0 or a negative errno and never lets an exception cross. The text of
 * the last error on the calling thread is available from mlbs_last_error(). */
#ifndef MLBS_MLBS_H
#define MLBS_MLBS_H

#include <stddef.h>
#include <stdint.h>

#include "mlbs/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlbs_runtime mlbs_runtime_t;
typedef struct mlbs_store mlbs_store_t;
typedef struct mlbs_reader mlbs_reader_t;

typedef enum { MLBS_SCRATCH = 0, MLBS_PERSISTENT = 1 } mlbs_durability_t;

typedef struct mlbs_tier_stats {
  uint64_t capacity_bytes, used_bytes, records;
  uint64_t bytes_in, bytes_out, ops_in, ops_out, busy_ns, stalls;
} mlbs_tier_stats_t;

typedef struct mlbs_stats {
  uint64_t writes, reads, write_block_ns, read_block_ns, copy_ns;
  uint64_t prefetches, writebacks, live_records;
  uint32_t ntiers;
} mlbs_stats_t;

/* Runtime from a tier spec ("mem:2GiB,dir:/nvme:64GiB,dir:/pfs"), a schedule
 * ("lifo", "fifo", "lifo:N", "fifo:N", "unknown" or "3,1,2") and a durability. NULL tiers or
 * schedule keep the defaults. */
MLBS_API int mlbs_runtime_create(const char* tiers, const char* schedule, mlbs_durability_t durability,
                                 mlbs_runtime_t** out);
/* Runtime from a TOML file (Config::from_file). */
MLBS_API int mlbs_runtime_create_from_file(const char* toml_path, mlbs_runtime_t** out);
/* Runtime from MLBS_CONFIG / MLBS_* variables (Config::from_env). */
MLBS_API int mlbs_runtime_create_from_env(mlbs_runtime_t** out);
/* Destroys the runtime; stores must be destroyed first. NULL is ignored. */
MLBS_API int mlbs_runtime_destroy(mlbs_runtime_t* rt);
MLBS_API int mlbs_runtime_stats(const mlbs_runtime_t* rt, mlbs_stats_t* out);
MLBS_API int mlbs_runtime_tier_stats(const mlbs_runtime_t* rt, uint32_t tier, mlbs_tier_stats_t* out);

/* A store whose working buffer holds `bytes` zeroed bytes. */
MLBS_API int mlbs_store_create(mlbs_runtime_t* rt, const char* name, size_t bytes, mlbs_store_t** out);

/* What a store's bytes are, for its codec: ZFP codes float and double only. */
typedef enum { MLBS_ELEMENTS_BYTES = 0, MLBS_ELEMENTS_FLOAT = 1, MLBS_ELEMENTS_DOUBLE = 2 } mlbs_elements_t;
/* mlbs_store_options_t::parts: let the store choose (StoreOptions::kAutoParts). */
#define MLBS_PARTS_AUTO 0xffffffffu
/* A store's own settings (mlbs::StoreOptions, docs/codecs.md "Per store").
 * Zero-initialise it ({0} or memset) and set what differs. */
typedef struct {
  const char* codec;         /* "none", "lz4", "zstd:3", "zfp:precision=20" ...; NULL or "": the runtime's */
  int elements;              /* an mlbs_elements_t: MLBS_ELEMENTS_BYTES unless the records are floats or doubles */
  uint32_t plane_nx;         /* records as planes of plane_nx * plane_ny elements (ZFP codes 3-D), */
  uint32_t plane_ny;         /* as rows of plane_nx (plane_ny 0: ZFP codes 2-D); plane_nx 0: flat (1-D) */
  uint32_t parts;            /* each record kept as this many parts (docs/parts.md); 0 or 1: whole; */
                             /* MLBS_PARTS_AUTO: the store chooses from `bytes` and the DRAM budget */
} mlbs_store_options_t;
/* mlbs_store_create with the store's own settings; `options` NULL: as mlbs_store_create.
 * -EINVAL for a bad codec spec (named in mlbs_last_error()), ZFP on a store of bytes,
 * parts above 64, or a persistent store opened with another part count than it holds. */
MLBS_API int mlbs_store_create_with(mlbs_runtime_t* rt, const char* name, size_t bytes,
                                    const mlbs_store_options_t* options, mlbs_store_t** out);
MLBS_API int mlbs_store_destroy(mlbs_store_t* s);
/* The working buffer (4096-byte aligned) and its size; valid until the next
 * read or resize of the store. */
MLBS_API void* mlbs_store_data(mlbs_store_t* s);
MLBS_API size_t mlbs_store_size(const mlbs_store_t* s);
/* The parts each record is kept in (1: whole; what MLBS_PARTS_AUTO chose), or -EINVAL for s NULL. */
MLBS_API int mlbs_store_parts(const mlbs_store_t* s);
MLBS_API int mlbs_store_resize(mlbs_store_t* s, size_t bytes);
MLBS_API int mlbs_store_write(mlbs_store_t* s, uint64_t id);
MLBS_API int mlbs_store_read(mlbs_store_t* s, uint64_t id);
/* 1 if held, 0 if not, or -errno. */
MLBS_API int mlbs_store_contains(const mlbs_store_t* s, uint64_t id);
MLBS_API int mlbs_store_erase(mlbs_store_t* s, uint64_t id);
/* Writes up to `cap` ids into `ids` (ascending) and the total count into *count. */
MLBS_API int mlbs_store_ids(const mlbs_store_t* s, uint64_t* ids, size_t cap, size_t* count);
MLBS_API int mlbs_store_flush(mlbs_store_t* s);

/* In-transit readers (docs/readers.md): read-only access, from another
 * process, to store `store` (rank `rank`) of a running writer whose tier spec
 * and durability are `tiers` and `durability`. -ENOENT when no running writer
 * has that store open, -EINVAL when the configuration differs. */
MLBS_API int mlbs_reader_open(const char* tiers, mlbs_durability_t durability, const char* store, int rank,
                              mlbs_reader_t** out);
MLBS_API int mlbs_reader_close(mlbs_reader_t* r);
/* Ids readable now (ascending), as mlbs_store_ids. */
MLBS_API int mlbs_reader_ids(const mlbs_reader_t* r, uint64_t* ids, size_t cap, size_t* count);
/* 1 once record `id` is readable, 0 when `timeout_ms` passes first, or -errno
 * (-ESHUTDOWN: the writer closed the store or is gone). */
MLBS_API int mlbs_reader_wait(const mlbs_reader_t* r, uint64_t id, uint64_t timeout_ms);
/* Bytes of readable record `id`. */
MLBS_API int mlbs_reader_size(const mlbs_reader_t* r, uint64_t id, size_t* bytes);
/* When readable record `id` first reached a file tier (CLOCK_REALTIME, ns
 * since the epoch): the reader's lag is now minus this. */
MLBS_API int mlbs_reader_readable_since(const mlbs_reader_t* r, uint64_t id, uint64_t* unix_ns);
/* Copies readable record `id` (exactly `bytes` long) into `buf`: its exact
 * bytes or -errno (-ENOENT erased meanwhile, -EAGAIN not readable yet). */
MLBS_API int mlbs_reader_read(const mlbs_reader_t* r, uint64_t id, void* buf, size_t bytes);

/* Message of the last failed call on this thread ("" if none). */
MLBS_API const char* mlbs_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* MLBS_MLBS_H */
