// mlbs — what one io_uring completion means for its request. Pure (no ring,
// no I/O), so short completions and -EAGAIN, which real devices rarely
// produce on demand, are unit tested with synthetic results.
#pragma once

#include <cerrno>
#include <cstddef>

namespace mlbs::tiers::uring {

/// O_DIRECT alignment of buffers, file offsets and lengths. 4096 suits every
/// device we target (512e and 4Kn); probe() checks the file system agrees.
inline constexpr std::size_t kDirectAlign = 4096;

constexpr std::size_t align_down(std::size_t n) { return n / kDirectAlign * kDirectAlign; }
constexpr std::size_t align_up(std::size_t n) { return align_down(n + kDirectAlign - 1); }

/// One request: `len` bytes (a multiple of kDirectAlign) at its start, of
/// which the first `need` must arrive (a read of an object's last block ends
/// early at end of file). The request in flight covers [pos, len).
struct Progress {
  std::size_t len = 0;
  std::size_t need = 0;
  std::size_t done = 0;   ///< bytes known transferred from the start
  std::size_t pos = 0;    ///< where the request in flight starts
  unsigned retries = 0;   ///< -EAGAIN/-EINTR results in a row
};

enum class Next {
  finished,  ///< at least `need` bytes are done
  resubmit,  ///< submit [pos, len) again
  failed,    ///< give up: `err` is the errno, 0 for end of file / no progress
};

struct Step {
  Next next;
  int err = 0;
};

/// Applies the result `res` (bytes or -errno) of the request in flight.
/// A short transfer resumes at the aligned point at or below `done`, since
/// O_DIRECT needs aligned offsets; transferring a few bytes twice is harmless.
/// A result that moves nothing forward is end of file (reads) or a device
/// that accepts nothing (writes): failed with err 0.
inline Step on_completion(Progress& p, int res, unsigned max_retries = 100) {
  if (res == -EAGAIN || res == -EINTR) {
    if (++p.retries > max_retries) return {Next::failed, -res};
    return {Next::resubmit};
  }
  p.retries = 0;
  if (res < 0) return {Next::failed, -res};
  const std::size_t end = p.pos + static_cast<std::size_t>(res);
  if (end <= p.done) return {Next::failed, 0};  // nothing new: end of file
  p.done = end < p.len ? end : p.len;
  if (p.done >= p.need) return {Next::finished};
  p.pos = align_down(p.done);
  return {Next::resubmit};
}

}  // namespace mlbs::tiers::uring
