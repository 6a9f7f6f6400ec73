#include "tiers/mpiio/agent.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "core/thread_name.hpp"

namespace mlbs::tiers::mpiio {
namespace {

constexpr int kRequestTag = 7301;
// Messages to rank 0 and the commands it broadcasts.
constexpr int kWantRound = 1;
constexpr int kStopping = 2;
constexpr int kRound = 1;
constexpr int kStop = 2;

/// errno of an MPI error code, so the tier raises the matching mlbs error
/// (a full file system is a DeviceFullError here as on a directory tier).
int errno_of(int rc) {
  int cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  switch (cls) {
    case MPI_ERR_NO_SPACE: return ENOSPC;
    case MPI_ERR_QUOTA: return EDQUOT;
    case MPI_ERR_ACCESS: return EACCES;
    case MPI_ERR_READ_ONLY: return EROFS;
    case MPI_ERR_NO_SUCH_FILE: return ENOENT;
    default: return EIO;
  }
}

std::string describe(int rc, const char* call) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(len)));
}

/// One MPI call's worth of a transfer.
struct Piece {
  Transfer* t;
  MPI_Offset at;
  std::byte* data;
  int count;
};

}  // namespace

Agent::Agent(MPI_Comm comm, MPI_File file, int fd, std::uint64_t file_end, bool drop_pages)
    : comm_(comm), file_(file), fd_(fd), file_end_(file_end), drop_pages_(drop_pages) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  thread_ = std::jthread([this] { loop(); });
  mlbs::detail::name_os_thread(thread_.native_handle(), "mlbs-mpiio");
}

Agent::~Agent() { stop(); }

void Agent::send(int message) noexcept {
  // Small and eager: returns at once even when rank 0's agent is busy.
  if (int rc = MPI_Send(&message, 1, MPI_INT, 0, kRequestTag, comm_); rc != MPI_SUCCESS) {
    std::lock_guard lock(mu_);
    broken_ = true;
    broken_why_ = describe(rc, "MPI_Send");
  }
}

void Agent::run(Transfer& t) {
  std::unique_lock lock(mu_);
  if (stopping_ || broken_) {
    t.error = stopping_ ? ESHUTDOWN : EIO;
    t.what = stopping_ ? "the mpiio tier has been shut down" : broken_why_;
    return;
  }
  queue_.push_back(&t);
  // One request per batch: later transfers ride along until a round takes them.
  const bool ask = !requested_;
  requested_ = true;
  lock.unlock();
  if (ask) send(kWantRound);
  lock.lock();
  done_cv_.wait(lock, [&] { return t.done || (broken_ && std::find(queue_.begin(), queue_.end(), &t) != queue_.end()); });
  if (!t.done) {  // the protocol broke before a round took it
    std::erase(queue_, &t);
    t.error = EIO;
    t.what = broken_why_;
  }
}

void Agent::stop() noexcept {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) {
    // Every rank's agent keeps joining rounds until rank 0 has heard from
    // all of them: ranks that still have work finish it first.
    bool broken;
    {
      std::lock_guard lock(mu_);
      broken = broken_;
    }
    if (!broken) send(kStopping);
    thread_.join();
  }
}

int Agent::coordinate() {
  bool want_round = false;
  auto handle = [&](int message) {
    if (message == kWantRound) want_round = true;
    if (message == kStopping) ++stopped_ranks_;
  };
  for (;;) {
    if (stopped_ranks_ == size_ && !want_round) return kStop;
    if (!want_round) {
      // Blocks until some rank has work (Open MPI polls here: see docs/mpiio.md).
      int message = 0;
      if (int rc = MPI_Recv(&message, 1, MPI_INT, MPI_ANY_SOURCE, kRequestTag, comm_, MPI_STATUS_IGNORE);
          rc != MPI_SUCCESS)
        throw std::runtime_error(describe(rc, "MPI_Recv"));
      handle(message);
    }
    // Requests that arrived meanwhile join this round.
    for (;;) {
      int flag = 0;
      if (int rc = MPI_Iprobe(MPI_ANY_SOURCE, kRequestTag, comm_, &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
        throw std::runtime_error(describe(rc, "MPI_Iprobe"));
      if (!flag) break;
      int message = 0;
      if (int rc = MPI_Recv(&message, 1, MPI_INT, MPI_ANY_SOURCE, kRequestTag, comm_, MPI_STATUS_IGNORE);
          rc != MPI_SUCCESS)
        throw std::runtime_error(describe(rc, "MPI_Recv"));
      handle(message);
    }
    if (want_round) return kRound;
  }
}

void Agent::loop() {
  try {
    for (;;) {
      int command = rank_ == 0 ? coordinate() : 0;
      if (int rc = MPI_Bcast(&command, 1, MPI_INT, 0, comm_); rc != MPI_SUCCESS)
        throw std::runtime_error(describe(rc, "MPI_Bcast"));
      if (command == kStop) return;
      round();
    }
  } catch (const std::exception& e) {
    // The ranks no longer agree on the rounds: fail what waits, and anything
    // later, rather than guess.
    std::fprintf(stderr, "mlbs: mpiio agent of rank %d stops: %s\n", rank_, e.what());
    fail_all(e.what());
  }
}

void Agent::fail_all(const std::string& why) {
  std::lock_guard lock(mu_);
  broken_ = true;
  broken_why_ = why;
  done_cv_.notify_all();
}

void Agent::round() {
  std::vector<Transfer*> ops;
  {
    std::lock_guard lock(mu_);
    ops.assign(queue_.begin(), queue_.end());
    queue_.clear();
    requested_ = false;  // what arrives from now on asks for the next round
  }
  // What this rank brings: bytes to place, MPI calls of writes and of reads,
  // whether it wants the file made durable.
  std::uint64_t mine[4] = {0, 0, 0, 0};
  auto pieces_of = [](std::size_t bytes) { return (bytes + kMaxPiece - 1) / kMaxPiece; };
  for (Transfer* t : ops) {
    if (t->kind == Transfer::Kind::write) {
      if (t->extent->allocated == 0) mine[0] += t->allocate;
      mine[1] += pieces_of(t->bytes);
    } else if (t->kind == Transfer::Kind::read) {
      mine[2] += pieces_of(t->bytes);
    } else {
      mine[3] = 1;
    }
  }
  std::vector<std::uint64_t> all(4 * static_cast<std::size_t>(size_));
  if (int rc = MPI_Allgather(mine, 4, MPI_UINT64_T, all.data(), 4, MPI_UINT64_T, comm_); rc != MPI_SUCCESS) {
    for (Transfer* t : ops) {
      t->error = errno_of(rc);
      t->what = describe(rc, "MPI_Allgather");
    }
    std::lock_guard lock(mu_);
    for (Transfer* t : ops) t->done = true;
    done_cv_.notify_all();
    throw std::runtime_error(describe(rc, "MPI_Allgather"));
  }
  // Every rank computes the same placement: the ranks' new extents in rank
  // order from the agreed end of the file, one contiguous region per round.
  std::uint64_t base = file_end_, writes = 0, reads = 0, total_writes = 0;
  bool sync = false;
  for (int r = 0; r < size_; ++r) {
    const std::uint64_t* c = &all[4 * static_cast<std::size_t>(r)];
    if (r < rank_) base += c[0];
    file_end_ += c[0];
    writes = std::max(writes, c[1]);
    reads = std::max(reads, c[2]);
    total_writes += c[1];
    sync = sync || c[3];
  }
  std::vector<Piece> wp, rp;
  for (Transfer* t : ops) {
    if (t->kind == Transfer::Kind::sync) continue;
    if (t->kind == Transfer::Kind::write && t->extent->allocated == 0) {
      t->extent->offset = base;
      t->extent->allocated = t->allocate;
      base += t->allocate;
    }
    auto& into = t->kind == Transfer::Kind::write ? wp : rp;
    for (std::size_t done = 0; done < t->bytes; done += kMaxPiece) {
      const std::size_t n = std::min<std::size_t>(kMaxPiece, t->bytes - done);
      into.push_back({t, static_cast<MPI_Offset>(t->extent->offset + t->offset + done), t->data + done,
                      static_cast<int>(n)});
    }
  }
  // Collective calls in lockstep: a rank out of pieces joins with count 0.
  auto transfer = [&](std::vector<Piece>& pieces, std::uint64_t calls, bool write) {
    for (std::uint64_t i = 0; i < calls; ++i) {
      MPI_Status status;
      Piece none{nullptr, 0, nullptr, 0};
      Piece& p = i < pieces.size() ? pieces[i] : none;
      const int rc = write ? MPI_File_write_at_all(file_, p.at, p.data, p.count, MPI_BYTE, &status)
                           : MPI_File_read_at_all(file_, p.at, p.data, p.count, MPI_BYTE, &status);
      if (!p.t || p.t->error) continue;
      int moved = 0;
      if (rc != MPI_SUCCESS) {
        p.t->error = errno_of(rc);
        p.t->what = describe(rc, write ? "MPI_File_write_at_all" : "MPI_File_read_at_all");
      } else if (MPI_Get_count(&status, MPI_BYTE, &moved) != MPI_SUCCESS || moved != p.count) {
        p.t->error = EIO;
        p.t->what = fmt::format("{} moved {} of {} bytes at offset {} of the shared file",
                                write ? "MPI_File_write_at_all" : "MPI_File_read_at_all", moved, p.count,
                                static_cast<long long>(p.at));
      }
    }
  };
  transfer(wp, writes, true);
  transfer(rp, reads, false);
  if (sync) {
    // Durability for whoever asked; collective, so every rank calls it.
    if (int rc = MPI_File_sync(file_); rc != MPI_SUCCESS)
      for (Transfer* t : ops)
        if (!t->error && t->kind != Transfer::Kind::read) {
          t->error = errno_of(rc);
          t->what = describe(rc, "MPI_File_sync");
        }
  } else if (drop_pages_ && total_writes) {
    // Collective buffering lets other ranks (aggregators) write this rank's
    // bytes: once all have returned, the bytes are in the file.
    // A failure only leaves pages cached: the transfers themselves are done.
    if (int rc = MPI_Barrier(comm_); rc != MPI_SUCCESS)
      std::fprintf(stderr, "mlbs: mpiio agent of rank %d: %s\n", rank_, describe(rc, "MPI_Barrier").c_str());
  }
  if (drop_pages_) {
    // Keep the shared file out of the page cache as directory tiers keep
    // theirs: written ranges reach the device, then they and the read
    // ranges are dropped. Advisory: errors change timings, not results.
    for (const Piece& p : wp) {
      if (!sync)
        ::sync_file_range(fd_, p.at, p.count,
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
      ::posix_fadvise(fd_, p.at, p.count, POSIX_FADV_DONTNEED);
    }
    for (const Piece& p : rp) ::posix_fadvise(fd_, p.at, p.count, POSIX_FADV_DONTNEED);
  }
  std::lock_guard lock(mu_);
  for (Transfer* t : ops) t->done = true;
  done_cv_.notify_all();
}

}  // namespace mlbs::tiers::mpiio
