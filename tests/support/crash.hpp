// Test helper: a crash, as far as a store can tell — work done in a child
// process that then dies without running any destructor (no drain, no close).
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

namespace mlbs::test {

/// Runs `body` in a forked child that then _exit()s; fails the test when the
/// child failed before its simulated crash.
template <class F>
void crash_after(F body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 3;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child failed before its simulated crash";
}

}  // namespace mlbs::test
