// mlbs — which paths mlbs-run intercepts: the program's paths made absolute
// (against its working directory or an openat() directory descriptor) and
// normalised lexically ("." and ".." resolved, no symbolic links followed),
// then compared with the intercepted folder. Pure apart from reading the
// working directory and descriptor paths.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mlbs::intercept {

/// `path` with "." and ".." resolved and repeated slashes folded, lexically;
/// absolute in, absolute out ("/" for the root).
std::string normalize(std::string_view path);

/// `path` made absolute: as is when it is, else against the working
/// directory (dirfd AT_FDCWD) or the folder `dirfd` names; then normalised.
/// None when the base cannot be read (a descriptor that is not a folder).
std::optional<std::string> absolute(int dirfd, const char* path);

/// The intercepted folder, as given (made absolute) and as the file system
/// resolves it (symbolic links): a path under either is intercepted.
class Folder {
 public:
  Folder() = default;
  explicit Folder(const std::string& path);
  /// `abs` (normalised) is the folder or below it.
  bool holds(const std::string& abs) const;
  /// False when `path`, as the program gave it, cannot lie below the folder
  /// (cheap: no allocation); true when it may, and absolute() must tell.
  /// `cwd`: the working directory, for a relative path.
  bool may_hold(const char* path, const std::string& cwd) const;
  /// `abs` lies strictly below it (a file or folder inside, not the folder itself).
  bool inside(const std::string& abs) const;
  const std::string& path() const noexcept { return given_; }
  bool empty() const noexcept { return given_.empty(); }

 private:
  std::string given_, resolved_;
};

}  // namespace mlbs::intercept
