#include "tiers/directory/io_select.hpp"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "tiers/directory/directory_backend.hpp"
#ifdef MLBS_HAVE_IO_URING
#include "tiers/uring/uring_backend.hpp"
#endif

namespace mlbs::tiers {
namespace {

/// MLBS_TEST_IO_BACKEND, when set: what `auto` stands for.
std::optional<IoBackend> test_auto_backend() {
  const char* v = std::getenv("MLBS_TEST_IO_BACKEND");
  if (!v || !*v) return std::nullopt;
  return parse_io_backend(v, "MLBS_TEST_IO_BACKEND");
}

}  // namespace

namespace hooks {
int simulated_uring_failure() noexcept {
  const char* v = std::getenv("MLBS_TEST_URING_FAIL");
  if (!v || !*v) return 0;
  const std::string_view s = v;
  if (s == "0") return 0;
  if (s == "EPERM") return EPERM;
  if (s == "ENOMEM") return ENOMEM;
  return ENOSYS;
}

std::optional<Layout> test_layout() {
  const char* v = std::getenv("MLBS_TEST_LAYOUT");
  if (!v || !*v) return std::nullopt;
  return parse_layout(v, "MLBS_TEST_LAYOUT");
}

bool simulated_odirect_failure() noexcept {
  const char* v = std::getenv("MLBS_TEST_ODIRECT_FAIL");
  return v && *v && std::string_view(v) != "0";
}
}  // namespace hooks

bool io_uring_compiled() noexcept {
#ifdef MLBS_HAVE_IO_URING
  return true;
#else
  return false;
#endif
}

int io_uring_setup_error() noexcept {
#ifdef MLBS_HAVE_IO_URING
  return uring::setup_error(Tier{}.queue_depth);
#else
  return ENOTSUP;
#endif
}

std::unique_ptr<Backend> make_directory_backend(int index, const Tier& desc) {
  IoBackend want = desc.io_backend;
  if (want == IoBackend::automatic)
    if (const auto forced = test_auto_backend(); forced && !desc.page_cache) want = *forced;
  if (want == IoBackend::pread) return std::make_unique<DirectoryBackend>(index, desc);
  const bool required = want == IoBackend::io_uring;
  auto refuse = [&](int err, const std::string& why) -> std::unique_ptr<Backend> {
    auto pread = std::make_unique<DirectoryBackend>(index, desc, why);
    if (required)
      throw TierError(err, fmt::format("io_backend = io_uring cannot be honoured: {}", why),
                      {{}, {}, pread->label()});
    return pread;
  };
  // A tier that asks for the page cache gets buffered I/O.
  if (desc.page_cache) return refuse(EINVAL, "page_cache = true needs buffered I/O (pread)");
#ifdef MLBS_HAVE_IO_URING
  return std::make_unique<uring::UringDirectoryBackend>(index, desc, required);
#else
  return refuse(ENOTSUP, "this mlbs was built without io_uring (MLBS_ENABLE_IO_URING=OFF or no liburing)");
#endif
}

}  // namespace mlbs::tiers
