#include "tiers/tier_folder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace mlbs::tiers {
namespace fs = std::filesystem;

fs::path normalised_tier_path(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

FolderProblem prepare_tier_folder(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    // The nearest part of the path that exists says what is wrong with it.
    const fs::path absolute = fs::absolute(root, ec);
    fs::path existing = absolute.parent_path();
    while (!existing.empty() && existing != existing.root_path() && !fs::exists(existing, ec))
      existing = existing.parent_path();
    if (fs::exists(existing, ec) && !fs::is_directory(existing, ec))
      return {ENOTDIR, fmt::format("{} is a file, not a folder (in the tier path {})", existing.string(),
                                   root.string())};
    const fs::path parent = absolute.parent_path();
    if (!fs::is_directory(parent, ec))
      return {ENOENT, fmt::format("parent folder {} of the tier path does not exist", parent.string())};
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
      return {errno, fmt::format("cannot create {}", root.string())};
  }
  if (!fs::is_directory(root, ec)) return {ENOTDIR, fmt::format("{} is a file, not a folder", root.string())};
  if (::access(root.c_str(), W_OK | X_OK) != 0) return {errno, fmt::format("{} is not writable", root.string())};
  return {};
}

}  // namespace mlbs::tiers
