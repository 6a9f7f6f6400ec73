// Test helper: holds a helper thread inside one operation on record `id` of
// tier `tier` until the test opens the gate, so a test can act while that
// record is busy, deterministically (no sleeping). A test's gated backend
// calls pass() where it wants the helper held; the gate is inert until
// armed, and the test thread's own calls (recovery, direct reads) pass freely.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace mlbs::test {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false, entered = false, open = false;
  int tier = -1;
  std::uint64_t id = 0;
  std::thread::id owner;  // the test thread

  void arm(int t, std::uint64_t i) {
    std::lock_guard l(mu);
    armed = true;
    entered = open = false;
    tier = t;
    id = i;
    owner = std::this_thread::get_id();
  }
  void pass(int t, std::uint64_t i) {
    std::unique_lock l(mu);
    if (!armed || t != tier || i != id || std::this_thread::get_id() == owner) return;
    armed = false;
    entered = true;
    cv.notify_all();
    cv.wait(l, [&] { return open; });
  }
  /// Until a helper is held; false if none was within `limit`.
  bool wait_entered(std::chrono::seconds limit = std::chrono::seconds(600)) {
    std::unique_lock l(mu);
    return cv.wait_for(l, limit, [&] { return entered; });
  }
  void release() {
    std::lock_guard l(mu);
    armed = false;
    open = true;
    cv.notify_all();
  }
};

/// The one gate of a test process.
inline Gate& gate() {
  static Gate g;
  return g;
}

}  // namespace mlbs::test
