// Test helper: a fresh folder per test under $MLBS_TEST_TMP (or /tmp), removed after.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "tiers/directory/layout.hpp"

namespace mlbs::test {

/// A fresh, empty folder under $MLBS_TEST_TMP (or /tmp) named after the
/// running test, `tag` and this process.
inline std::filesystem::path fresh_test_folder(const std::string& tag = "") {
  const char* base = std::getenv("MLBS_TEST_TMP");
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "mlbs";
  for (char& c : name)
    if (c == '/') c = '_';
  auto path = std::filesystem::path(base ? base : "/tmp") / (name + tag + "." + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

class TempDir {
 public:
  TempDir() : path_(fresh_test_folder()) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& sub) const { return (path_ / sub).string(); }

 private:
  std::filesystem::path path_;
};

/// Record copies stored below `dir` in either layout (.rec files, live log
/// index entries): what a tier holds on disk.
inline std::size_t stored_records(const std::filesystem::path& dir) {
  return mlbs::tiers::count_stored_objects(dir);
}

}  // namespace mlbs::test
