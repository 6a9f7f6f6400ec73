#include "copy/team.hpp"

#include <algorithm>

#include "core/thread_name.hpp"

namespace mlbs::copy {

Team& Team::instance() {
  static Team team;
  return team;
}

Team::~Team() {
  for (auto& w : workers_) {
    w->thread.request_stop();
    w->token.store(kStop);
    w->token.notify_one();
  }
  // The jthreads join as workers_ is destroyed.
}

unsigned Team::grow(unsigned helpers) noexcept {
  try {
    while (workers_.size() < helpers) {
      auto w = std::make_unique<Worker>();
      Worker& self = *w;
      w->thread = std::jthread([this, &self](std::stop_token st) { serve(st, self); });
      mlbs::detail::name_os_thread(w->thread.native_handle(), "mlbs-copy");
      workers_.push_back(std::move(w));
    }
  } catch (...) {
    // No more threads or memory: copy with the workers there are.
  }
  return static_cast<unsigned>(std::min<std::size_t>(helpers, workers_.size()));
}

void Team::claim_chunks() noexcept {
  for (std::size_t c; (c = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;) task_(ctx_, c);
}

void Team::copy_chunk(void* self, std::size_t index) noexcept {
  auto& t = *static_cast<Team*>(self);
  const std::size_t off = index * t.chunk_;
  copy_with(t.path_, t.dst_ + off, t.src_ + off, std::min(t.chunk_, t.bytes_ - off));
}

void Team::serve(std::stop_token stop, Worker& self) noexcept {
  for (;;) {
    self.token.wait(kIdle, std::memory_order_acquire);
    if (stop.stop_requested()) return;
    int expected = kInvited;
    if (!self.token.compare_exchange_strong(expected, kStarted, std::memory_order_acquire))
      continue;  // the invitation was withdrawn
    claim_chunks();
    // Idle before reporting: once finished_ counts us the caller may invite
    // us to the next copy, and that invitation must not be overwritten.
    self.token.store(kIdle, std::memory_order_relaxed);
    finished_.fetch_add(1, std::memory_order_release);
    finished_.notify_one();
  }
}

unsigned Team::run(Path path, std::byte* dst, const std::byte* src, std::size_t bytes,
                   unsigned threads) noexcept {
  std::unique_lock lock(busy_, std::try_to_lock);
  const unsigned helpers = lock ? grow(threads > 1 ? threads - 1 : 0) : 0;
  if (helpers == 0) {
    copy_with(path, dst, src, bytes);
    return 1;
  }
  path_ = path;
  dst_ = dst;
  src_ = src;
  bytes_ = bytes;
  chunk_ = chunk_bytes(bytes, helpers + 1);
  task_ = copy_chunk;
  ctx_ = this;
  chunks_ = (bytes + chunk_ - 1) / chunk_;
  return share(helpers);
}

unsigned Team::run_tasks(std::size_t tasks, Task task, void* ctx, unsigned threads) noexcept {
  std::unique_lock lock(busy_, std::try_to_lock);
  const unsigned helpers =
      lock && tasks > 1 && threads > 1 ? grow(static_cast<unsigned>(std::min<std::size_t>(threads, tasks)) - 1) : 0;
  if (helpers == 0) {
    for (std::size_t i = 0; i < tasks; ++i) task(ctx, i);
    return 1;
  }
  task_ = task;
  ctx_ = ctx;
  chunks_ = tasks;
  return share(helpers);
}

unsigned Team::share(unsigned helpers) noexcept {
  next_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  for (unsigned i = 0; i < helpers; ++i) {
    workers_[i]->token.store(kInvited, std::memory_order_release);
    workers_[i]->token.notify_one();
  }
  claim_chunks();
  // Every chunk is claimed: withdraw the invitations nobody took up yet.
  unsigned started = helpers;
  for (unsigned i = 0; i < helpers; ++i) {
    int expected = kInvited;
    if (workers_[i]->token.compare_exchange_strong(expected, kIdle, std::memory_order_relaxed))
      --started;
  }
  // Wait for the chunks being worked on by those that did start.
  for (unsigned f; (f = finished_.load(std::memory_order_acquire)) != started;)
    finished_.wait(f, std::memory_order_acquire);
  return 1 + started;
}

}  // namespace mlbs::copy
