#include "intercept/paths.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "intercept/real.hpp"

namespace mlbs::intercept {

std::string normalize(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    const std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j;
  }
  std::string out;
  for (std::string_view p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

std::optional<std::string> absolute(int dirfd, const char* path) {
  if (!path) return std::nullopt;
  if (path[0] == '/') return normalize(path);
  std::string base;
  if (dirfd == AT_FDCWD) {
    char buf[PATH_MAX];
    if (!::getcwd(buf, sizeof buf)) return std::nullopt;
    base = buf;
  } else {
    char link[64], buf[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    const ssize_t n = real::readlink(link, buf, sizeof buf - 1);
    if (n <= 0 || buf[0] != '/') return std::nullopt;
    base.assign(buf, static_cast<std::size_t>(n));
  }
  return normalize(base + "/" + path);
}

Folder::Folder(const std::string& path) : given_(normalize(path)) {
  if (char* r = ::realpath(given_.c_str(), nullptr)) {
    resolved_ = r;
    ::free(r);
  }
}

namespace {
bool under(const std::string& abs, const std::string& root, bool strictly) {
  if (root.empty()) return false;
  if (root == "/") return !strictly || abs.size() > 1;
  if (abs.compare(0, root.size(), root) != 0) return false;
  if (abs.size() == root.size()) return !strictly;
  return abs[root.size()] == '/';
}
}  // namespace

namespace {
/// The path has no "//" and no "/." (so no "/./", "/../", nor a trailing
/// "/." or "/.."): it is normalised already, as most paths programs pass
/// are. (A hidden file's "/." counts too: such a path takes the full test.)
bool plain(const char* p) { return !std::strstr(p, "//") && !std::strstr(p, "/."); }
bool starts(const char* p, const std::string& root) {
  return !root.empty() && std::strncmp(p, root.c_str(), root.size()) == 0 &&
         (p[root.size()] == '/' || p[root.size()] == '\0' || root == "/");
}
}  // namespace

bool Folder::may_hold(const char* path, const std::string& cwd) const {
  if (given_.empty() || !path) return false;
  if (path[0] == '/') return starts(path, given_) || starts(path, resolved_) || !plain(path);
  // Relative: below the folder only if the working directory is in it, or
  // above it, or the path climbs ("..").
  if (std::strstr(path, "..")) return true;
  const auto above = [&](const std::string& root) {
    return !root.empty() && (root.compare(0, cwd.size(), cwd) == 0 || cwd.compare(0, root.size(), root) == 0);
  };
  return cwd.empty() || above(given_) || above(resolved_);
}

bool Folder::holds(const std::string& abs) const {
  return under(abs, given_, false) || (resolved_ != given_ && under(abs, resolved_, false));
}

bool Folder::inside(const std::string& abs) const {
  return under(abs, given_, true) || (resolved_ != given_ && under(abs, resolved_, true));
}

}  // namespace mlbs::intercept
