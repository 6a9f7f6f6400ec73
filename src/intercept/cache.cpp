#include "intercept/cache.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <limits>

#include <fmt/format.h>

#include "intercept/real.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/runtime.hpp"
#include "mlbs/trace.hpp"
#include "mlbs/detail/store_core.hpp"

namespace mlbs::intercept {

// ============================================================================
// the process's cache
// ============================================================================

namespace {

std::atomic<Cache*> g_cache{nullptr};
std::atomic<bool> g_off{false};  ///< a forked child, exit under way, or settings refused
std::once_flag g_once;

int fail(int err) {
  errno = err;
  return -1;
}

/// An mlbs error as the errno a file system would give.
int errno_of(const std::exception& e) {
  if (const auto* m = dynamic_cast<const Error*>(&e); m && m->error_code()) return m->error_code();
  return EIO;
}

}  // namespace

Cache* Cache::get() noexcept {
  if (g_off.load(std::memory_order_relaxed)) return nullptr;
  if (Cache* c = g_cache.load(std::memory_order_acquire)) return c;
  std::call_once(g_once, [] {
    try {
      std::optional<Settings> s = Settings::from_env();
      if (!s) {
        g_off = true;
        return;
      }
      register_files_tier();
      registry().set_chunk_bytes(s->chunk_bytes);
      g_cache.store(new Cache(std::move(*s)), std::memory_order_release);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlbs-run: transparent mode is off in process %d: %s\n", static_cast<int>(::getpid()),
                   e.what());
      g_off = true;
    }
  });
  return g_off ? nullptr : g_cache.load(std::memory_order_acquire);
}

Cache::Cache(Settings s) : settings_(std::move(s)), pid_(::getpid()) {
  if (!settings_.trace.empty()) trace::enable();
  changed_directory();
}

void Cache::changed_directory() {
  char buf[PATH_MAX];
  std::string now = ::getcwd(buf, sizeof buf) ? normalize(buf) : std::string();
  Held lock(cwd_mu_);
  cwd_ = std::move(now);
}

bool Cache::may_intercept(const char* path) const {
  if (path[0] == '/') return settings_.folder.may_hold(path, {});
  Held lock(cwd_mu_);
  return settings_.folder.may_hold(path, cwd_);
}

Cache::~Cache() = default;

void Cache::disable() noexcept { g_off = true; }

bool Cache::uncached(const std::string& abs) const {
  Held lock(mu_);
  return uncached_.count(abs) > 0;
}

template <class F>
auto Cache::blocking(F&& call) {
  const auto start = std::chrono::steady_clock::now();
  struct Count {
    Cache& c;
    std::chrono::steady_clock::time_point start;
    ~Count() {
      c.blocked_ns_ += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
  } count{*this, start};
  return call();
}

detail::StoreCore& Cache::store() {
  std::call_once(started_, [&] {
    // The helpers start with every signal blocked (they inherit this mask):
    // the program's handlers run on its own threads, never on an mlbs one.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct Restore {
      sigset_t mask;
      ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
    } restore{old};
    rt_ = std::make_unique<Runtime>(settings_.cfg);
    store_ = std::make_unique<detail::StoreCore>(*rt_, "files");
    running_.store(true, std::memory_order_release);
    // From the first file data on, an ending signal completes the files. A
    // process that never caches any stays single-threaded (its C library
    // then takes its cheaper paths in every cancellable call).
    watch_signals();
  });
  return *store_;
}

detail::Block Cache::take_buffer() {
  {
    Held lock(mu_);
    if (!spare_.empty()) {
      detail::Block b = std::move(spare_.back());
      spare_.pop_back();
      return b;
    }
  }
  return detail::Block::allocate_untouched(settings_.chunk_bytes);
}

void Cache::give_buffer(detail::Block b) {
  if (!b || b.capacity() < settings_.chunk_bytes) return;
  Held lock(mu_);
  if (spare_.size() < kSpareBuffers) spare_.push_back(std::move(b));
}

// ============================================================================
// descriptors
// ============================================================================

std::shared_ptr<OpenFile> Cache::lookup(int fd) const {
  if (fd < 0 || !any_fd()) return nullptr;
  Held lock(mu_);
  return static_cast<std::size_t>(fd) < fds_.size() ? fds_[static_cast<std::size_t>(fd)] : nullptr;
}

std::shared_ptr<File> Cache::file_at(const std::string& abs, int flags, const struct stat& st) {
  // mu_ held.
  auto it = files_.find(abs);
  if (it != files_.end()) return it->second;
  auto f = std::make_shared<File>();
  f->no = next_no_++;
  f->created = f->no;
  f->path = abs;
  f->size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t c = settings_.chunk_bytes;
  f->chunks.assign((f->size + c - 1) / c, Chunk{Chunk::State::real, 0, 0});
  f->real = std::make_shared<RealFile>();
  f->real->path = abs;
  f->real->current.assign(f->chunks.size(), 0);
  (void)flags;
  registry().add(f->no, f->real);
  files_[abs] = f;
  ++files_seen_;
  return f;
}

namespace {

/// The writer lock: an open file description lock (F_OFD_SETLK) on one byte
/// far past any data, on the files tier's descriptor. A process caches chunks
/// whole and writes them back whole, so two processes writing one file at once
/// (an N-to-1 checkpoint) would write their stale copies of each other's bytes:
/// the second is refused instead. The program's own flock() and fcntl() locks
/// never reach that byte. 0, EBUSY, or 0 where the file system has no such
/// locks (nothing to go by then).
int writer_lock(RealFile& real, short type) {
  Held lock(real.mu);
  const int fd = real.descriptor();
  if (fd < 0) return 0;  // the program's open succeeded: its call decides
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = off_t{1} << 62;
  fl.l_len = 1;
  if (real::fcntl(fd, F_OFD_SETLK, reinterpret_cast<long>(&fl)) == 0) return 0;
  return errno == EAGAIN || errno == EACCES ? EBUSY : 0;
}

}  // namespace

int Cache::opened(int fd, const std::string& abs, int flags) {
  if (fd < 0) return 0;
  // Folders, paths, and unnamed files (O_TMPFILE names a folder): not cached.
  if ((flags & (O_PATH | O_DIRECTORY)) || (flags & O_TMPFILE) == O_TMPFILE) return 0;
  struct stat st;
  if (real::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  std::shared_ptr<File> f;
  {
    Held lock(mu_);
    if (next_no_ >= ChunkId::kMaxFiles) return 0;  // numbers run out: the rest go straight through
    f = file_at(abs, flags, st);
  }
  const bool writes = (flags & O_ACCMODE) != O_RDONLY;
  {
    Held lock(f->mu);
    try {
      revalidate(*f, Stamp::of(st));  // before the writer lock: it may reopen the real file
    } catch (const std::exception& e) {
      return errno_of(e);
    }
    if (writes && f->writers == 0) {
      if (const int err = writer_lock(*f->real, F_WRLCK)) {
        std::fprintf(stderr,
                     "mlbs-run: %s is open for writing in another process under mlbs-run: a file is cached by "
                     "one process at a time, so this open fails with EBUSY (docs/transparent.md, limits)\n",
                     abs.c_str());
        return err;
      }
    }
    if (flags & O_TRUNC) cut(*f, 0);  // the real file is empty already
    ++f->opens;
    if (writes) ++f->writers;
  }
  auto of = std::make_shared<OpenFile>();
  of->file = std::move(f);
  of->flags = flags;
  of->fds = 1;
  Held lock(mu_);
  if (fds_.size() <= static_cast<std::size_t>(fd)) fds_.resize(static_cast<std::size_t>(fd) + 1);
  if (!fds_[static_cast<std::size_t>(fd)]) ++fd_count_, ++g_fds_open;
  fds_[static_cast<std::size_t>(fd)] = std::move(of);
  return 0;
}

int Cache::dup_to(int fd, int newfd) {
  std::shared_ptr<OpenFile> of = lookup(fd);
  if (!of || newfd < 0) return newfd;
  Held lock(mu_);
  if (fds_.size() <= static_cast<std::size_t>(newfd)) fds_.resize(static_cast<std::size_t>(newfd) + 1);
  auto& slot = fds_[static_cast<std::size_t>(newfd)];
  if (!slot) ++fd_count_, ++g_fds_open;
  slot = of;
  ++of->fds;
  return newfd;
}

int Cache::close(int fd) {
  std::shared_ptr<OpenFile> of;
  bool last = false;
  {
    Held lock(mu_);
    if (fd >= 0 && static_cast<std::size_t>(fd) < fds_.size() && fds_[static_cast<std::size_t>(fd)]) {
      of = std::move(fds_[static_cast<std::size_t>(fd)]);
      --fd_count_, --g_fds_open;
      last = --of->fds == 0;
    }
  }
  int err = 0;
  if (of && last) {
    File& f = *of->file;
    Held lock(f.mu);
    try {
      if ((of->flags & O_ACCMODE) != O_RDONLY && --f.writers == 0) writer_lock(*f.real, F_UNLCK);
      if (--f.opens == 0) {
        if (f.unlinked) {
          forget_file(f);
        } else if (f.modified) {
          commit(f);
          set_real_size(f);
        }
        // Its buffers serve the next file (their pages are touched already).
        f.cached = -1;
        give_buffer(std::move(f.rbuf));
      }
    } catch (const std::exception& e) {
      err = errno_of(e);  // close() reports what a write behind found, as NFS does
    }
  }
  const int rc = real::close(fd);
  if (rc == 0 && err) return fail(err);
  return rc;
}

// ============================================================================
// data
// ============================================================================

void Cache::load_stored(File& f, std::uint64_t k, std::byte* into, std::uint64_t bytes) {
  // The chunk's record into `into` (its first `bytes`): through the read buffer.
  if (f.cached != static_cast<std::int64_t>(k)) {
    const ChunkId id{f.no, k, f.chunks[k].version};
    if (!f.rbuf) f.rbuf = take_buffer();
    f.rbuf_len = blocking([&] { return store().read(id.id(), f.rbuf, 1); });
    f.cached = static_cast<std::int64_t>(k);
  }
  const std::uint64_t have = std::min(bytes, f.rbuf_len);
  std::memcpy(into, f.rbuf.data(), have);
  if (have < bytes) std::memset(into + have, 0, bytes - have);
}

void Cache::stage(File& f, std::uint64_t k, std::uint64_t from, std::uint64_t to) {
  // Chunk k into `buf`, about to be written in [from, to): its bytes so far
  // are loaded only where the write does not cover them.
  if (f.dirty == static_cast<std::int64_t>(k)) return;
  commit(f);
  const std::uint64_t c = settings_.chunk_bytes;
  const std::uint64_t begin = k * c;
  const std::uint64_t len = f.size > begin ? std::min(c, f.size - begin) : 0;
  take_write_buffer(f);
  f.dirty = static_cast<std::int64_t>(k);
  f.buf_len = len;
  if (len == 0 || (from == 0 && to >= len)) return;
  const Chunk chunk = k < f.chunks.size() ? f.chunks[k] : Chunk{};
  switch (chunk.state) {
    case Chunk::State::hole:
      std::memset(f.buf.data(), 0, len);
      break;
    case Chunk::State::stored:
      load_stored(f, k, f.buf.data(), len);
      break;
    case Chunk::State::real: {
      Held lock(f.real->mu);
      const int fd = f.real->descriptor();
      if (fd < 0) throw IoError(errno, "cannot open " + f.path + " to read it", {});
      std::uint64_t done = 0;
      while (done < len) {
        const ssize_t n = real::pread(fd, f.buf.data() + done, len - done, static_cast<off_t>(begin + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw IoError(errno, "cannot read " + f.path, {});
        if (n == 0) break;
        done += static_cast<std::uint64_t>(n);
      }
      if (done < len) std::memset(f.buf.data() + done, 0, len - done);
      break;
    }
  }
}

void Cache::commit(File& f) {
  if (f.dirty < 0) return;
  const auto k = static_cast<std::uint64_t>(f.dirty);
  if (f.chunks.size() <= k) f.chunks.resize(k + 1);
  const Chunk before = f.chunks[k];
  const std::uint16_t version = static_cast<std::uint16_t>(before.version + 1);
  {
    // From now on only the new version's bytes belong in the chunk's range:
    // a write behind of the old one still in flight is dropped.
    Held lock(f.real->mu);
    if (f.real->current.size() <= k) f.real->current.resize(k + 1, 0);
    f.real->current[k] = version;
  }
  // A write refused (an error the caller reports) leaves the chunk dirty, its
  // bytes in the buffer: the next commit tries again, nothing is lost.
  const std::uint64_t id = ChunkId{f.no, k, version}.id();
  if (f.buf_lent && 2 * f.buf_len >= f.buf.capacity()) {
    // The buffer is a DRAM slot: it becomes the record's, no copy. (A chunk
    // using less than half of it is copied into a slot of its size instead.)
    blocking([&] { store().write_lent(id, f.buf, f.buf_len); });
    f.buf_lent = false;
  } else {
    blocking([&] { store().write(id, f.buf.data(), f.buf_len); });
    drop_write_buffer(f);
  }
  if (before.state == Chunk::State::stored) store().erase(ChunkId{f.no, k, before.version}.id());
  f.chunks[k] = Chunk{Chunk::State::stored, version, f.buf_len};
  if (f.cached == static_cast<std::int64_t>(k)) f.cached = -1;
  f.dirty = -1;
}

void Cache::take_write_buffer(File& f) {
  if (f.buf) return;
  // A DRAM slot when there is room for one now: committing it costs no
  // copy. Else a buffer of the cache's own (never a wait for room while
  // other files' chunks may hold slots).
  if (auto slot = store().lend_slot(settings_.chunk_bytes)) {
    f.buf = std::move(*slot);
    f.buf_lent = true;
  } else {
    f.buf = take_buffer();
    f.buf_lent = false;
  }
}

void Cache::drop_write_buffer(File& f) {
  if (!f.buf) return;
  if (f.buf_lent)
    store().return_slot(std::move(f.buf));
  else
    give_buffer(std::move(f.buf));
  f.buf = {};
  f.buf_lent = false;
}

void Cache::cut(File& f, std::uint64_t len) {
  // The content past `len` goes (its records and their writes behind); the
  // real file is cut by the caller (open's O_TRUNC, ftruncate()).
  const std::uint64_t c = settings_.chunk_bytes;
  const std::uint64_t keep = (len + c - 1) / c;
  if (f.dirty >= 0 && static_cast<std::uint64_t>(f.dirty) >= keep) {
    f.dirty = -1;
    drop_write_buffer(f);
  }
  if (f.cached >= 0 && static_cast<std::uint64_t>(f.cached) >= keep) f.cached = -1;
  {
    Held lock(f.real->mu);
    for (std::uint64_t k = keep; k < f.chunks.size(); ++k)
      if (k < f.real->current.size()) ++f.real->current[k];  // a version never written
  }
  for (std::uint64_t k = keep; k < f.chunks.size(); ++k)
    if (f.chunks[k].state == Chunk::State::stored) store().erase(ChunkId{f.no, k, f.chunks[k].version}.id());
  if (f.chunks.size() > keep) f.chunks.resize(keep);
  // The last chunk kept ends at `len` now.
  if (len % c && keep > 0 && len < f.size) {
    const std::uint64_t k = keep - 1;
    if (f.chunks[k].state == Chunk::State::stored && f.chunks[k].bytes > len % c) {
      stage(f, k, 0, 0);
      f.buf_len = len % c;
      f.size = len;
      commit(f);
    } else if (f.dirty == static_cast<std::int64_t>(k)) {
      f.buf_len = std::min(f.buf_len, len % c);
    }
  }
  f.size = len;
  changed(f);
}

ssize_t Cache::read_at(File& f, std::byte* out, std::size_t n, std::uint64_t off) {
  if (off >= f.size) return 0;
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, f.size - off));
  const std::uint64_t c = settings_.chunk_bytes;
  std::size_t done = 0;
  while (done < n) {
    const std::uint64_t at = off + done;
    const std::uint64_t k = at / c, within = at % c;
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, c - within));
    std::byte* into = out + done;
    const auto zeros_past = [&](const std::byte* src, std::uint64_t have) {
      const std::uint64_t from = std::min<std::uint64_t>(have, within);
      const std::uint64_t copy = std::min<std::uint64_t>(len, have - from);
      if (copy) std::memcpy(into, src + within, copy);
      if (copy < len) std::memset(into + copy, 0, len - copy);
    };
    if (f.dirty == static_cast<std::int64_t>(k)) {
      zeros_past(f.buf.data(), within < f.buf_len ? f.buf_len : within);
    } else if (k >= f.chunks.size() || f.chunks[k].state == Chunk::State::hole) {
      std::memset(into, 0, len);
    } else if (f.chunks[k].state == Chunk::State::stored) {
      const Chunk& chunk = f.chunks[k];
      // Straight from the record's DRAM slot into the program's memory: the
      // rest of a chunk at once (a whole array, as np.load reads it), a
      // large piece, or the first few small ones (a header). A chunk read in
      // many small pieces is copied into the read buffer once instead.
      const bool rest = within + len >= chunk.bytes;
      if (!rest && f.peeked != static_cast<std::int64_t>(k)) f.peeked = static_cast<std::int64_t>(k), f.peeks = 0;
      if (f.cached != static_cast<std::int64_t>(k) && (rest || len >= kDirectRead || f.peeks < kPeeks)) {
        if (!rest && len < kDirectRead) ++f.peeks;
        const std::size_t got =
            blocking([&] { return store().read_into(ChunkId{f.no, k, chunk.version}.id(), into, within, len); });
        if (got < len) std::memset(into + got, 0, len - got);
      } else {
        if (f.cached != static_cast<std::int64_t>(k)) {
          if (!f.rbuf) f.rbuf = take_buffer();
          f.rbuf_len = blocking([&] { return store().read(ChunkId{f.no, k, chunk.version}.id(), f.rbuf, 1); });
          f.cached = static_cast<std::int64_t>(k);
        }
        zeros_past(f.rbuf.data(), within < f.rbuf_len ? f.rbuf_len : within);
      }
    } else {
      Held lock(f.real->mu);
      const int fd = f.real->descriptor();
      if (fd < 0) return done ? static_cast<ssize_t>(done) : fail(errno);
      std::size_t got = 0;
      while (got < len) {
        const ssize_t r = blocking([&] { return real::pread(fd, into + got, len - got, static_cast<off_t>(at + got)); });
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return done + got ? static_cast<ssize_t>(done + got) : -1;
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
      }
      if (got < len) std::memset(into + got, 0, len - got);
    }
    done += len;
  }
  bytes_read_ += done;
  note_read(f);
  return static_cast<ssize_t>(done);
}

ssize_t Cache::write_at(File& f, const std::byte* in, std::size_t n, std::uint64_t off) {
  const std::uint64_t c = settings_.chunk_bytes;
  if ((off + n + c - 1) / c > ChunkId::kMaxChunks) return fail(EFBIG);
  std::size_t done = 0;
  while (done < n) {
    const std::uint64_t at = off + done;
    const std::uint64_t k = at / c, within = at % c;
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, c - within));
    stage(f, k, within, within + len);
    if (within > f.buf_len) std::memset(f.buf.data() + f.buf_len, 0, within - f.buf_len);  // a hole before it
    std::memcpy(f.buf.data() + within, in + done, len);
    f.buf_len = std::max<std::uint64_t>(f.buf_len, within + len);
    f.size = std::max<std::uint64_t>(f.size, k * c + f.buf_len);
    done += len;
  }
  changed(f);
  bytes_written_ += n;
  return static_cast<ssize_t>(n);
}

void Cache::note_read(File& f) {
  // --schedule auto: the first files the program reads back tell the order
  // (newest first: LIFO; oldest first: FIFO).
  if (!settings_.learn_order || f.read_once || learnt_.load(std::memory_order_relaxed) || !running()) return;
  f.read_once = true;
  Held lock(order_mu_);
  read_order_.push_back(f.created);
  if (read_order_.size() < 3) return;
  const bool newest_first = read_order_[0] > read_order_[1] && read_order_[1] > read_order_[2];
  const bool oldest_first = read_order_[0] < read_order_[1] && read_order_[1] < read_order_[2];
  if (newest_first || oldest_first) {
    rt_->set_schedule(newest_first ? Schedule::lifo() : Schedule::fifo());
    learnt_ = true;
  } else {
    read_order_.erase(read_order_.begin());  // no order yet: look at the next ones
  }
}

ssize_t Cache::read(OpenFile& of, void* buf, std::size_t n) {
  if ((of.flags & O_ACCMODE) == O_WRONLY) return fail(EBADF);
  Held olock(of.mu);
  File& f = *of.file;
  Held lock(f.mu);
  try {
    const ssize_t r = read_at(f, static_cast<std::byte*>(buf), n, of.offset);
    if (r > 0) of.offset += static_cast<std::uint64_t>(r);
    return r;
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

ssize_t Cache::write(OpenFile& of, const void* buf, std::size_t n) {
  if ((of.flags & O_ACCMODE) == O_RDONLY) return fail(EBADF);
  Held olock(of.mu);
  File& f = *of.file;
  Held lock(f.mu);
  try {
    if (of.flags & O_APPEND) of.offset = f.size;
    const ssize_t w = write_at(f, static_cast<const std::byte*>(buf), n, of.offset);
    if (w > 0) of.offset += static_cast<std::uint64_t>(w);
    return w;
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

ssize_t Cache::pread(OpenFile& of, void* buf, std::size_t n, off_t off) {
  if (off < 0) return fail(EINVAL);
  if ((of.flags & O_ACCMODE) == O_WRONLY) return fail(EBADF);
  File& f = *of.file;
  Held lock(f.mu);
  try {
    return read_at(f, static_cast<std::byte*>(buf), n, static_cast<std::uint64_t>(off));
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

ssize_t Cache::pwrite(OpenFile& of, const void* buf, std::size_t n, off_t off) {
  if (off < 0) return fail(EINVAL);
  if ((of.flags & O_ACCMODE) == O_RDONLY) return fail(EBADF);
  File& f = *of.file;
  Held lock(f.mu);
  try {
    // As Linux does: pwrite() on a descriptor opened O_APPEND appends.
    const std::uint64_t at = (of.flags & O_APPEND) ? f.size : static_cast<std::uint64_t>(off);
    return write_at(f, static_cast<const std::byte*>(buf), n, at);
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

ssize_t Cache::readv(OpenFile& of, const struct iovec* iov, int n, std::optional<off_t> off) {
  if (n < 0) return fail(EINVAL);
  ssize_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (iov[i].iov_len == 0) continue;
    const ssize_t r = off ? pread(of, iov[i].iov_base, iov[i].iov_len, *off + total)
                          : read(of, iov[i].iov_base, iov[i].iov_len);
    if (r < 0) return total ? total : -1;
    total += r;
    if (static_cast<std::size_t>(r) < iov[i].iov_len) break;
  }
  return total;
}

ssize_t Cache::writev(OpenFile& of, const struct iovec* iov, int n, std::optional<off_t> off) {
  if (n < 0) return fail(EINVAL);
  ssize_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (iov[i].iov_len == 0) continue;
    const ssize_t w = off ? pwrite(of, iov[i].iov_base, iov[i].iov_len, *off + total)
                          : write(of, iov[i].iov_base, iov[i].iov_len);
    if (w < 0) return total ? total : -1;
    total += w;
  }
  return total;
}

off_t Cache::lseek(OpenFile& of, off_t off, int whence) {
  Held olock(of.mu);
  std::uint64_t size;
  {
    Held lock(of.file->mu);
    size = of.file->size;
  }
  off_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = static_cast<off_t>(of.offset); break;
    case SEEK_END: base = static_cast<off_t>(size); break;
    case SEEK_DATA:  // the whole file reads as data
      if (off < 0 || static_cast<std::uint64_t>(off) >= size) return fail(ENXIO);
      of.offset = static_cast<std::uint64_t>(off);
      return off;
    case SEEK_HOLE:
      if (off < 0 || static_cast<std::uint64_t>(off) >= size) return fail(ENXIO);
      of.offset = size;
      return static_cast<off_t>(size);
    default: return fail(EINVAL);
  }
  if ((off > 0 && base > std::numeric_limits<off_t>::max() - off) || base + off < 0) return fail(EINVAL);
  of.offset = static_cast<std::uint64_t>(base + off);
  return static_cast<off_t>(of.offset);
}

void Cache::set_real_size(File& f) {
  // The real file's size is the program's (holes where nothing is written
  // behind yet): stat() from any process sees it, and nothing written
  // behind lies past it.
  if (f.unlinked) return;
  Held lock(f.real->mu);
  const int fd = f.real->descriptor();
  if (fd < 0 || real::ftruncate(fd, static_cast<off_t>(f.size)) != 0)
    throw IoError(errno, "cannot set the size of " + f.path, {});
  f.modified = false;
}

void Cache::changed(File& f) {
  f.modified = true;
  f.settled.reset();
}

void Cache::settle(File& f) {
  if (f.dirty >= 0 || f.modified || f.unlinked) return;  // changes of its own since
  Held lock(f.real->mu);
  struct stat st;
  if (f.real->fd >= 0 && real::fstat(f.real->fd, &st) == 0) f.settled = Stamp::of(st);
}

bool Cache::revalidate(File& f, const Stamp& now) {
  if (f.opens > 0 || !f.settled || *f.settled == now) return false;
  // Another process wrote, cut or replaced it since this one completed it.
  for (std::uint64_t k = 0; k < f.chunks.size(); ++k)
    if (f.chunks[k].state == Chunk::State::stored) try {
        store().erase(ChunkId{f.no, k, f.chunks[k].version}.id());
      } catch (const Error&) {
        // Its record stays unused (its version is never current again).
      }
  if (f.cached >= 0) f.cached = -1;
  const std::uint64_t c = settings_.chunk_bytes;
  const std::uint64_t n = (static_cast<std::uint64_t>(now.size) + c - 1) / c;
  Held lock(f.real->mu);
  // Versions go on from where they were: nothing still written behind
  // under an old one can land over the real file's bytes.
  std::vector<Chunk> chunks(n, Chunk{Chunk::State::real, 0, 0});
  for (std::uint64_t k = 0; k < n; ++k) {
    if (k < f.chunks.size()) chunks[k].version = f.chunks[k].version;
    if (f.real->current.size() <= k) f.real->current.resize(k + 1, 0);
    chunks[k].version = std::max(chunks[k].version, f.real->current[k]);
    f.real->current[k] = ++chunks[k].version;  // a version no record has
  }
  f.chunks = std::move(chunks);
  f.size = static_cast<std::uint64_t>(now.size);
  // A file replaced (renamed over) is another inode: reopened by its path.
  if (f.real->fd >= 0) real::close(f.real->fd);
  f.real->fd = -1;
  f.settled = now;
  return true;
}

int Cache::fsync(OpenFile& of) {
  File& f = *of.file;
  try {
    {
      Held lock(f.mu);
      commit(f);
    }
    // Every record written before is durable at its real path once this returns.
    if (running()) blocking([&] { store().flush(); });
    Held lock(f.mu);
    set_real_size(f);
    {
      Held rlock(f.real->mu);
      if (f.real->fd >= 0 && real::fsync(f.real->fd) != 0) return -1;
    }
    settle(f);
    return 0;
  } catch (const std::exception& e) {
    ++errors_;
    return fail(errno_of(e));
  }
}

int Cache::ftruncate(OpenFile& of, off_t len) {
  if (len < 0) return fail(EINVAL);
  if ((of.flags & O_ACCMODE) == O_RDONLY) return fail(EINVAL);
  File& f = *of.file;
  Held lock(f.mu);
  try {
    commit(f);
    cut(f, static_cast<std::uint64_t>(len));
    set_real_size(f);
    return 0;
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

int Cache::truncate(const std::string& abs, off_t len) {
  std::shared_ptr<File> f;
  {
    Held lock(mu_);
    if (auto it = files_.find(abs); it != files_.end()) f = it->second;
  }
  if (!f) return 0;
  Held lock(f->mu);
  try {
    commit(*f);
    cut(*f, static_cast<std::uint64_t>(len));
    f->modified = false;  // the C library cut the real file
    return 0;
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

int Cache::fallocate(OpenFile& of, off_t off, off_t len) {
  File& f = *of.file;
  Held lock(f.mu);
  const std::uint64_t end = static_cast<std::uint64_t>(off) + static_cast<std::uint64_t>(len);
  if (end > f.size) {  // zeros up to there, as allocated blocks read
    f.size = end;
    changed(f);
  }
  return 0;
}

void Cache::set_flags(OpenFile& of, int flags) {
  Held lock(of.mu);
  of.flags = (of.flags & ~O_APPEND) | (flags & O_APPEND);
}

void Cache::patch(const std::string& abs, struct stat* st) {
  std::shared_ptr<File> f;
  {
    Held lock(mu_);
    if (auto it = files_.find(abs); it != files_.end()) f = it->second;
  }
  if (!f || !S_ISREG(st->st_mode)) return;
  Held lock(f->mu);
  revalidate(*f, Stamp::of(*st));
  st->st_size = static_cast<off_t>(f->size);
  st->st_blocks = std::max<blkcnt_t>(st->st_blocks, static_cast<blkcnt_t>((f->size + 511) / 512));
}

void Cache::patch(OpenFile& of, struct stat* st) {
  Held lock(of.file->mu);
  st->st_size = static_cast<off_t>(of.file->size);
  st->st_blocks = std::max<blkcnt_t>(st->st_blocks, static_cast<blkcnt_t>((of.file->size + 511) / 512));
}

void Cache::patch(const std::string& abs, struct statx* st) {
  std::shared_ptr<File> f;
  {
    Held lock(mu_);
    if (auto it = files_.find(abs); it != files_.end()) f = it->second;
  }
  if (!f || !S_ISREG(st->stx_mode)) return;
  Held lock(f->mu);
  if ((st->stx_mask & (STATX_SIZE | STATX_INO | STATX_MTIME | STATX_CTIME)) ==
      (STATX_SIZE | STATX_INO | STATX_MTIME | STATX_CTIME))
    revalidate(*f, Stamp::of(*st));
  st->stx_size = f->size;
  st->stx_blocks = std::max<std::uint64_t>(st->stx_blocks, (f->size + 511) / 512);
}

// ============================================================================
// names
// ============================================================================

void Cache::forget_file(File& f) {
  // f.mu held. Nothing of it is written behind any more, and its records go.
  {
    Held lock(f.real->mu);
    f.real->gone = true;
  }
  registry().remove(f.no);
  if (f.dirty >= 0) drop_write_buffer(f);
  f.dirty = f.cached = -1;
  for (std::uint64_t k = 0; k < f.chunks.size(); ++k)
    if (f.chunks[k].state == Chunk::State::stored) store().erase(ChunkId{f.no, k, f.chunks[k].version}.id());
  f.chunks.clear();
}

void Cache::unlinked(const std::string& abs) {
  std::vector<std::shared_ptr<File>> gone;
  {
    Held lock(mu_);
    const std::string below = abs + "/";
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == abs || it->first.compare(0, below.size(), below) == 0) {
        gone.push_back(it->second);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& f : gone) {
    Held lock(f->mu);
    f->unlinked = true;
    {
      Held rlock(f->real->mu);
      f->real->gone = true;  // nothing more is written behind to a name that is gone
    }
    if (f->opens == 0) forget_file(*f);  // else at its last close: open descriptors still read it
  }
}

void Cache::renamed(const std::string& from, const std::string& to) {
  Held lock(mu_);
  // What was at `to` is replaced: unlinked.
  if (auto it = files_.find(to); it != files_.end() && from != to) {
    std::shared_ptr<File> f = it->second;
    files_.erase(it);
    Held flock(f->mu);
    f->unlinked = true;
    {
      Held rlock(f->real->mu);
      f->real->gone = true;
    }
    if (f->opens == 0) forget_file(*f);
  }
  // The file, or everything below the folder, moves.
  const std::string below = from + "/";
  std::vector<std::pair<std::string, std::shared_ptr<File>>> moved;
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->first == from || it->first.compare(0, below.size(), below) == 0) {
      moved.emplace_back(to + it->first.substr(from.size()), it->second);
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [path, f] : moved) {
    Held flock(f->mu);
    f->path = path;
    Held rlock(f->real->mu);
    f->real->path = path;
    files_[path] = f;
  }
}

void Cache::complete(const std::string& abs) {
  std::vector<std::shared_ptr<File>> files;
  {
    Held lock(mu_);
    const std::string below = abs + "/";
    for (auto& [path, f] : files_)
      if (path == abs || path.compare(0, below.size(), below) == 0) files.push_back(f);
  }
  for (auto& f : files) {
    Held lock(f->mu);
    commit(*f);
  }
  if (!files.empty() && running()) blocking([&] { store().flush(); });
  for (auto& f : files) {
    Held lock(f->mu);
    if (f->modified) set_real_size(*f);
  }
}

void Cache::uncache(const std::string& abs) {
  std::shared_ptr<File> f;
  {
    Held lock(mu_);
    if (auto it = files_.find(abs); it != files_.end()) f = it->second;
    uncached_.insert(abs);
  }
  if (!f) return;
  {
    Held lock(f->mu);
    commit(*f);
  }
  if (running()) store().flush();
  {
    Held lock(mu_);
    for (std::size_t fd = 0; fd < fds_.size(); ++fd)
      if (fds_[fd] && fds_[fd]->file == f) {
        // The kernel's offset is the program's from now on.
        real::lseek(static_cast<int>(fd), static_cast<off_t>(fds_[fd]->offset), SEEK_SET);
        fds_[fd].reset();
        --fd_count_, --g_fds_open;
      }
    files_.erase(abs);
  }
  Held lock(f->mu);
  changed(*f);
  set_real_size(*f);
  forget_file(*f);
}

int Cache::uncache(int fd) {
  std::shared_ptr<OpenFile> of = lookup(fd);
  if (!of) return 0;
  try {
    uncache(of->file->path);
    return 0;
  } catch (const std::exception& e) {
    return fail(errno_of(e));
  }
}

// ============================================================================
// fork, exec, exit
// ============================================================================

int Cache::sync_all() noexcept {
  int err = 0;
  std::vector<std::shared_ptr<File>> files;
  {
    Held lock(mu_);
    for (auto& [path, f] : files_) files.push_back(f);
  }
  for (auto& f : files) {
    Held lock(f->mu);
    try {
      commit(*f);
    } catch (const std::exception& e) {
      err = err ? err : errno_of(e);
    }
  }
  try {
    if (running()) blocking([&] { store().flush(); });
  } catch (const std::exception& e) {
    err = err ? err : errno_of(e);
    if (first_error_.empty()) first_error_ = e.what();
  }
  for (auto& f : files) {
    Held lock(f->mu);
    try {
      if (f->modified) set_real_size(*f);
      if (!err) settle(*f);
    } catch (const std::exception& e) {
      err = err ? err : errno_of(e);
    }
  }
  Held lock(mu_);
  for (std::size_t fd = 0; fd < fds_.size(); ++fd)
    if (fds_[fd]) real::lseek(static_cast<int>(fd), static_cast<off_t>(fds_[fd]->offset), SEEK_SET);
  if (err) {
    ++errors_;
    errno = err;
    return -1;
  }
  return 0;
}

void Cache::finish() noexcept {
  Cache* c = g_cache.load(std::memory_order_acquire);
  if (!c || g_off.exchange(true) || c->pid_ != ::getpid()) return;
  const int rc = c->sync_all();
  if (rc != 0)
    std::fprintf(stderr, "mlbs-run: process %d could not make every file complete at its real path: %s%s%s\n",
                 static_cast<int>(::getpid()), std::strerror(errno), c->first_error_.empty() ? "" : ": ",
                 c->first_error_.c_str());
  if (!c->settings_.report.empty()) {
    // One line per process: mlbs-run adds them up.
    std::string line = fmt::format(
        "{{\"pid\":{},\"files\":{},\"bytes_written\":{},\"bytes_read\":{},\"blocked_s\":{:.6f},\"errors\":{}",
        ::getpid(), c->files_seen_.load(), c->bytes_written_.load(), c->bytes_read_.load(),
        double(c->blocked_ns_.load()) * 1e-9, c->errors_.load() + (rc != 0));
    if (c->running()) {
      const Stats st = c->rt_->stats();
      line += fmt::format(",\"write_wait_s\":{:.6f},\"read_wait_s\":{:.6f}", double(st.write_block_ns) * 1e-9,
                          double(st.read_block_ns) * 1e-9);
      line += ",\"tiers\":[";
      for (std::size_t t = 0; t < st.tiers.size(); ++t)
        line += fmt::format("{}{{\"kind\":\"{}\",\"bytes_in\":{},\"bytes_out\":{}}}", t ? "," : "", st.tiers[t].kind,
                            st.tiers[t].bytes_in, st.tiers[t].bytes_out);
      line += "]";
    }
    line += "}\n";
    const int fd = real::open(c->settings_.report.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      real::write(fd, line.data(), line.size());
      real::close(fd);
    }
  }
  try {
    c->store_.reset();
    c->rt_.reset();  // drains and stops the helpers
    // One trace per process: mlbs-run merges them.
    if (!c->settings_.trace.empty() && c->files_seen_)
      trace::write_chrome_json(fmt::format("{}.{}", c->settings_.trace, ::getpid()));
  } catch (...) {
  }
  stop_watching();
}

}  // namespace mlbs::intercept
