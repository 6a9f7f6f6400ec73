// Test helper: a call that must throw one typed error whose message names
// what went wrong (store, id, tier, field), and optionally its errno.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <typeinfo>

namespace mlbs::test {

/// Runs `f` expecting an exception of type E whose what() contains every needle.
template <class E>
void expect_error(const std::function<void()>& f, std::initializer_list<std::string> needles, int errno_value = 0) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what << "\n  lacks: " << n;
    if (errno_value) {
      EXPECT_EQ(e.error_code(), errno_value) << what;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got: " << e.what();
  }
}

}  // namespace mlbs::test
