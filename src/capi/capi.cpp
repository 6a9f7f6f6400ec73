// mlbs — the C API (include/mlbs/mlbs.h): extern "C" shims over the C++ API.
//
// Every entry point returns 0 (or a documented non-negative value) on success
// and -errno on failure; no exception ever crosses into C. The text of the most
// recent failure on the calling thread is kept in a thread_local string and
// returned by mlbs_last_error(); a successful call does not clear it.
//
// Error mapping (DESIGN §6, liburing's contract):
//   mlbs::Error        -> -e.error_code()   (-EIO if the error carries no errno)
//   std::bad_alloc     -> -ENOMEM
//   std::exception     -> -EIO
//   anything else      -> -EIO
//   NULL argument      -> -EINVAL
// Two deliberate exceptions: mlbs_runtime_destroy(NULL) and
// mlbs_store_destroy(NULL) return 0 (like free(NULL)), and
// mlbs_runtime_destroy returns -EBUSY, keeping the runtime, while stores created
// on it are still open. Output handles are set to NULL before any other check,
// so a failed create never leaves a dangling value in *out.
#include "mlbs/mlbs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlbs/mlbs.hpp"

// A runtime handle also counts the store handles opened on it, so that
// mlbs_runtime_destroy can refuse (-EBUSY) instead of destroying a runtime
// that live stores still point to.
struct mlbs_runtime {
  explicit mlbs_runtime(mlbs::Config cfg) : rt(std::move(cfg)) {}
  mlbs::Runtime rt;
  std::atomic<std::size_t> live_stores{0};
};

namespace {

// Registers a store handle with its runtime for exactly the lifetime of the
// store: declared before the Store member, so it is destroyed after it (and
// also when the Store constructor throws).
class LiveStore {
 public:
  explicit LiveStore(mlbs_runtime* owner) noexcept : owner_(owner) {
    owner_->live_stores.fetch_add(1, std::memory_order_relaxed);
  }
  ~LiveStore() { owner_->live_stores.fetch_sub(1, std::memory_order_acq_rel); }
  LiveStore(const LiveStore&) = delete;
  LiveStore& operator=(const LiveStore&) = delete;

 private:
  mlbs_runtime* owner_;
};

}  // namespace

struct mlbs_reader {
  mlbs::detail::ReaderCore core;
};

struct mlbs_store {
  mlbs_store(mlbs_runtime* owner, std::string name, std::size_t bytes, const mlbs::StoreOptions& options = {})
      : live(owner), s(owner->rt, std::move(name), options, bytes) {}
  LiveStore live;
  mlbs::Store<std::byte> s;   // the working buffer, in bytes
};

namespace {

thread_local std::string t_last_error;
// Used only if recording a message itself ran out of memory.
thread_local const char* t_static_error = nullptr;

// Records "<fn>: <what>" as the thread's last error (dropping the "mlbs: "
// prefix of mlbs::Error::what(), the function name says where) and returns -err.
int fail(const char* fn, int err, std::string_view what) noexcept {
  constexpr std::string_view prefix = "mlbs: ";
  if (what.substr(0, prefix.size()) == prefix) what.remove_prefix(prefix.size());
  try {
    std::string text;
    text.reserve(std::string_view(fn).size() + 2 + what.size());
    text.append(fn).append(": ").append(what);
    t_last_error.swap(text);
    t_static_error = nullptr;
  } catch (...) {
    t_static_error = "mlbs: out of memory while recording an error";
  }
  return -err;
}

int null_arg(const char* fn, const char* arg) noexcept {
  try {
    return fail(fn, EINVAL, std::string("argument '") + arg + "' is NULL");
  } catch (...) {
    return fail(fn, EINVAL, "a pointer argument is NULL");
  }
}

// Runs `f` (which returns the success value) and turns every exception into
// -errno plus a message. Nothing escapes.
template <class F>
int guarded(const char* fn, F&& f) noexcept {
  try {
    return std::forward<F>(f)();
  } catch (const mlbs::Error& e) {
    const int err = e.error_code() > 0 ? e.error_code() : EIO;
    return fail(fn, err, e.what());
  } catch (const std::bad_alloc&) {
    return fail(fn, ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(fn, EIO, e.what());
  } catch (...) {
    return fail(fn, EIO, "unknown exception");
  }
}

// Builds a Config with `build`, validates it and starts a runtime in *out.
template <class Build>
int make_runtime(const char* fn, mlbs_runtime_t** out, Build&& build) noexcept {
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  return guarded(fn, [&] {
    mlbs::Config cfg = std::forward<Build>(build)();
    cfg.validate();
    *out = new mlbs_runtime(std::move(cfg));
    return 0;
  });
}

// The ids out-parameters: up to `cap` of `all` into `ids`, the total into *count.
int copy_ids(const std::vector<std::uint64_t>& all, uint64_t* ids, std::size_t cap, std::size_t* count) noexcept {
  const std::size_t n = all.size() < cap ? all.size() : cap;
  for (std::size_t i = 0; i < n; ++i) ids[i] = all[i];
  *count = all.size();
  return 0;
}

void copy_tier(const mlbs::TierStats& t, mlbs_tier_stats_t& o) noexcept {
  o.capacity_bytes = t.capacity_bytes;
  o.used_bytes = t.used_bytes;
  o.records = t.records;
  o.bytes_in = t.bytes_in;
  o.bytes_out = t.bytes_out;
  o.ops_in = t.ops_in;
  o.ops_out = t.ops_out;
  o.busy_ns = t.busy_ns;
  o.stalls = t.stalls;
}

}  // namespace

extern "C" {

// --- runtime -------------------------------------------------------------------

int mlbs_runtime_create(const char* tiers, const char* schedule, mlbs_durability_t durability,
                        mlbs_runtime_t** out) {
  constexpr const char* fn = "mlbs_runtime_create";
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  // C may pass any int here; in C++ an enum value outside 0..1 must not even be
  // loaded as the enum type, so inspect the representation.
  std::underlying_type_t<mlbs_durability_t> d;
  static_assert(sizeof d == sizeof durability);
  std::memcpy(&d, &durability, sizeof d);
  if (d != MLBS_SCRATCH && d != MLBS_PERSISTENT)
    return guarded(fn, [&] {
      return fail(fn, EINVAL,
                  "durability must be MLBS_SCRATCH (0) or MLBS_PERSISTENT (1), got " +
                      std::to_string(static_cast<long long>(d)));
    });
  return make_runtime(fn, out, [&] {
    mlbs::Config cfg{};
    if (tiers) cfg.tiers = mlbs::parse_tier_spec(tiers, "tiers");
    if (schedule) cfg.schedule = mlbs::parse_schedule(schedule, "schedule");
    cfg.durability = d == MLBS_PERSISTENT ? mlbs::Durability::persistent
                                          : mlbs::Durability::scratch;
    return cfg;
  });
}

int mlbs_runtime_create_from_file(const char* toml_path, mlbs_runtime_t** out) {
  constexpr const char* fn = "mlbs_runtime_create_from_file";
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  if (!toml_path) return null_arg(fn, "toml_path");
  return make_runtime(fn, out, [&] { return mlbs::Config::from_file(toml_path); });
}

int mlbs_runtime_create_from_env(mlbs_runtime_t** out) {
  return make_runtime("mlbs_runtime_create_from_env", out,
                      [] { return mlbs::Config::from_env(); });
}

int mlbs_runtime_destroy(mlbs_runtime_t* rt) {
  constexpr const char* fn = "mlbs_runtime_destroy";
  if (!rt) return 0;   // like free(NULL)
  return guarded(fn, [&] {
    const std::size_t live = rt->live_stores.load(std::memory_order_acquire);
    if (live != 0)
      return fail(fn, EBUSY,
                  std::to_string(live) +
                      " store(s) still open on this runtime; destroy them first (runtime kept)");
    delete rt;   // drains what the durability mode owes; bounded, never hangs
    return 0;
  });
}

int mlbs_runtime_stats(const mlbs_runtime_t* rt, mlbs_stats_t* out) {
  constexpr const char* fn = "mlbs_runtime_stats";
  if (!rt) return null_arg(fn, "rt");
  if (!out) return null_arg(fn, "out");
  return guarded(fn, [&] {
    const mlbs::Stats st = rt->rt.stats();
    mlbs_stats_t o{};
    o.writes = st.writes;
    o.reads = st.reads;
    o.write_block_ns = st.write_block_ns;
    o.read_block_ns = st.read_block_ns;
    o.copy_ns = st.copy_ns;
    o.prefetches = st.prefetches;
    o.writebacks = st.writebacks;
    o.live_records = st.live_records;
    o.ntiers = static_cast<std::uint32_t>(st.tiers.size());
    *out = o;
    return 0;
  });
}

int mlbs_runtime_tier_stats(const mlbs_runtime_t* rt, uint32_t tier, mlbs_tier_stats_t* out) {
  constexpr const char* fn = "mlbs_runtime_tier_stats";
  if (!rt) return null_arg(fn, "rt");
  if (!out) return null_arg(fn, "out");
  return guarded(fn, [&] {
    const mlbs::Stats st = rt->rt.stats();
    if (tier >= st.tiers.size())
      return fail(fn, EINVAL,
                  "tier " + std::to_string(tier) + " out of range (the runtime has " +
                      std::to_string(st.tiers.size()) + " tiers)");
    mlbs_tier_stats_t o{};
    copy_tier(st.tiers[tier], o);
    *out = o;
    return 0;
  });
}

// --- stores --------------------------------------------------------------------

int mlbs_store_create(mlbs_runtime_t* rt, const char* name, size_t bytes, mlbs_store_t** out) {
  constexpr const char* fn = "mlbs_store_create";
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  if (!rt) return null_arg(fn, "rt");
  if (!name) return null_arg(fn, "name");
  return guarded(fn, [&] {
    *out = new mlbs_store(rt, name, bytes);
    return 0;
  });
}

int mlbs_store_create_with(mlbs_runtime_t* rt, const char* name, size_t bytes, const mlbs_store_options_t* options,
                           mlbs_store_t** out) {
  constexpr const char* fn = "mlbs_store_create_with";
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  if (!rt) return null_arg(fn, "rt");
  if (!name) return null_arg(fn, "name");
  return guarded(fn, [&] {
    mlbs::StoreOptions o;
    if (options) {
      using E = mlbs::StoreOptions::Elements;
      switch (options->elements) {
        case MLBS_ELEMENTS_BYTES: break;
        case MLBS_ELEMENTS_FLOAT: o.elements = E::float32; break;
        case MLBS_ELEMENTS_DOUBLE: o.elements = E::float64; break;
        default:
          throw mlbs::InvalidArgumentError(
              EINVAL, "options->elements " + std::to_string(static_cast<int>(options->elements)) +
                          " is not an mlbs_elements_t (0 bytes, 1 float, 2 double)",
              {name, {}, {}});
      }
      if (options->codec) o.codec = options->codec;
      o.plane_nx = options->plane_nx;
      o.plane_ny = options->plane_ny;
      // Zero-initialised: whole records; MLBS_PARTS_AUTO is StoreOptions::kAutoParts.
      o.parts = std::max<std::uint32_t>(1, options->parts);
    }
    *out = new mlbs_store(rt, name, bytes, o);
    return 0;
  });
}

int mlbs_store_destroy(mlbs_store_t* s) {
  if (!s) return 0;   // like free(NULL), so cleanup paths need no test
  return guarded("mlbs_store_destroy", [&] {
    delete s;
    return 0;
  });
}

void* mlbs_store_data(mlbs_store_t* s) {
  if (!s) {
    null_arg("mlbs_store_data", "s");
    return nullptr;
  }
  return s->s.data();
}

size_t mlbs_store_size(const mlbs_store_t* s) {
  if (!s) {
    null_arg("mlbs_store_size", "s");
    return 0;
  }
  return s->s.size();
}

int mlbs_store_parts(const mlbs_store_t* s) {
  if (!s) return null_arg("mlbs_store_parts", "s");
  return static_cast<int>(s->s.parts());
}

int mlbs_store_resize(mlbs_store_t* s, size_t bytes) {
  constexpr const char* fn = "mlbs_store_resize";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] {
    s->s.resize(bytes);
    return 0;
  });
}

int mlbs_store_write(mlbs_store_t* s, uint64_t id) {
  constexpr const char* fn = "mlbs_store_write";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] {
    s->s.write(id);
    return 0;
  });
}

int mlbs_store_read(mlbs_store_t* s, uint64_t id) {
  constexpr const char* fn = "mlbs_store_read";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] {
    s->s.read(id);
    return 0;
  });
}

int mlbs_store_contains(const mlbs_store_t* s, uint64_t id) {
  constexpr const char* fn = "mlbs_store_contains";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] { return s->s.contains(id) ? 1 : 0; });
}

int mlbs_store_erase(mlbs_store_t* s, uint64_t id) {
  constexpr const char* fn = "mlbs_store_erase";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] {
    s->s.erase(id);
    return 0;
  });
}

int mlbs_store_ids(const mlbs_store_t* s, uint64_t* ids, size_t cap, size_t* count) {
  constexpr const char* fn = "mlbs_store_ids";
  if (!s) return null_arg(fn, "s");
  if (!count) return null_arg(fn, "count");
  if (!ids && cap != 0) return null_arg(fn, "ids (with cap > 0)");
  return guarded(fn, [&] {
    return copy_ids(s->s.ids(), ids, cap, count);
  });
}

int mlbs_store_flush(mlbs_store_t* s) {
  constexpr const char* fn = "mlbs_store_flush";
  if (!s) return null_arg(fn, "s");
  return guarded(fn, [&] {
    s->s.flush();
    return 0;
  });
}

// --- in-transit readers ---------------------------------------------------------

int mlbs_reader_open(const char* tiers, mlbs_durability_t durability, const char* store, int rank,
                     mlbs_reader_t** out) {
  constexpr const char* fn = "mlbs_reader_open";
  if (!out) return null_arg(fn, "out");
  *out = nullptr;
  if (!store) return null_arg(fn, "store");
  std::underlying_type_t<mlbs_durability_t> d;
  std::memcpy(&d, &durability, sizeof d);
  return guarded(fn, [&] {
    if (d != MLBS_SCRATCH && d != MLBS_PERSISTENT)
      return fail(fn, EINVAL, "durability must be MLBS_SCRATCH (0) or MLBS_PERSISTENT (1)");
    if (rank < 0) return fail(fn, EINVAL, "rank must be >= 0, got " + std::to_string(rank));
    mlbs::Config cfg{};
    if (tiers) cfg.tiers = mlbs::parse_tier_spec(tiers, "tiers");
    cfg.durability = d == MLBS_PERSISTENT ? mlbs::Durability::persistent : mlbs::Durability::scratch;
    *out = new mlbs_reader{mlbs::detail::ReaderCore(cfg, store, rank)};
    return 0;
  });
}

int mlbs_reader_close(mlbs_reader_t* r) {
  delete r;
  return 0;
}

int mlbs_reader_ids(const mlbs_reader_t* r, uint64_t* ids, size_t cap, size_t* count) {
  constexpr const char* fn = "mlbs_reader_ids";
  if (!r) return null_arg(fn, "r");
  if (!count) return null_arg(fn, "count");
  if (!ids && cap != 0) return null_arg(fn, "ids (with cap > 0)");
  return guarded(fn, [&] {
    return copy_ids(r->core.ids(), ids, cap, count);
  });
}

int mlbs_reader_wait(const mlbs_reader_t* r, uint64_t id, uint64_t timeout_ms) {
  constexpr const char* fn = "mlbs_reader_wait";
  if (!r) return null_arg(fn, "r");
  return guarded(fn, [&] {
    // Clamped so the deadline cannot overflow: a year is "forever" here.
    const std::uint64_t ms = std::min<std::uint64_t>(timeout_ms, 365ull * 24 * 3600 * 1000);
    return r->core.wait(id, std::chrono::milliseconds(ms)) ? 1 : 0;
  });
}

int mlbs_reader_size(const mlbs_reader_t* r, uint64_t id, size_t* bytes) {
  constexpr const char* fn = "mlbs_reader_size";
  if (!r) return null_arg(fn, "r");
  if (!bytes) return null_arg(fn, "bytes");
  return guarded(fn, [&] {
    *bytes = static_cast<size_t>(r->core.size_bytes(id));
    return 0;
  });
}

int mlbs_reader_readable_since(const mlbs_reader_t* r, uint64_t id, uint64_t* unix_ns) {
  constexpr const char* fn = "mlbs_reader_readable_since";
  if (!r) return null_arg(fn, "r");
  if (!unix_ns) return null_arg(fn, "unix_ns");
  return guarded(fn, [&] {
    *unix_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(r->core.readable_since(id).time_since_epoch()).count());
    return 0;
  });
}

int mlbs_reader_read(const mlbs_reader_t* r, uint64_t id, void* buf, size_t bytes) {
  constexpr const char* fn = "mlbs_reader_read";
  if (!r) return null_arg(fn, "r");
  if (!buf && bytes != 0) return null_arg(fn, "buf");
  return guarded(fn, [&] {
    r->core.read(id, static_cast<std::byte*>(buf), bytes, 1);
    return 0;
  });
}

// --- errors --------------------------------------------------------------------

const char* mlbs_last_error(void) {
  return t_static_error ? t_static_error : t_last_error.c_str();
}

}  // extern "C"
