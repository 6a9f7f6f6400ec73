#include "tiers/uring/uring_backend.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "mlbs/detail/block.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/uring/completion.hpp"

namespace mlbs::tiers::uring {
namespace fs = std::filesystem;

static_assert(kDirectAlign == mlbs::detail::kBlockAlign, "blocks are aligned for O_DIRECT");

int setup_error(unsigned entries) noexcept {
  if (int err = hooks::simulated_uring_failure()) return err;
  io_uring ring;
  if (int rc = io_uring_queue_init(entries, &ring, 0); rc < 0) return -rc;
  // IORING_OP_READ/WRITE (Linux 5.6) come with the probe interface itself.
  int err = 0;
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  if (!probe || !io_uring_opcode_supported(probe, IORING_OP_READ) ||
      !io_uring_opcode_supported(probe, IORING_OP_WRITE))
    err = ENOSYS;
  if (probe) io_uring_free_probe(probe);
  io_uring_queue_exit(&ring);
  return err;
}

namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kDirectAlign == 0; }
bool aligned(std::uint64_t n) { return n % kDirectAlign == 0; }

/// This thread's rings. A call takes one for its requests and gives it back
/// once they have all completed, so a ring holds nothing in flight between
/// calls and objects may move between threads; helpers never share one (no
/// locks). A held write (UringWriter::write_held) keeps its ring until it is
/// finished, and another object's call on the same thread meanwhile takes a
/// second ring: its completions are never the held write's (a copy between
/// two tiers reads the next chunk while the previous one is written).
class ThreadRings {
 public:
  struct Ring {
    io_uring ring{};
    unsigned entries = 0;
    pid_t pid = 0;
    bool taken = false;
  };

  ~ThreadRings() {
    for (auto& r : rings_) close(*r);
  }
  /// A free ring with room for `entries` requests, or nullptr (errno in `err`).
  Ring* take(unsigned entries, int& err) {
    Ring* r = nullptr;
    for (auto& c : rings_)
      if (!c->taken) {
        r = c.get();
        break;
      }
    if (!r) r = rings_.emplace_back(std::make_unique<Ring>()).get();
    // A forked child must not submit to a ring it shares with its parent.
    if (r->entries && r->pid != ::getpid()) close(*r);
    if (r->entries < entries) {
      close(*r);
      if (int rc = io_uring_queue_init(entries, &r->ring, 0); rc < 0) {
        err = -rc;
        return nullptr;
      }
      r->entries = entries;
      r->pid = ::getpid();
    }
    r->taken = true;
    return r;
  }
  /// Gives `r` back; with `discard`, forgets requests prepared but never
  /// submitted (after a failed submit) by closing it.
  static void give(Ring& r, bool discard = false) noexcept {
    if (discard) close(r);
    r.taken = false;
  }

 private:
  static void close(Ring& r) noexcept {
    if (r.entries) io_uring_queue_exit(&r.ring);
    r.entries = 0;
  }
  std::vector<std::unique_ptr<Ring>> rings_;  ///< stable addresses: pipelines point at them
};

thread_local ThreadRings t_rings;

/// The requests of one write() or read() call: up to `depth` in flight on
/// this thread's ring, each with its own bounce buffer for the transfers that
/// cannot go straight to the caller's memory. Completions are waited for in
/// io_uring_wait_cqe; nothing polls.
class Pipeline {
 public:
  struct Slot {
    bool write = false;
    std::uint64_t offset = 0;  ///< file offset of buf[0], aligned
    std::byte* buf = nullptr;  ///< aligned
    Progress p;
    std::byte* copy_to = nullptr;  ///< read through the bounce: copy out here when done
    std::size_t skip = 0, copy_len = 0;
    mlbs::detail::Block bounce;
    std::uint64_t generation = 0;  ///< the call that started it (Pipeline::next_generation)
  };
  struct Failure {
    int err = 0;        ///< errno; 0 = end of file / no progress
    bool write = false;
  };

  explicit Pipeline(unsigned depth) : slots_(std::max(depth, 1u)) {}
  ~Pipeline() { settle(); }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// Starts a call on one of this thread's rings; 0 or the errno of its set-up.
  int begin(int fd) {
    settle();  // a call begins with nothing in flight (and no ring taken)
    fd_ = fd;
    failure_.reset();
    generation_ = 0;
    free_.clear();
    for (Slot& s : slots_) free_.push_back(&s);
    int err = 0;
    owned_ = t_rings.take(static_cast<unsigned>(slots_.size()), err);
    ring_ = owned_ ? &owned_->ring : nullptr;
    return err;
  }

  /// A free slot, after reaping completions if all are busy; nullptr once a
  /// request has failed (the caller stops and calls finish()).
  Slot* acquire() {
    while (free_.empty() && !failure_) reap_one();
    if (failure_) return nullptr;
    Slot* s = free_.back();
    free_.pop_back();
    s->copy_to = nullptr;
    return s;
  }

  /// The slot's bounce buffer, at least `bytes` (a multiple of kDirectAlign).
  static std::byte* bounce(Slot& s, std::size_t bytes) {
    if (s.bounce.capacity() < bytes) s.bounce = mlbs::detail::Block::allocate(bytes);
    return s.bounce.data();
  }

  /// Queues the slot's request for [0, len) with at least `need` bytes to come.
  void start(Slot& s, bool write, std::uint64_t offset, std::byte* buf, std::size_t len,
             std::size_t need) {
    s.write = write;
    s.offset = offset;
    s.buf = buf;
    s.p = Progress{len, need};
    s.generation = generation_;
    ++open_[generation_ & 1];
    prep(s);
  }

  /// Requests started from now on belong to a new generation (a held write's
  /// next call, queued behind the last one's); returns the last one's.
  std::uint64_t next_generation() { return generation_++; }

  /// Waits until every request of generation `g` is done, the ones of the
  /// generation after it running on; false once a request has failed. Only
  /// the two latest generations may have requests open.
  bool wait_generation(std::uint64_t g) {
    while (open_[g & 1] > 0 && !failure_ && (queued_ > 0 || in_flight_ > 0)) reap_one();
    return !failure_;
  }

  /// Everything submitted has completed. Idempotent; touches no ring when
  /// nothing is pending (the thread that owned it may be gone).
  void settle() noexcept {
    // A completion may queue its resubmission: loop until both are empty.
    while (queued_ > 0 || in_flight_ > 0) reap_one();
    open_[0] = open_[1] = 0;  // done, or never seen by the kernel (a failed submit)
    if (owned_) ThreadRings::give(*std::exchange(owned_, nullptr));  // nothing of ours is on it now
  }

  /// Hands what is queued to the kernel now, without waiting (a held write).
  void submit() { flush(); }

  /// Waits for every request; the first failure, if any.
  std::optional<Failure> finish() {
    settle();
    return failure_;
  }

 private:
  void prep(Slot& s) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring_);
    if (!sqe) {  // cannot happen: in flight + queued <= depth <= ring entries
      flush();
      sqe = io_uring_get_sqe(ring_);
    }
    const auto len = static_cast<unsigned>(s.p.len - s.p.pos);
    if (s.write)
      io_uring_prep_write(sqe, fd_, s.buf + s.p.pos, len, s.offset + s.p.pos);
    else
      io_uring_prep_read(sqe, fd_, s.buf + s.p.pos, len, s.offset + s.p.pos);
    io_uring_sqe_set_data(sqe, &s);
    ++queued_;
  }

  /// Hands queued requests to the kernel.
  void flush() {
    unsigned refused = 0;
    while (queued_ > 0) {
      int rc = io_uring_submit(ring_);
      if ((rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) && ++refused < 1000) {
        if (in_flight_ > 0) reap_one();  // room frees up as completions are reaped
        continue;
      }
      if (rc == 0) rc = -EIO;  // the kernel took none of them: do not spin
      if (rc < 0) {
        // The queued requests were never seen by the kernel: forget them
        // with the ring (after the ones in flight are done with our buffers).
        fail({-rc, false});
        queued_ = 0;
        while (in_flight_ > 0) reap_one();
        ThreadRings::give(*std::exchange(owned_, nullptr), /*discard=*/true);
        ring_ = nullptr;
        return;
      }
      in_flight_ += static_cast<unsigned>(rc);
      queued_ -= static_cast<unsigned>(rc);
      refused = 0;
    }
  }

  void reap_one() {
    flush();
    if (in_flight_ == 0) return;
    io_uring_cqe* cqe = nullptr;
    int rc;
    while ((rc = io_uring_wait_cqe(ring_, &cqe)) < 0) {
      if (rc == -EINTR || rc == -EAGAIN || rc == -ETIME) continue;
      // Requests still own the caller's buffers: unwinding now could let the
      // kernel write into freed memory.
      std::fprintf(stderr, "mlbs: io_uring_wait_cqe failed with requests in flight: %s\n",
                   std::strerror(-rc));
      std::abort();
    }
    Slot& s = *static_cast<Slot*>(io_uring_cqe_get_data(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(ring_, cqe);
    --in_flight_;
    const Step step = on_completion(s.p, res);
    if (step.next == Next::resubmit && !failure_) {
      prep(s);
      return;
    }
    if (step.next == Next::finished && s.copy_to) std::memcpy(s.copy_to, s.buf + s.skip, s.copy_len);
    if (step.next == Next::failed) fail({step.err, s.write});
    --open_[s.generation & 1];
    free_.push_back(&s);
  }

  void fail(Failure f) {
    if (!failure_) failure_ = f;
  }

  std::vector<Slot> slots_;
  std::vector<Slot*> free_;
  ThreadRings::Ring* owned_ = nullptr;  ///< the ring taken for the call in progress (null between calls)
  io_uring* ring_ = nullptr;
  int fd_ = -1;
  unsigned queued_ = 0, in_flight_ = 0;
  std::uint64_t generation_ = 0;
  unsigned open_[2] = {0, 0};  ///< requests started and not done, by generation parity
  std::optional<Failure> failure_;
};

/// What a writer and a reader share: the object's placement (an O_DIRECT
/// descriptor and where the object starts in it), the names errors need, and
/// the request pipeline. Offsets below are the object's; base() is added
/// where requests are made (it is block-aligned, so alignment carries over).
class UringObject {
 public:
  UringObject(const DirectoryBackend& tier, const ObjectRef& ref, std::unique_ptr<Placement> home)
      : tier_(tier),
        store_(ref.store),
        space_(ref.space),
        id_(ref.id),
        home_(std::move(home)),
        base_(home_->base()),
        pipe_(requests_in_flight(tier.desc())),
        request_bytes_(static_cast<std::size_t>(tier.desc().io_request_bytes)) {}

 protected:
  ~UringObject() = default;
  [[noreturn]] void fail(int err, const std::string& what) {
    ObjectRef ref{space_, id_, 0, store_};
    tier_.fail(err, fmt::format("{} {}", what, home_->path().string()), &ref);
  }
  void begin() {
    if (int err = pipe_.begin(home_->fd())) fail(err, "cannot set up an io_uring ring for");
  }
  /// Within a call: whatever leaves it, requests are done with the caller's buffers.
  struct Settle {
    Pipeline& pipe;
    ~Settle() { pipe.settle(); }
  };
  /// Waits for the call's requests; throws the first failure.
  void finish(const char* write_what, const char* read_what, const char* at_eof) {
    if (const auto f = pipe_.finish()) {
      if (f->err == 0) fail(EIO, at_eof);
      fail(f->err, f->write ? write_what : read_what);
    }
  }

  const DirectoryBackend& tier_;
  std::string store_, space_;
  std::uint64_t id_;
  std::unique_ptr<Placement> home_;
  std::uint64_t base_;
  Pipeline pipe_;
  std::size_t request_bytes_;
};

class UringWriter final : public ObjectWriter, UringObject {
 public:
  UringWriter(const DirectoryBackend& tier, const ObjectRef& ref, std::unique_ptr<Placement> home,
              std::uint64_t size)
      : UringObject(tier, ref, std::move(home)) {
    // O_DIRECT writes that extend a file take the inode lock exclusively
    // (ext4, xfs), so the requests in flight would run one after another;
    // blocks allocated up front make them writes within the file's size,
    // which run side by side. Best effort: without fallocate the writes
    // allocate as they go. The padding and any excess are cut at commit.
    // (A log's layout allocates its extent itself.)
    const std::uint64_t blocks = align_up(static_cast<std::size_t>(size));
    if (home_->whole_file() && blocks > 0 && ::fallocate(home_->fd(), 0, 0, static_cast<off_t>(blocks)) == 0)
      file_bytes_ = blocks;
  }
  ~UringWriter() override {
    pipe_.settle();  // held requests are done with the caller's bytes (and ours) first
    if (buffered_fd_ >= 0) ::close(buffered_fd_);
  }

  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    if (bytes == 0) return;
    finish_held();
    if (buffered_fd_ < 0 && offset != pos_) go_buffered();
    if (buffered_fd_ >= 0) {
      pwrite_all(data, bytes, offset);
      end_ = std::max(end_, offset + bytes);
      return;
    }
    begin();
    Settle settle{pipe_};
    queue(data, bytes);
    finish("cannot write", "cannot write", "wrote nothing to");
    end_ = pos_;
  }

  void write_held(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    if (bytes == 0) return;
    if (buffered_fd_ >= 0 || offset != pos_) {
      finish_held();
      return write(offset, data, bytes);
    }
    // Behind the held requests, on their ring: the device goes on from those
    // to these without waiting for this thread to notice they are done.
    if (!held_) begin();
    const std::uint64_t before = pipe_.next_generation();
    try {
      queue(data, bytes);
      pipe_.submit();
      if (!pipe_.wait_generation(before)) finish("cannot write", "cannot write", "wrote nothing to");  // throws
    } catch (...) {
      held_ = false;
      pipe_.settle();
      throw;
    }
    held_ = true;  // a failed request of these shows at the next call or commit()
    end_ = pos_;
  }

  void commit(bool durable) override {
    finish_held();
    if (carry_len_) {
      // The record's last block, zero-padded: a file is cut back below, a
      // log's extent has room for the whole block.
      std::memset(carry_.data() + carry_len_, 0, kDirectAlign - carry_len_);
      begin();
      Settle settle{pipe_};
      if (Pipeline::Slot* s = pipe_.acquire())
        pipe_.start(*s, true, base_ + pos_ - carry_len_, carry_.data(), kDirectAlign, kDirectAlign);
      finish("cannot write", "cannot write", "wrote nothing to");
      carry_len_ = 0;
      file_bytes_ = std::max<std::uint64_t>(file_bytes_, align_up(static_cast<std::size_t>(end_)));
    }
    // Cut the padding and any preallocation beyond the record.
    if (home_->whole_file() && file_bytes_ > end_ && ::ftruncate(home_->fd(), static_cast<off_t>(end_)) != 0) {
      const int err = errno;
      fail(err, "cannot truncate");
    }
    // O_DIRECT data is on the device already; buffered writes (after
    // non-sequential offsets) leave the page cache as the pread backend's do.
    if (durable && ::fdatasync(home_->fd()) != 0) {
      const int err = errno;
      fail(err, "cannot fdatasync");
    }
    if (buffered_fd_ >= 0) {
      if (::fdatasync(buffered_fd_) != 0 && (durable || errno != EINVAL)) {
        const int err = errno;
        fail(err, "cannot fdatasync");
      }
      ::posix_fadvise(buffered_fd_, static_cast<off_t>(base_), static_cast<off_t>(end_), POSIX_FADV_DONTNEED);
    }
    home_->commit(durable);
  }

 private:
  /// Queues requests for `bytes` at pos_ (the next sequential offset); the
  /// caller waits for them (write) or lets them run (write_held).
  void queue(const std::byte* data, std::size_t bytes) {
    // 1. Top up a partial block left by the previous call.
    if (carry_len_) {
      const std::size_t k = std::min(kDirectAlign - carry_len_, bytes);
      std::memcpy(carry_.data() + carry_len_, data, k);
      carry_len_ += k;
      data += k;
      bytes -= k;
      pos_ += k;
      if (carry_len_ == kDirectAlign) {
        if (Pipeline::Slot* s = pipe_.acquire()) {
          std::byte* buf = Pipeline::bounce(*s, kDirectAlign);
          std::memcpy(buf, carry_.data(), kDirectAlign);
          pipe_.start(*s, true, base_ + pos_ - kDirectAlign, buf, kDirectAlign, kDirectAlign);
        }
        carry_len_ = 0;
      }
    }
    // 2. Whole blocks, straight from the caller's memory when it is aligned.
    const bool direct = aligned(data);
    for (std::size_t whole = align_down(bytes); whole > 0;) {
      Pipeline::Slot* s = pipe_.acquire();
      if (!s) break;
      const std::size_t n = std::min(request_bytes_, whole);
      std::byte* buf = const_cast<std::byte*>(data);  // only read from: a write request
      if (!direct) buf = static_cast<std::byte*>(std::memcpy(Pipeline::bounce(*s, n), data, n));
      pipe_.start(*s, true, base_ + pos_, buf, n, n);
      data += n;
      bytes -= n;
      whole -= n;
      pos_ += n;
    }
    // 3. A partial last block waits for the next call or commit().
    if (bytes > 0 && bytes < kDirectAlign) {
      if (!carry_) carry_ = mlbs::detail::Block::allocate(kDirectAlign);
      std::memcpy(carry_.data(), data, bytes);
      carry_len_ = bytes;
      pos_ += bytes;
    }
  }

  /// The requests of a held write: waited for, their first failure thrown.
  void finish_held() {
    if (!std::exchange(held_, false)) return;
    finish("cannot write", "cannot write", "wrote nothing to");
  }

  /// Offsets that skip around cannot be padded block by block: this object
  /// goes on through the page cache (a descriptor of its own, as a log's is
  /// shared), held bytes first.
  void go_buffered() {
    buffered_fd_ = ::open(home_->path().c_str(), O_WRONLY | O_CLOEXEC);
    if (buffered_fd_ < 0) {
      const int err = errno;
      fail(err, "cannot reopen without O_DIRECT");
    }
    if (carry_len_) pwrite_all(carry_.data(), carry_len_, pos_ - carry_len_);
    carry_len_ = 0;
  }

  void pwrite_all(const std::byte* data, std::size_t bytes, std::uint64_t offset) {
    if (offset + bytes > home_->room() && !home_->whole_file()) fail(EFBIG, "write beyond the object's extent in");
    offset += base_;
    while (bytes > 0) {
      const ssize_t n = ::pwrite(buffered_fd_, data, bytes, static_cast<off_t>(offset));
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        fail(err, "cannot write");
      }
      if (n == 0) fail(EIO, "wrote nothing to");
      data += n;
      bytes -= static_cast<std::size_t>(n);
      offset += static_cast<std::uint64_t>(n);
    }
  }

  std::uint64_t pos_ = 0;   ///< where the next sequential write starts
  std::uint64_t end_ = 0;   ///< the object's size once committed
  std::uint64_t file_bytes_ = 0;  ///< a whole file's size now, if more than end_ (padding, fallocate)
  mlbs::detail::Block carry_;     ///< the partial block at pos_ - carry_len_
  std::size_t carry_len_ = 0;
  int buffered_fd_ = -1;          ///< >= 0 once writes went buffered
  bool held_ = false;             ///< requests of a write_held() may be in flight
};

class UringReader final : public ObjectReader, UringObject {
 public:
  using UringObject::UringObject;

  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    read_held(offset, data, bytes);
    wait_held();
  }

  void read_held(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    if (bytes == 0) return;
    // Behind the held requests, on their ring, as a held write's are: the
    // device goes on to these while this thread notices those are in.
    if (!held_) begin();
    const std::uint64_t before = pipe_.next_generation();
    try {
      queue(offset, data, bytes);
      pipe_.submit();
      if (!pipe_.wait_generation(before)) finish("cannot read", "cannot read", "unexpected end of file in");  // throws
    } catch (...) {
      held_ = false;
      pipe_.settle();
      throw;
    }
    held_ = true;  // a failed request of these shows at the next call or wait_held()
  }

  void wait_held() override {
    if (!std::exchange(held_, false)) return;
    finish("cannot read", "cannot read", "unexpected end of file in");
  }

 private:
  /// Requests for the bytes, up to the pipeline's depth in flight (waiting
  /// for the first ones to complete when there are more).
  void queue(std::uint64_t offset, std::byte* data, std::size_t bytes) {
    // Whole blocks straight into the caller's memory when both line up.
    if (aligned(offset) && aligned(data)) {
      for (std::size_t whole = align_down(bytes); whole > 0;) {
        Pipeline::Slot* s = pipe_.acquire();
        if (!s) break;
        const std::size_t n = std::min(request_bytes_, whole);
        pipe_.start(*s, false, base_ + offset, data, n, n);
        data += n;
        offset += n;
        bytes -= n;
        whole -= n;
      }
    }
    // The rest (a last partial block, or everything when unaligned) through
    // bounce buffers: aligned windows read whole, the wanted bytes copied out.
    while (bytes > 0) {
      Pipeline::Slot* s = pipe_.acquire();
      if (!s) break;
      const std::uint64_t window_start = offset / kDirectAlign * kDirectAlign;
      const auto skip = static_cast<std::size_t>(offset - window_start);
      const std::size_t window = std::min(request_bytes_, align_up(skip + bytes));
      const std::size_t n = std::min(bytes, window - skip);
      pipe_.start(*s, false, base_ + window_start, Pipeline::bounce(*s, window), window, skip + n);
      s->copy_to = data;
      s->skip = skip;
      s->copy_len = n;
      data += n;
      offset += n;
      bytes -= n;
    }
  }

  bool held_ = false;  ///< requests of a read_held() may be in flight
};

std::atomic<unsigned> g_probe_serial{0};

}  // namespace

UringDirectoryBackend::UringDirectoryBackend(int index, const Tier& desc, bool required)
    : DirectoryBackend(index, desc), required_(required) {
  if (int err = setup_error(desc.queue_depth))
    give_up(err, fmt::format("io_uring unavailable: io_uring_queue_init failed ({})", std::strerror(err)));
}

void UringDirectoryBackend::give_up(int err, std::string why) {
  if (required_)
    throw TierError(err, fmt::format("io_backend = io_uring cannot be honoured: {}", why), {{}, {}, label()});
  direct_ = false;
  fallback_ = std::move(why);
}

void UringDirectoryBackend::do_probe() {
  DirectoryBackend::do_probe();
  if (!direct_) return;
  // Does this file system take O_DIRECT at our alignment? Try one block.
  const fs::path probe =
      root() / fmt::format(".mlbs-odirect-probe.{}.{}", ::getpid(), g_probe_serial.fetch_add(1));
  const int fd = hooks::simulated_odirect_failure()
                     ? (errno = EINVAL, -1)
                     : ::open(probe.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    give_up(err, fmt::format("the file system of {} refuses O_DIRECT ({})", root().string(), std::strerror(err)));
    return;
  }
  int err = 0;
  void* block = std::aligned_alloc(kDirectAlign, kDirectAlign);
  if (block) {
    std::memset(block, 0, kDirectAlign);
    const ssize_t n = ::pwrite(fd, block, kDirectAlign, 0);
    if (n < 0) err = errno;
    else if (n != static_cast<ssize_t>(kDirectAlign)) err = EIO;
    std::free(block);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  if (err)
    give_up(err, fmt::format("an O_DIRECT write of {} bytes to {} fails ({})", kDirectAlign, root().string(),
                             std::strerror(err)));
}

// A folder on another file system than the probe saw may refuse O_DIRECT:
// auto then settles for pread there (the placement says which it got).
std::unique_ptr<ObjectWriter> UringDirectoryBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  if (!direct_) return DirectoryBackend::do_create(ref, size);
  auto home = layout().create(ref, size, required_ ? OpenMode::direct : OpenMode::direct_or_buffered);
  if (!home->direct()) return pread_writer(ref, std::move(home));
  return std::make_unique<UringWriter>(*this, ref, std::move(home), size);
}

std::unique_ptr<ObjectReader> UringDirectoryBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  if (!direct_) return DirectoryBackend::do_open(ref, size);
  auto home = layout().open(ref, size, required_ ? OpenMode::direct : OpenMode::direct_or_buffered);
  if (!home->direct()) return pread_reader(ref, std::move(home));
  return std::make_unique<UringReader>(*this, ref, std::move(home));
}

Backend::IoPath UringDirectoryBackend::do_io_path() const {
  if (!direct_) return DirectoryBackend::do_io_path();
  return {"io_uring+O_DIRECT", {}};
}

}  // namespace mlbs::tiers::uring
