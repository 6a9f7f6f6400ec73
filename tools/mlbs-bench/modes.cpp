#include "modes.hpp"

#include "insitu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <set>
#include <memory>
#include <stdexcept>
#include <system_error>

#include <mlbs/mlbs.hpp>

#include "pacer.hpp"
#ifdef MLBS_BENCH_HAVE_ADIOS2
#include "adios2_mode.hpp"
#endif

namespace mlbs_bench {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double ns_to_s(std::uint64_t ns) { return double(ns) * 1e-9; }

}  // namespace

const std::vector<std::string>& known_modes() {
  static const std::vector<std::string> modes = {"mlbs",      "sync",    "sync-fast", "writebehind",
                                                 "pagecache", "odirect", "adios2",    "reader"};
  return modes;
}

std::string describe_mode(const std::string& mode) {
  if (mode == "mlbs") return "the library: --dram, [--fast], --slow tiers, schedule = the workload's read order";
  if (mode == "sync")
    return "reference: write + fdatasync to --slow, pages dropped (FADV_DONTNEED), read back cold; always run first";
  if (mode == "sync-fast")
    return "the same as sync on the --fast dir up to its quota, the rest on --slow (the burst-buffer baseline)";
  if (mode == "writebehind")
    return "asynchronous write-behind to --slow with the same DRAM budget, no prefetching: the library with "
           "Schedule::unknown() (LRU, reads on demand) and only [DRAM, slow] tiers";
  if (mode == "pagecache")
    return "buffered write/read emulating a page cache of --dram bytes: older snapshots beyond the budget are "
           "fdatasync'ed + dropped, WILLNEED read-ahead of the next snapshot";
  if (mode == "odirect")
    return "plain O_DIRECT sequential writer/reader of --slow on the application thread (pwrite/pread of "
           "io_chunk_bytes, fdatasync per snapshot when persistent): the baseline of the data-path figures";
  if (mode == "adios2")
    return "ADIOS2's BP5 engine with AsyncWrite (its own thread writes each step behind) to --slow, one step per "
           "snapshot, read back by random access after the file is synced and dropped from the page cache"
#ifndef MLBS_BENCH_HAVE_ADIOS2
           " (not built)"
#endif
        ;
  if (mode == "reader")
    return "mlbs as above, plus a second process reading every snapshot as it becomes readable "
           "(mlbs::Reader, in-transit analysis; --workload insitu)";
  return "";
}

std::string mode_unavailable(const std::string& mode, const Options& o) {
#ifndef MLBS_BENCH_HAVE_ADIOS2
  if (mode == "adios2") return "not built";
#endif
  if (mode == "sync-fast" && !o.fast) return "needs --fast";
  if (mode == "reader" && o.layout == mlbs::Layout::log) return "readers read file-per-record tiers, not --layout log";
  if (mode == "reader" && o.slow_kind != "directory") return "readers read directory tiers";
  return "";
}

namespace {

// --- plain file I/O for the baselines ----------------------------------------------

[[noreturn]] void fail(int err, const std::string& what, const fs::path& path) {
  throw std::system_error(err, std::generic_category(), what + " " + path.string());
}

class Fd {
 public:
  Fd(const fs::path& path, int flags) : path_(path) {
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(errno, "cannot open", path);
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  void write_all(const std::byte* p, std::size_t n, std::uint64_t off) {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, off_t(off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(w < 0 ? errno : EIO, "cannot write", path_);
      p += w;
      off += std::uint64_t(w);
      n -= std::size_t(w);
    }
  }
  void read_all(std::byte* p, std::size_t n, std::uint64_t off) {
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, off_t(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) fail(r < 0 ? errno : EIO, "cannot read", path_);
      p += r;
      off += std::uint64_t(r);
      n -= std::size_t(r);
    }
  }
  /// Reads up to `n` bytes at `off`, stopping at the end of the file; returns
  /// the bytes read. O_DIRECT: `p`, `n` and `off` aligned; a short read is
  /// taken as the end of the file (an O_DIRECT read cannot go on unaligned).
  std::size_t read_upto(std::byte* p, std::size_t n, std::uint64_t off) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, p + got, n - got, off_t(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(errno, "cannot read", path_);
      if (r == 0) break;
      got += std::size_t(r);
      if (got % 4096 != 0) break;
    }
    return got;
  }
  void truncate(std::uint64_t size) {
    if (::ftruncate(fd_, off_t(size)) != 0) fail(errno, "cannot truncate", path_);
  }
  /// The whole `n` bytes from offset 0, in transfers of at most `chunk` (the baselines' I/O size).
  void write_chunks(const std::byte* p, std::uint64_t n, std::uint64_t chunk) {
    for (std::uint64_t off = 0; off < n; off += chunk) write_all(p + off, std::size_t(std::min(chunk, n - off)), off);
  }
  void read_chunks(std::byte* p, std::uint64_t n, std::uint64_t chunk) {
    for (std::uint64_t off = 0; off < n; off += chunk) read_all(p + off, std::size_t(std::min(chunk, n - off)), off);
  }
  void datasync() {
    if (::fdatasync(fd_) != 0) fail(errno, "fdatasync failed on", path_);
  }
  void advise(int advice) {
    if (int err = ::posix_fadvise(fd_, 0, 0, advice); err != 0) fail(err, "posix_fadvise failed on", path_);
  }
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(errno, "cannot close", path_);
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

void sync_dir(const fs::path& dir) {
  Fd d(dir, O_RDONLY | O_DIRECTORY);
  d.datasync();
}

/// The working buffer of a baseline: page-aligned floats.
class Buffer {
 public:
  explicit Buffer(std::uint64_t bytes)
      : bytes_(bytes), p_(static_cast<std::byte*>(std::aligned_alloc(4096, padded(bytes)))) {
    if (!p_) throw std::bad_alloc();
    // Only the padding (O_DIRECT writes whole blocks): the workload's first
    // step touches the rest, as it does mlbs's buffer (workloads.cpp, "alloc").
    std::memset(p_ + bytes_, 0, padded(bytes_) - bytes_);
  }
  /// The allocation: `bytes` rounded up to whole 4096-byte blocks.
  static std::uint64_t padded(std::uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; }
  ~Buffer() { std::free(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* bytes() { return p_; }
  float* floats() { return reinterpret_cast<float*>(p_); }

 private:
  std::uint64_t bytes_;
  std::byte* p_;
};

fs::path snapshot_path(const fs::path& dir, std::uint64_t id) {
  return dir / ("snapshot-" + std::to_string(id) + ".bin");
}

// --- mlbs and writebehind ----------------------------------------------------------

class MlbsMode final : public Mode {
 public:
  MlbsMode(const Plan& plan, const Options& o, const RunDirs& dirs, bool writebehind)
      : points_(plan.dims.points()) {
    const mlbs::Config cfg = mlbs_config(plan, o, dirs, writebehind);
    names_ = {"mem"};
    if (cfg.tiers.size() == 3) names_.push_back("fast");
    names_.push_back("slow");
    lossy_ = !writebehind && o.lossy();
    rt_ = std::make_unique<mlbs::Runtime>(cfg);   // under MPI: collective over MPI_COMM_WORLD
    // The grid's layout, x fastest, for ZFP (--codec-layout).
    mlbs::StoreOptions options;
    if (o.codec_layout != Options::CodecLayout::flat) options.plane_nx = static_cast<std::uint32_t>(plan.dims.nx);
    if (o.codec_layout == Options::CodecLayout::planes) options.plane_ny = static_cast<std::uint32_t>(plan.dims.ny);
    store_ = std::make_unique<mlbs::Store<float>>(*rt_, kSnapshotStore, options, points_);
    layout_ = options.plane_ny ? "planes" : options.plane_nx ? "rows" : "flat";
  }

  float* buffer() override { return store_->data(); }
  void write(std::uint64_t id) override { store_->write(id); }
  void read(std::uint64_t id) override {
    store_->read(id);
    if (store_->size() != points_)
      throw std::runtime_error("snapshot " + std::to_string(id) + " came back with " +
                               std::to_string(store_->size()) + " floats, expected " + std::to_string(points_));
  }
  void finish() override { store_->flush(); }
  bool lossy() const override { return lossy_; }

  ModeStats stats() const override {
    const mlbs::Stats st = rt_->stats();
    const mlbs::Config& cfg = rt_->config();
    ModeStats m;
    m.write_block_s = ns_to_s(st.write_block_ns);
    m.read_block_s = ns_to_s(st.read_block_ns);
    m.copy_s = ns_to_s(st.copy_ns);
    m.copy_hash_s = ns_to_s(st.copy_hash_ns);
    for (std::size_t i = 0; i < st.tiers.size(); ++i) {
      const mlbs::TierStats& t = st.tiers[i];
      TierReport r;
      r.name = i < names_.size() ? names_[i] : "tier" + std::to_string(i);
      r.kind = t.kind;
      r.path = t.path;
      r.io_backend = i == 0 ? "memory" : t.io_backend;
      if (!t.io_fallback.empty()) r.io_backend += " (" + t.io_fallback + ")";
      r.capacity_bytes = t.capacity_bytes;
      r.bandwidth_cap_bytes_per_s = i < cfg.tiers.size() ? cfg.tiers[i].bandwidth_bytes_per_s : 0;
      r.bytes_in = t.bytes_in;
      r.bytes_out = t.bytes_out;
      if (t.raw_bytes_in != t.bytes_in || t.raw_bytes_out != t.bytes_out) {  // a codec's frames
        r.raw_bytes_in = t.raw_bytes_in;
        r.raw_bytes_out = t.raw_bytes_out;
      }
      r.peak_used_bytes = t.peak_used_bytes;
      r.stalls = t.stalls;
      r.busy_s = ns_to_s(t.busy_ns);
      m.tiers.push_back(std::move(r));
    }
    m.extra = {{"schedule", mlbs::to_string(cfg.schedule.kind)},
               {"helper_threads", cfg.helper_threads},
               {"helper_cores", st.helper_cores},
               {"writes", st.writes},
               {"reads", st.reads},
               {"write_stalls", st.write_stalls},
               {"read_stalls", st.read_stalls},
               {"prefetches", st.prefetches},
               {"demand_fetches", st.demand_fetches},
               {"writebacks", st.writebacks},
               {"cancelled_copies", st.cancelled_copies},
               {"buffer_swaps", st.buffer_swaps},
               {"direct_reads", st.direct_reads},
               {"checksum_failures", st.checksum_failures},
               {"helper_cpu_s", ns_to_s(st.helper_cpu_ns)},
               {"retention_copies", st.retention_copies},
               {"retention_moves", st.retention_moves},
               {"retention_bytes", st.retention_bytes},
               {"codec", cfg.codec},
               {"codec_when", mlbs::to_string(cfg.codec_when)},
               {"codec_layout", layout_},
               {"encoded_records", st.encoded_records},
               {"encoded_raw_bytes", st.encoded_raw_bytes},
               {"encoded_bytes", st.encoded_bytes},
               {"raw_records", st.raw_records},
               {"bypassed_records", st.bypassed_records},
               {"unneeded_records", st.unneeded_records},
               {"encode_s", ns_to_s(st.encode_ns)},
               {"decode_s", ns_to_s(st.decode_ns)}};
    return m;
  }

 private:
  std::size_t points_;
  bool lossy_ = false;
  std::string layout_;
  std::vector<std::string> names_;
  std::unique_ptr<mlbs::Runtime> rt_;               // destroyed after the store
  std::unique_ptr<mlbs::Store<float>> store_;
};

// --- sync and sync-fast ------------------------------------------------------------

/// A directory the synchronous baselines write to: its folder, quota (the
/// burst buffer's capacity; 0 = unlimited) and bandwidth cap.
struct SyncDevice {
  fs::path dir;
  std::string name;
  std::uint64_t quota_bytes = 0;
  std::uint64_t bandwidth_bytes_per_s = 0;
};

/// Synchronous I/O: each write is written, fdatasync'ed and dropped from the
/// page cache before write() returns; each read is cold. Snapshots go to the
/// first device with room (sync-fast: the fast folder up to its quota, then
/// the slow one, as a user with a burst buffer of that size would have to).
class SyncMode final : public Mode {
 public:
  SyncMode(const Plan& plan, const Options& o, const std::vector<SyncDevice>& devices)
      : bytes_(plan.snapshot_bytes()), chunk_(o.io_chunk_bytes), persistent_(o.durability == mlbs::Durability::persistent),
        buf_(bytes_) {
    for (const SyncDevice& d : devices) {
      Device& dev = devs_.emplace_back(d);
      dev.report.name = d.name;
      dev.report.kind = "directory";
      dev.report.path = d.dir.string();
      dev.report.io_backend = "write+fdatasync, read cold";
      dev.report.capacity_bytes = d.quota_bytes;
      dev.report.bandwidth_cap_bytes_per_s = d.bandwidth_bytes_per_s;
    }
  }

  float* buffer() override { return buf_.floats(); }

  void write(std::uint64_t id) override {
    mlbs::trace::Scope scope("write", "write_block");
    const auto t0 = Clock::now();
    Device& dev = device_with_room();
    // The capped device moves the snapshot from now on: the write completes
    // when both the real transfer (write + fdatasync) and the cap are done.
    const auto done = dev.pacer.reserve(bytes_);
    Fd f(snapshot_path(dev.spec.dir, id), O_WRONLY | O_CREAT | O_TRUNC);
    f.write_chunks(buf_.bytes(), bytes_, chunk_);
    f.datasync();
    f.advise(POSIX_FADV_DONTNEED);   // read back cold
    f.close();
    Pacer::wait_until(done);
    const double dt = seconds(Clock::now() - t0);
    write_block_s_ += dt;
    dev.report.busy_s += dt;
    dev.report.bytes_in += bytes_;
    dev.held += bytes_;
    dev.report.peak_used_bytes = std::max(dev.report.peak_used_bytes, dev.held);
    where_[id] = std::size_t(&dev - devs_.data());
  }

  void read(std::uint64_t id) override {
    mlbs::trace::Scope scope("read", "read_block");
    const auto t0 = Clock::now();
    auto at = where_.find(id);
    if (at == where_.end()) throw std::runtime_error("sync: snapshot " + std::to_string(id) + " was never written");
    Device& dev = devs_[at->second];
    const fs::path path = snapshot_path(dev.spec.dir, id);
    {
      const auto done = dev.pacer.reserve(bytes_);
      Fd f(path, O_RDONLY);
      f.read_chunks(buf_.bytes(), bytes_, chunk_);
      f.close();
      Pacer::wait_until(done);
    }
    if (!persistent_) {
      if (::unlink(path.c_str()) != 0) fail(errno, "cannot remove", path);
      dev.held -= bytes_;
      where_.erase(at);
    }
    const double dt = seconds(Clock::now() - t0);
    read_block_s_ += dt;
    dev.report.busy_s += dt;
    dev.report.bytes_out += bytes_;
  }

  void finish() override {
    if (persistent_)
      for (const Device& d : devs_) sync_dir(d.spec.dir);
  }

  ModeStats stats() const override {
    ModeStats m;
    m.write_block_s = write_block_s_;
    m.read_block_s = read_block_s_;
    for (const Device& d : devs_) m.tiers.push_back(d.report);
    m.extra = {{"fdatasync", true}, {"fadvise", "DONTNEED after every write"}};
    if (devs_.size() > 1) m.extra["spilled"] = devs_.back().report.bytes_in / std::max<std::uint64_t>(1, bytes_);
    return m;
  }

 private:
  struct Device {
    explicit Device(const SyncDevice& d) : spec(d), pacer(d.bandwidth_bytes_per_s) {}
    SyncDevice spec;
    Pacer pacer;
    TierReport report;
    std::uint64_t held = 0;
  };

  Device& device_with_room() {
    for (Device& d : devs_)
      if (d.spec.quota_bytes == 0 || d.held + bytes_ <= d.spec.quota_bytes) return d;
    return devs_.back();   // the last device is unlimited (the slow tier)
  }

  std::uint64_t bytes_, chunk_;
  bool persistent_;
  Buffer buf_;
  std::vector<Device> devs_;
  std::map<std::uint64_t, std::size_t> where_;   ///< snapshot id -> index in devs_
  double write_block_s_ = 0, read_block_s_ = 0;
};

// --- pagecache ---------------------------------------------------------------------

/// Buffered I/O through the real page cache, held to the DRAM budget by hand:
/// snapshots are cached (LRU) while their bytes fit --dram; beyond that the
/// least recently used one is fdatasync'ed (dirty) and dropped (DONTNEED).
/// Before each read the next snapshot in the read order gets WILLNEED
/// read-ahead, after making room for it the same way. With a bandwidth cap,
/// the emulated device writes dirty data back in the background from the
/// moment it is written (the most favourable page cache) and serves
/// read-ahead in the background; the application waits only for what it
/// needs: an fdatasync of an evicted snapshot, a read not yet complete.
class PageCacheMode final : public Mode {
 public:
  PageCacheMode(const Plan& plan, const Options& o, fs::path dir)
      : bytes_(plan.snapshot_bytes()), chunk_(o.io_chunk_bytes), budget_(o.dram_bytes),
        persistent_(o.durability == mlbs::Durability::persistent), read_order_(plan.read_order),
        dir_(std::move(dir)), buf_(bytes_), pacer_(o.slow.bandwidth_bytes_per_s) {
    mem_.name = "mem";
    mem_.kind = "pagecache";
    mem_.capacity_bytes = budget_;
    mem_.io_backend = "page cache";
    dev_.name = "slow";
    dev_.kind = "directory";
    dev_.path = dir_.string();
    dev_.io_backend = "buffered, page cache held to --dram";
    dev_.bandwidth_cap_bytes_per_s = o.slow.bandwidth_bytes_per_s;
  }

  float* buffer() override { return buf_.floats(); }

  void write(std::uint64_t id) override {
    make_room(bytes_, id);   // the new pages must fit the budget too
    {
      mlbs::trace::Scope scope("write", "copy");   // a buffered write is a copy into the cache
      const auto t0 = Clock::now();
      Fd f(snapshot_path(dir_, id), O_WRONLY | O_CREAT | O_TRUNC);
      f.write_chunks(buf_.bytes(), bytes_, chunk_);
      f.close();
      copy_s_ += seconds(Clock::now() - t0);
    }
    Entry& e = files_[id];
    e = Entry{};
    e.cached = e.dirty = true;
    e.done = pacer_.reserve(bytes_);     // background write-back at the device's rate
    dev_.busy_s += pacer_.cost_s(bytes_);
    dev_.bytes_in += bytes_;
    mem_.bytes_in += bytes_;
    cache(id);
  }

  void read(std::uint64_t id) override {
    auto it = files_.find(id);
    if (it == files_.end()) throw std::runtime_error("pagecache: snapshot " + std::to_string(id) + " was never written");
    Entry& e = it->second;
    {
      mlbs::trace::Scope scope("read", "read_block");
      const auto t0 = Clock::now();
      const bool cold = !e.cached;
      const auto done = cold ? pacer_.reserve(bytes_) : Pacer::Clock::time_point{};
      Fd f(snapshot_path(dir_, id), O_RDONLY);
      f.read_chunks(buf_.bytes(), bytes_, chunk_);
      const double io_s = seconds(Clock::now() - t0);
      if (cold) {
        Pacer::wait_until(done);            // a synchronous read from the device
        dev_.busy_s += pacer_.cost_s(bytes_);
        ++cold_reads_;
      } else if (e.ahead) {
        Pacer::wait_until(e.done);          // read-ahead still in flight at the capped rate
        ++readahead_hits_;
      } else {
        ++cache_hits_;
      }
      if (cold || e.ahead) {
        dev_.bytes_out += bytes_;
        dev_.busy_s += io_s;                // the part of the device's work we can observe
      }
      mem_.bytes_out += bytes_;
      f.advise(POSIX_FADV_DONTNEED);        // consumed: the application holds it now
      f.close();
      read_block_s_ += seconds(Clock::now() - t0);
    }
    uncache(id);
    if (!persistent_) {   // persistent: the file stays; if still dirty, finish() syncs it
      const fs::path path = snapshot_path(dir_, id);
      if (::unlink(path.c_str()) != 0) fail(errno, "cannot remove", path);
      files_.erase(it);
    }
    ++reads_;
    read_ahead();
  }

  void finish() override {
    mlbs::trace::Scope scope("drain", "write_block");
    const auto t0 = Clock::now();
    for (auto& [id, e] : files_)
      if (e.dirty) writeback(id, e);
    if (persistent_) sync_dir(dir_);
    write_block_s_ += seconds(Clock::now() - t0);
  }

  ModeStats stats() const override {
    ModeStats m;
    m.write_block_s = write_block_s_;
    m.read_block_s = read_block_s_;
    m.copy_s = copy_s_;
    TierReport mem = mem_;
    mem.peak_used_bytes = peak_cached_;
    m.tiers = {mem, dev_};
    m.extra = {{"evictions", evictions_},
               {"readaheads", readaheads_},
               {"readahead_hits", readahead_hits_},
               {"cache_hits", cache_hits_},
               {"cold_reads", cold_reads_}};
    return m;
  }

 private:
  struct Entry {
    bool cached = false;   ///< pages in the cache (counted against the budget)
    bool dirty = false;    ///< not yet known to be on the device
    bool ahead = false;    ///< cached by read-ahead
    Pacer::Clock::time_point done{};   ///< when the emulated device finishes its transfer
  };

  void cache(std::uint64_t id) {
    lru_.push_back(id);
    cached_bytes_ += bytes_;
    peak_cached_ = std::max(peak_cached_, cached_bytes_);
  }
  void uncache(std::uint64_t id) {
    Entry& e = files_.at(id);
    if (!e.cached) return;
    lru_.remove(id);
    cached_bytes_ -= bytes_;
    e.cached = e.ahead = false;
  }

  /// fdatasync + wait for the emulated device: the application blocks here.
  /// Device busy time: the pacer's cost per transfer (counted when scheduled)
  /// plus the real time of the transfers we can observe (fdatasync, reads
  /// that touch the device), so capped and uncapped runs both count.
  void writeback(std::uint64_t id, Entry& e) {
    const auto t0 = Clock::now();
    Fd f(snapshot_path(dir_, id), O_RDONLY);
    f.datasync();
    f.close();
    dev_.busy_s += seconds(Clock::now() - t0);
    Pacer::wait_until(e.done);
    e.dirty = false;
  }

  /// Evicts least recently used snapshots (never `keep`) until `extra` more bytes fit.
  void make_room(std::uint64_t extra, std::uint64_t keep) {
    while (cached_bytes_ + extra > budget_) {
      auto victim = std::find_if(lru_.begin(), lru_.end(), [&](std::uint64_t v) { return v != keep; });
      if (victim == lru_.end()) return;
      const std::uint64_t id = *victim;
      Entry& e = files_.at(id);
      const bool dirty = e.dirty;
      mlbs::trace::Scope scope("evict", dirty ? "write_block" : "copy");
      const auto t0 = Clock::now();
      if (dirty) writeback(id, e);
      {
        Fd f(snapshot_path(dir_, id), O_RDONLY);
        f.advise(POSIX_FADV_DONTNEED);
        f.close();
      }
      uncache(id);
      ++evictions_;
      write_block_s_ += seconds(Clock::now() - t0);
    }
  }

  /// WILLNEED for the next snapshot in the read order, if written and not cached.
  void read_ahead() {
    if (reads_ >= read_order_.size()) return;
    const std::uint64_t next = read_order_[reads_];
    auto it = files_.find(next);
    if (it == files_.end() || it->second.cached) return;
    make_room(bytes_, next);
    Entry& e = it->second;
    Fd f(snapshot_path(dir_, next), O_RDONLY);
    f.advise(POSIX_FADV_WILLNEED);
    f.close();
    e.ahead = true;
    e.cached = true;
    e.done = pacer_.reserve(bytes_);
    dev_.busy_s += pacer_.cost_s(bytes_);
    cache(next);
    ++readaheads_;
  }

  std::uint64_t bytes_, chunk_, budget_;
  bool persistent_;
  std::vector<std::uint64_t> read_order_;
  fs::path dir_;
  Buffer buf_;
  Pacer pacer_;
  std::map<std::uint64_t, Entry> files_;   ///< written, not yet consumed (scratch) / all (persistent)
  std::list<std::uint64_t> lru_;           ///< cached ids, least recently used first
  std::uint64_t cached_bytes_ = 0, peak_cached_ = 0;
  std::size_t reads_ = 0;
  std::uint64_t evictions_ = 0, readaheads_ = 0, readahead_hits_ = 0, cache_hits_ = 0, cold_reads_ = 0;
  TierReport mem_, dev_;
  double write_block_s_ = 0, read_block_s_ = 0, copy_s_ = 0;
};

// --- odirect -----------------------------------------------------------------------

/// Can `dir` take O_DIRECT writes of 4096-byte blocks? Empty if so, else why not.
std::string odirect_refused(const fs::path& dir) {
  const fs::path probe = dir / ".odirect-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return std::string("O_DIRECT refused: ") + std::strerror(errno);
  Buffer block(4096);
  const ssize_t w = ::pwrite(fd, block.bytes(), 4096, 0);
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (w != 4096) return std::string("O_DIRECT write refused: ") + std::strerror(w < 0 ? err : EIO);
  return "";
}

/// The plain O_DIRECT sequential writer and reader the data-path figures
/// compare mlbs's helpers with: the application thread writes each snapshot
/// to its own file with O_DIRECT, in `io_chunk_bytes` pwrites (rounded down
/// to whole 4096-byte blocks) from the page-aligned working buffer, the last
/// block zero-padded and the file cut back to the snapshot's size; at
/// persistent durability each snapshot is fdatasync'ed before write()
/// returns (mlbs commits every record the same way). Reads are O_DIRECT
/// preads of the same chunks, cold by construction (no page cache). A cap
/// paces each whole transfer by the Pacer rule (reserve at start, wait
/// after). Where the file system refuses O_DIRECT (tmpfs, some FUSE), it says
/// so in io_backend and falls back to sync's buffered write + fdatasync +
/// DONTNEED, so that the page cache still helps nobody.
class ODirectMode final : public Mode {
 public:
  ODirectMode(const Plan& plan, const Options& o, fs::path dir)
      : bytes_(plan.snapshot_bytes()), padded_(Buffer::padded(bytes_)),
        chunk_(std::max<std::uint64_t>(4096, o.io_chunk_bytes / 4096 * 4096)),
        persistent_(o.durability == mlbs::Durability::persistent), dir_(std::move(dir)), buf_(bytes_),
        pacer_(o.slow.bandwidth_bytes_per_s) {
    const std::string refused = odirect_refused(dir_);
    direct_ = refused.empty();
    dev_.name = "slow";
    dev_.kind = "directory";
    dev_.path = dir_.string();
    dev_.io_backend = direct_ ? "O_DIRECT write/read" : "write+fdatasync, read cold (" + refused + ")";
    dev_.bandwidth_cap_bytes_per_s = o.slow.bandwidth_bytes_per_s;
  }

  float* buffer() override { return buf_.floats(); }

  void write(std::uint64_t id) override {
    mlbs::trace::Scope scope("write", "write_block");
    const auto t0 = Clock::now();
    const auto done = pacer_.reserve(bytes_);
    const std::uint64_t len = direct_ ? padded_ : bytes_;   // O_DIRECT moves whole blocks
    Fd f(snapshot_path(dir_, id), O_WRONLY | O_CREAT | O_TRUNC | (direct_ ? O_DIRECT : 0));
    for (std::uint64_t off = 0; off < len; off += chunk_)
      f.write_all(buf_.bytes() + off, std::size_t(std::min(chunk_, len - off)), off);
    if (len != bytes_) f.truncate(bytes_);
    if (persistent_ || !direct_) f.datasync();
    if (!direct_) f.advise(POSIX_FADV_DONTNEED);
    f.close();
    Pacer::wait_until(done);
    const double dt = seconds(Clock::now() - t0);
    write_block_s_ += dt;
    dev_.busy_s += dt;
    dev_.bytes_in += bytes_;
    held_ += bytes_;
    dev_.peak_used_bytes = std::max(dev_.peak_used_bytes, held_);
    written_.insert(id);
  }

  void read(std::uint64_t id) override {
    if (!written_.count(id)) throw std::runtime_error("odirect: snapshot " + std::to_string(id) + " was never written");
    const fs::path path = snapshot_path(dir_, id);
    {
      mlbs::trace::Scope scope("read", "read_block");
      const auto t0 = Clock::now();
      const auto done = pacer_.reserve(bytes_);
      const std::uint64_t len = direct_ ? padded_ : bytes_;
      Fd f(path, O_RDONLY | (direct_ ? O_DIRECT : 0));
      std::uint64_t got = 0;
      for (std::uint64_t off = 0; off < len; off += chunk_) {
        const auto n = std::size_t(std::min(chunk_, len - off));
        const std::size_t r = f.read_upto(buf_.bytes() + off, n, off);
        got += r;
        if (r < n) break;   // the end of the file
      }
      f.close();
      if (got < bytes_) fail(EIO, "short read (" + std::to_string(got) + " of " + std::to_string(bytes_) + " bytes) of", path);
      Pacer::wait_until(done);
      const double dt = seconds(Clock::now() - t0);
      read_block_s_ += dt;
      dev_.busy_s += dt;
      dev_.bytes_out += bytes_;
    }
    // Removing a consumed snapshot is not a transfer (mlbs's helpers do it
    // off the application's path): outside read_block_s, inside wall_s.
    if (!persistent_) {
      if (::unlink(path.c_str()) != 0) fail(errno, "cannot remove", path);
      held_ -= bytes_;
      written_.erase(id);
    }
  }

  void finish() override {
    if (persistent_) sync_dir(dir_);
  }

  ModeStats stats() const override {
    ModeStats m;
    m.write_block_s = write_block_s_;
    m.read_block_s = read_block_s_;
    m.tiers = {dev_};
    m.extra = {{"o_direct", direct_},
               {"request_bytes", chunk_},
               {"fdatasync", persistent_ || !direct_ ? "every snapshot" : "none (scratch)"}};
    return m;
  }

 private:
  std::uint64_t bytes_, padded_, chunk_;
  bool persistent_;
  fs::path dir_;
  Buffer buf_;
  Pacer pacer_;
  bool direct_ = true;
  TierReport dev_;
  std::set<std::uint64_t> written_;
  std::uint64_t held_ = 0;
  double write_block_s_ = 0, read_block_s_ = 0;
};

}  // namespace

mlbs::Config mlbs_config(const Plan& plan, const Options& o, const RunDirs& dirs, bool writebehind) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(o.dram_bytes)};
  if (!writebehind && o.fast) {
    mlbs::Tier t = mlbs::Tier::directory(dirs.fast.string(), o.fast->quota_bytes);
    t.bandwidth_bytes_per_s = o.fast->bandwidth_bytes_per_s;
    cfg.tiers.push_back(t);
  }
  mlbs::Tier slow = mlbs::Tier::directory(dirs.slow.string());
  slow.kind = o.slow_kind;   // the library validates it (an unregistered kind is a ConfigError)
  slow.bandwidth_bytes_per_s = o.slow.bandwidth_bytes_per_s;
  cfg.tiers.push_back(slow);
  if (writebehind) cfg.schedule = mlbs::Schedule::unknown();
  else {
    const std::uint64_t count = o.hint_records ? plan.snapshots : 0;
    cfg.schedule = plan.fifo ? mlbs::Schedule::fifo(count) : mlbs::Schedule::lifo(count);
  }
  cfg.durability = o.durability;
  cfg.layout = o.layout;
  cfg.helper_threads = o.helper_threads;
  cfg.helper_core = o.helper_core;
  cfg.copy_ahead = !o.no_copy_ahead;
  if (!writebehind) {
    cfg.reader_retention = o.reader_retention;
    cfg.codec = o.codec;
    cfg.codec_when = o.codec_when;
  }
  return cfg;
}

std::unique_ptr<Mode> make_mode(const std::string& mode, const Plan& plan, const Options& o,
                                const RunDirs& dirs) {
  if (mode == "mlbs") return std::make_unique<MlbsMode>(plan, o, dirs, false);
  if (mode == "writebehind") return std::make_unique<MlbsMode>(plan, o, dirs, true);
  if (mode == "reader") return make_reader_mode(plan, o, dirs);
  const SyncDevice slow{dirs.slow, "slow", 0, o.slow.bandwidth_bytes_per_s};
  if (mode == "sync") return std::make_unique<SyncMode>(plan, o, std::vector{slow});
  if (mode == "sync-fast") {
    if (!o.fast || dirs.fast.empty()) throw std::invalid_argument("sync-fast needs --fast");
    const SyncDevice fast{dirs.fast, "fast", o.fast->quota_bytes, o.fast->bandwidth_bytes_per_s};
    return std::make_unique<SyncMode>(plan, o, std::vector{fast, slow});
  }
  if (mode == "pagecache") return std::make_unique<PageCacheMode>(plan, o, dirs.slow);
  if (mode == "odirect") return std::make_unique<ODirectMode>(plan, o, dirs.slow);
#ifdef MLBS_BENCH_HAVE_ADIOS2
  if (mode == "adios2") return make_adios2_mode(plan, o, dirs.slow);
#endif
  throw std::invalid_argument("mode '" + mode + "' cannot run: " +
                              (mode_unavailable(mode, o).empty() ? "unknown" : mode_unavailable(mode, o)));
}

}  // namespace mlbs_bench
