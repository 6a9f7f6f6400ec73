// mlbs — the agent of an mpiio tier: the one thread per rank that makes the
// MPI-IO calls on the shared file, in rounds that every rank takes part in
// (docs/mpiio.md, "Rounds").
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace mlbs::tiers::mpiio {

/// Extents start and end on this boundary: a round's new records form one
/// contiguous, page-aligned region, and a removed extent can be punched out.
constexpr std::uint64_t kAlign = 4096;
/// Largest piece of one MPI call: counts are ints.
constexpr std::uint64_t kMaxPiece = 1ull << 30;

constexpr std::uint64_t align_up(std::uint64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Where a record lies in the shared file; `allocated` 0 = not placed yet.
struct Extent {
  std::uint64_t offset = 0;
  std::uint64_t allocated = 0;  ///< the record's size rounded up to kAlign
};

/// One transfer handed to the agent by a helper, which waits for it; lives on
/// the helper's stack until `done`.
struct Transfer {
  enum class Kind { write, read, sync };
  Kind kind = Kind::sync;
  Extent* extent = nullptr;    ///< write/read; a write places it when unplaced
  std::uint64_t allocate = 0;  ///< write: bytes to place the extent with (kAlign multiple)
  std::uint64_t offset = 0;    ///< within the record
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  // Set by the agent.
  bool done = false;
  int error = 0;               ///< errno-like; 0 = done
  std::string what;            ///< why, when error != 0
};

/// Owns all MPI-IO calls of one rank on the shared file. Helpers call run()
/// at any time; transfers are batched into rounds that rank 0 starts when a
/// rank asks for one (a message on the agent's communicator) and that every
/// rank's agent joins (MPI_Bcast of the command), so collective
/// MPI_File_write_at_all / read_at_all never wait for a rank that has no
/// reason to call them.
class Agent {
 public:
  /// `comm`: a communicator for the agent alone (its messages match nothing
  /// else); `file`: opened collectively over it; `fd`: a POSIX descriptor of
  /// the same file, for the page cache; `file_end`: where new extents start,
  /// the same on every rank. Starts the agent thread.
  Agent(MPI_Comm comm, MPI_File file, int fd, std::uint64_t file_end, bool drop_pages);
  /// Calls stop() if it was not.
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// Runs `t` in the next round and returns when it is done (t.error says
  /// how). Never blocks for long unless another rank holds the rounds up.
  void run(Transfer& t);
  /// Leaves the round protocol: returns once every rank has called stop()
  /// and the agents have ended. Call it only when no run() is in progress.
  void stop() noexcept;

 private:
  void loop();
  /// Rank 0: waits for requests, returns the command to broadcast.
  int coordinate();
  void round();
  void fail_all(const std::string& why);
  void send(int message) noexcept;

  MPI_Comm comm_;
  MPI_File file_;
  int fd_;
  std::uint64_t file_end_;
  bool drop_pages_;
  int rank_ = 0, size_ = 1;
  // rank 0 only: ranks that said they are stopping
  int stopped_ranks_ = 0;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<Transfer*> queue_;  ///< bounded by the threads calling run(): each waits for its own
  bool requested_ = false;       ///< a request for a round is on its way and no round took the queue since
  bool stopping_ = false;
  bool broken_ = false;          ///< an MPI call of the protocol failed: no more rounds
  std::string broken_why_;
  std::jthread thread_;          // last: joined before the rest goes
};

}  // namespace mlbs::tiers::mpiio
