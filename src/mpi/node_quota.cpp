#include "mpi/node_quota.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <limits>
#include <new>
#include <vector>

#include "core/thread_name.hpp"
#include "mpi/group.hpp"

namespace mlbs::mpi {
namespace {

// Not std::atomic::wait: libstdc++ waits on a process-private futex, and the
// writers here are other processes.
std::uint32_t* word(std::atomic<std::uint32_t>& a) { return reinterpret_cast<std::uint32_t*>(&a); }
void futex_wait(std::atomic<std::uint32_t>& a, std::uint32_t seen) {
  ::syscall(SYS_futex, word(a), FUTEX_WAIT, seen, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<std::uint32_t>& a) {
  ::syscall(SYS_futex, word(a), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

NodeQuota::NodeQuota(MPI_Comm node, int tier, std::uint64_t node_bytes) : budget_(node_bytes) {
  (void)tier;
  check(MPI_Comm_rank(node, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(node, &size_), "MPI_Comm_size");
  const MPI_Aint bytes = rank_ == 0 ? MPI_Aint(sizeof(Header) + sizeof(Slot) * size_) : 0;
  void* base = nullptr;
  check(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &base, &win_), "MPI_Win_allocate_shared");
  MPI_Aint size = 0;
  int disp = 0;
  check(MPI_Win_shared_query(win_, 0, &size, &disp, &base), "MPI_Win_shared_query");
  header_ = static_cast<Header*>(base);
  slots_ = reinterpret_cast<Slot*>(static_cast<char*>(base) + sizeof(Header));
  if (rank_ == 0) {
    new (header_) Header{{0}, {0}};
    for (int i = 0; i < size_; ++i) new (&slots_[i]) Slot{{0}, {0}};
  }
  // Nobody touches the counters before rank 0 has constructed them.
  check(MPI_Barrier(node), "MPI_Barrier");
}

NodeQuota::~NodeQuota() {
  // Give back what this rank holds and asks for; the version bump also wakes
  // our own watcher (a changed word never lets a futex wait start).
  Slot& me = slots_[rank_];
  header_->used.fetch_sub(me.held.exchange(0));
  me.demand.store(0);
  if (watcher_.joinable()) watcher_.request_stop();
  header_->version.fetch_add(1);
  futex_wake_all(header_->version);
  if (watcher_.joinable()) watcher_.join();
  if (active()) MPI_Win_free(&win_);
}

void NodeQuota::watch(std::function<void()> on_change) {
  // Read here, not in the thread: a change made before the thread runs must wake it.
  std::uint32_t seen = header_->version.load();
  watcher_ = std::jthread([this, seen, on_change = std::move(on_change)](std::stop_token st) mutable {
    while (!st.stop_requested()) {
      futex_wait(header_->version, seen);  // returns at once if the word moved on
      const std::uint32_t now = header_->version.load();
      if (now == seen || st.stop_requested()) continue;
      seen = now;
      on_change();
    }
  });
  mlbs::detail::name_os_thread(watcher_.native_handle(), "mlbs-node-quota");
}

std::uint64_t NodeQuota::fair_share(const std::uint64_t* demands, int n, int me, std::uint64_t budget) {
  std::vector<std::uint64_t> sorted(demands, demands + n);
  std::sort(sorted.begin(), sorted.end());
  std::uint64_t left = budget;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t level = left / static_cast<std::uint64_t>(n - i);
    if (sorted[i] > level) return std::min(demands[me], level);  // the rest split `left` equally
    left -= sorted[i];
  }
  return demands[me];  // every demand fits
}

std::uint64_t NodeQuota::limit() const {
  std::vector<std::uint64_t> demands(size_);
  for (int i = 0; i < size_; ++i) demands[i] = slots_[i].demand.load(std::memory_order_relaxed);
  return fair_share(demands.data(), size_, rank_, budget_);
}

std::uint64_t NodeQuota::node_free() const {
  const std::uint64_t used = header_->used.load();
  return used < budget_ ? budget_ - used : 0;
}

void NodeQuota::publish_demand(std::uint64_t bytes) {
  if (slots_[rank_].demand.exchange(bytes) == bytes) return;
  header_->version.fetch_add(1);
  futex_wake_all(header_->version);
}

bool NodeQuota::acquire(std::uint64_t bytes) {
  Slot& me = slots_[rank_];
  if (me.held.load() + bytes > limit()) return false;
  std::uint64_t used = header_->used.load();
  do {
    if (used + bytes > budget_ || used + bytes < used) return false;
  } while (!header_->used.compare_exchange_weak(used, used + bytes));
  me.held.fetch_add(bytes);
  return true;
}

void NodeQuota::release(std::uint64_t bytes) {
  slots_[rank_].held.fetch_sub(bytes);
  header_->used.fetch_sub(bytes);
}

std::uint64_t NodeQuota::version() const { return header_->version.load(); }

}  // namespace mlbs::mpi
