// mlbs — the threads that share one bulk copy with its caller (internal).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "copy/copy.hpp"

namespace mlbs::copy {

/// A persistent team of worker threads. A copy is cut into chunks that the
/// caller and the workers it wakes claim one by one, so the copy never waits
/// for a worker that has not started yet (the caller takes its chunks and
/// withdraws the invitation); it only waits for chunks already being copied.
/// That is what fork/join (OpenMP) cannot do, and on a machine whose cores
/// are shared a late team member otherwise costs a whole time slice.
///
/// One copy at a time: a caller that finds the team busy copies alone.
/// Workers sleep in futex waits between copies and are started on first use.
class Team {
 public:
  static Team& instance();
  ~Team();

  /// Copies with up to `threads` threads, the caller included. Returns how
  /// many took part.
  unsigned run(Path path, std::byte* dst, const std::byte* src, std::size_t bytes,
               unsigned threads) noexcept;

  /// Runs task(ctx, i) for every i < tasks, with up to `threads` threads, the
  /// caller included, claimed the same way (codec chunks use it). The task
  /// must not throw. Returns how many threads took part.
  using Task = void (*)(void* ctx, std::size_t index) noexcept;
  unsigned run_tasks(std::size_t tasks, Task task, void* ctx, unsigned threads) noexcept;

 private:
  // Worker::token: idle -> invited (by the caller) -> started (by the worker)
  // -> idle; invited -> idle when the caller withdraws an unanswered invitation.
  enum : int { kIdle, kInvited, kStarted, kStop };
  struct Worker {
    std::atomic<int> token{kIdle};
    std::jthread thread;
  };

  void serve(std::stop_token stop, Worker& self) noexcept;
  void claim_chunks() noexcept;
  unsigned grow(unsigned helpers) noexcept;
  /// The caller's side of a run: invite, claim, withdraw, wait (busy_ held).
  unsigned share(unsigned helpers) noexcept;
  static void copy_chunk(void* self, std::size_t index) noexcept;

  std::mutex busy_;  // held by the caller for a whole copy
  std::vector<std::unique_ptr<Worker>> workers_;
  // The run in progress: written by the caller before it invites anyone.
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t chunks_ = 0;
  // A copy's arguments (task_ = copy_chunk, ctx_ = this).
  Path path_ = Path::memcpy;
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  std::size_t bytes_ = 0, chunk_ = 0;
  std::atomic<std::size_t> next_{0};    // next chunk to claim
  std::atomic<unsigned> finished_{0};   // workers done with this copy
};

}  // namespace mlbs::copy
