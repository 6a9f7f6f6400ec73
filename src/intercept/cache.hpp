// mlbs — transparent mode's cache of a program's files (docs/transparent.md).
//
// Every regular file the program opens under the intercepted folder is
// cut into chunks of Settings::chunk_bytes; the chunks the program writes
// become records of one persistent store, whose last tier is the folder
// itself (the files tier: a record is written behind to its byte range of
// the real file, src/intercept/files_tier.cpp) and whose faster tiers are the
// ones mlbs-run was given. Reads are served from the fastest tier holding a
// chunk and prefetched in the order the program's files were created (or
// its reverse); what the cache never held is read from the real file.
//
// The program sees a file system: write() copies into the chunk being
// written (one per file, committed as a record when the program moves to
// another chunk, syncs, truncates or closes); read() sees its own writes;
// stat() reports the size the program made; fsync() returns once the file is
// durable at its real path; and at exit, exec, fork, and on signals whose
// default action ends the process, every file is made complete there.
//
// Threads: every member function may be called from any thread. Locks, in
// this order only: the tables (Cache::mu_), a file (File::mu), its real
// file (RealFile::mu); the engine's own lock is below them all.
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "intercept/paths.hpp"
#include "intercept/real_file.hpp"
#include "intercept/settings.hpp"
#include "mlbs/detail/block.hpp"

namespace mlbs {
class Runtime;
namespace detail {
class StoreCore;
}
}  // namespace mlbs

namespace mlbs::intercept {

/// One chunk of a file: never written (zeros), only in the real file (it
/// was there before), or a record of the store.
struct Chunk {
  enum class State : std::uint8_t { hole, real, stored };
  State state = State::hole;
  std::uint16_t version = 0;  ///< of its record (stored)
  std::uint64_t bytes = 0;    ///< its record's size (stored)
};

/// The real file as seen by stat(): another process changed it when this
/// differs from what this process left (close-to-open consistency).
struct Stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {}, ctime {};
  static Stamp of(const struct stat& st) noexcept {
    return {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
  }
  static Stamp of(const struct statx& st) noexcept {
    return {makedev(st.stx_dev_major, st.stx_dev_minor), st.stx_ino, static_cast<off_t>(st.stx_size),
            {st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec}, {st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec}};
  }
  bool operator==(const Stamp& o) const noexcept {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

/// One intercepted file, shared by the descriptors open on it.
struct File {
  std::mutex mu;
  std::uint64_t no = 0;            ///< its number in record ids (ChunkId)
  std::uint64_t created = 0;       ///< order of first sight (learning the read order)
  std::string path;
  std::uint64_t size = 0;          ///< the size the program made
  std::vector<Chunk> chunks;
  std::int64_t dirty = -1;         ///< the chunk being written, in `buf` (-1: none)
  detail::Block buf;
  bool buf_lent = false;           ///< `buf` is a DRAM slot the engine lent (StoreCore::lend_slot)
  std::uint64_t buf_len = 0;       ///< bytes of that chunk so far
  std::int64_t cached = -1;        ///< the chunk last read, in `rbuf`
  std::int64_t peeked = -1;        ///< the chunk read last in small pieces straight from its record
  unsigned peeks = 0;              ///< how many (past kPeeks, it is read into `rbuf`)
  detail::Block rbuf;
  std::uint64_t rbuf_len = 0;
  bool modified = false;           ///< changed by this process since its real size was last set
  /// The real file as this process last completed it (fsync, fork, exec...);
  /// none while it has changes of its own. An open or stat() with no
  /// descriptor open on it that finds the real file otherwise takes the real
  /// file's content from then on: another process changed it.
  std::optional<Stamp> settled;
  bool unlinked = false;           ///< its name is gone; the last close forgets it
  bool read_once = false;          ///< the program has read it (learning the read order)
  unsigned opens = 0;              ///< open file descriptions on it
  unsigned writers = 0;            ///< of them open for writing: while any is, this process holds the writer lock
  std::shared_ptr<RealFile> real;
};

/// An open file description: what open() made, shared by dup()s of it.
struct OpenFile {
  std::shared_ptr<File> file;
  std::mutex mu;                   ///< the offset
  std::uint64_t offset = 0;
  int flags = 0;                   ///< O_ACCMODE, O_APPEND
  unsigned fds = 0;                ///< descriptors on it (under Cache::mu_)
};

/// Cache locks this thread holds or is taking. A signal handler that ends the
/// process (_exit(), exit()) on a thread inside the cache cannot complete the
/// files: the locks it interrupted would never be released.
inline thread_local int t_held = 0;

/// std::lock_guard that counts itself in t_held (counted before the lock is
/// taken and after it is released, so a handler never misses it).
template <class M>
class Held {
  struct Count {
    Count() noexcept { ++t_held; }
    ~Count() { --t_held; }
  } count_;
  std::lock_guard<M> lock_;

 public:
  explicit Held(M& m) : lock_(m) {}
};

/// The signal watcher (lifecycle.cpp): started when the cache is, stopped at exit.
void watch_signals();
void stop_watching();

class Cache {
  static inline std::atomic<int> g_fds_open{0};  ///< descriptors intercepted, in every cache (fork)

 public:
  /// The process's cache; null when mlbs-run did not ask for one, when its
  /// settings are wrong (said once on stderr), in a forked child, and after exit began.
  static Cache* get() noexcept;
  /// The wrappers' test of a path (absolute, normalised).
  bool intercepts(const std::string& abs) const { return settings_.folder.inside(abs) && !uncached(abs); }
  /// Some descriptor is intercepted (a cheap test before the table).
  bool any_fd() const noexcept { return fd_count_.load(std::memory_order_relaxed) > 0; }
  static bool fds_open() noexcept { return g_fds_open.load(std::memory_order_relaxed) > 0; }
  /// A cheap first test of a path the program gave (AT_FDCWD): false when it
  /// cannot be intercepted.
  bool may_intercept(const char* path) const;
  /// chdir() / fchdir() succeeded: relative paths resolve from here now.
  void changed_directory();
  std::shared_ptr<OpenFile> lookup(int fd) const;

  // What the wrappers hand over. Each returns what the call returns, or -1
  // with errno set, as the C library does.
  /// `fd`: opened by the C library on `abs` with `flags`; the cache takes it
  /// when it is a regular file (O_TRUNC already cut the real one).
  /// The program opened `abs` as `fd`: cache it. 0, or EBUSY when another
  /// process under mlbs-run writes the file (the caller closes `fd` and fails).
  int opened(int fd, const std::string& abs, int flags);
  int close(int fd);
  int dup_to(int fd, int newfd);  ///< newfd refers to what fd does (after the C library made it)
  ssize_t read(OpenFile& of, void* buf, std::size_t n);
  ssize_t write(OpenFile& of, const void* buf, std::size_t n);
  ssize_t pread(OpenFile& of, void* buf, std::size_t n, off_t off);
  ssize_t pwrite(OpenFile& of, const void* buf, std::size_t n, off_t off);
  ssize_t readv(OpenFile& of, const struct iovec* iov, int n, std::optional<off_t> off);
  ssize_t writev(OpenFile& of, const struct iovec* iov, int n, std::optional<off_t> off);
  off_t lseek(OpenFile& of, off_t off, int whence);
  int fsync(OpenFile& of);
  int ftruncate(OpenFile& of, off_t len);
  int truncate(const std::string& abs, off_t len);  ///< after the C library cut the real file
  void set_flags(OpenFile& of, int flags);          ///< fcntl(F_SETFL)
  /// stat() of `abs`, fstat() of an open file: the size the program made.
  void patch(const std::string& abs, struct stat* st);
  void patch(OpenFile& of, struct stat* st);
  void patch(const std::string& abs, struct statx* st);
  /// After the C library unlinked / renamed them.
  void unlinked(const std::string& abs);
  void renamed(const std::string& from, const std::string& to);
  int fallocate(OpenFile& of, off_t off, off_t len);
  /// The file at `abs`, or every file below that folder, complete at its
  /// real path (before a rename takes it out of the folder). Throws.
  void complete(const std::string& abs);
  /// mmap() or freopen() of a cached file: it is made complete at its real
  /// path and left uncached from then on (its descriptors become plain ones).
  int uncache(int fd);
  void uncache(const std::string& abs);
  /// Every file complete at its real path, and the descriptors' offsets set
  /// in the kernel: before fork and exec, and at exit. 0 or -1 with errno.
  int sync_all() noexcept;
  /// In a forked child: no cache (the helpers stayed in the parent).
  static void disable() noexcept;
  /// At exit: sync_all(), the summary, the runtime stopped.
  static void finish() noexcept;

 private:
  explicit Cache(Settings s);
  ~Cache();
  bool uncached(const std::string& abs) const;
  detail::StoreCore& store();  ///< made on first use (the runtime and its helpers too)
  std::shared_ptr<File> file_at(const std::string& abs, int flags, const struct stat& st);
  void forget_file(File& f);  ///< its records erased, nothing more written behind (f.mu held)
  // With f.mu held:
  ssize_t read_at(File& f, std::byte* out, std::size_t n, std::uint64_t off);
  ssize_t write_at(File& f, const std::byte* in, std::size_t n, std::uint64_t off);
  void stage(File& f, std::uint64_t k, std::uint64_t from, std::uint64_t to);
  void commit(File& f);
  void cut(File& f, std::uint64_t len);
  void set_real_size(File& f);
  void changed(File& f);  ///< the program changed it: its real size is due, its stamp gone
  /// Stamps the real file as complete now (f.real->mu not held).
  void settle(File& f);
  /// `now` is the real file now: when another process changed it since this
  /// one completed it, and no descriptor is open on it here, the cached
  /// content goes and the real file's is read from then on. True if so.
  bool revalidate(File& f, const Stamp& now);
  void load_stored(File& f, std::uint64_t k, std::byte* into, std::uint64_t bytes);
  void note_read(File& f);
  detail::Block take_buffer();
  void give_buffer(detail::Block b);
  void take_write_buffer(File& f);  ///< `f.buf` for a chunk about to be written (f.mu held)
  void drop_write_buffer(File& f);  ///< `f.buf` back where it came from (f.mu held)
  template <class F>
  auto blocking(F&& call);

  Settings settings_;
  pid_t pid_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<File>> files_;  ///< by path
  std::set<std::string> uncached_;                      ///< mapped or reopened: never cached again
  std::vector<std::shared_ptr<OpenFile>> fds_;          ///< by descriptor
  std::atomic<int> fd_count_{0};
  mutable std::mutex cwd_mu_;
  std::string cwd_;  ///< the working directory (chdir() and fchdir() keep it)
  std::uint64_t next_no_ = 1;
  std::vector<detail::Block> spare_;                    ///< chunk buffers for reuse (first touch is slow)
  static constexpr std::size_t kSpareBuffers = 8;
  /// Reads of a stored chunk at least this large go straight from its record
  /// (no copy of the whole chunk into the read buffer first)...
  static constexpr std::size_t kDirectRead = 256 << 10;
  /// ...and so do this many smaller ones per chunk (a header, a footer).
  static constexpr unsigned kPeeks = 4;

  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  std::once_flag started_;
  std::atomic<bool> running_{false};  ///< store() has made the runtime
  std::unique_ptr<Runtime> rt_;
  std::unique_ptr<detail::StoreCore> store_;
  std::atomic<bool> learnt_{false};
  std::mutex order_mu_;
  std::vector<std::uint64_t> read_order_;  ///< creation order of the first files read

  // What the summary reports.
  std::atomic<std::uint64_t> files_seen_{0}, bytes_written_{0}, bytes_read_{0}, blocked_ns_{0}, errors_{0};
  std::string first_error_;
};

}  // namespace mlbs::intercept
