// mlbs fuzz targets: what they share. A target checks the contract of what it
// fuzzes, not only that nothing crashes: a violation aborts, so libFuzzer
// reports it and keeps the input (docs/fuzzing.md).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>

namespace mlbs::fuzz {

/// A broken promise: says which and aborts.
[[noreturn]] inline void violated(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "\nmlbs fuzz: contract violated: %.*s%s%.*s\n", static_cast<int>(what.size()), what.data(),
               detail.empty() ? "" : ": ", static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, std::string_view what) {
  if (!ok) violated(what);
}

struct NoInspection {
  template <class E>
  void operator()(const E&) const noexcept {}
};

/// Runs `body`. True if it returns; false if it throws `Allowed` (handed to
/// `inspect`, which checks the error itself). Any other exception is a violation.
template <class Allowed, class Body, class Inspect = NoInspection>
bool completes(std::string_view what, Body&& body, Inspect&& inspect = {}) {
  try {
    body();
    return true;
  } catch (const Allowed& e) {
    inspect(e);
    return false;
  } catch (const std::exception& e) {
    violated(std::string(what) + " threw an undocumented " + typeid(e).name(), e.what());
  } catch (...) {
    violated(std::string(what) + " threw a non-standard exception");
  }
}

/// Runs `body`, which must not throw at all.
template <class Body>
void must_not_throw(std::string_view what, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    violated(std::string(what) + " threw " + typeid(e).name(), e.what());
  } catch (...) {
    violated(std::string(what) + " threw a non-standard exception");
  }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A folder of this process's own, mlbs-fuzz-<pid>, on /dev/shm where it can
/// be (the file targets fsync, which costs nothing on tmpfs), else $TMPDIR.
/// Removed at exit; those of processes that died (a crash, a timeout) are
/// removed by the next one.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed: the atexit handler below runs after static destructors
  // registered later would have.
  static const std::filesystem::path* const dir = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                        ? fs::path("/dev/shm")
                        : fs::temp_directory_path();
    constexpr std::string_view prefix = "mlbs-fuzz-";
    for (const auto& e : fs::directory_iterator(base, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with(prefix)) continue;
      const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
    }
    fs::path d = base / (std::string(prefix) + std::to_string(::getpid()));
    fs::remove_all(d, ec);
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(scratch_dir(), ignored);
    });
    return new fs::path(std::move(d));
  }();
  return *dir;
}

inline void write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) violated("the fuzz harness cannot write", path.string());
}

}  // namespace mlbs::fuzz
