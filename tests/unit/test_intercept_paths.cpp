// Which paths transparent mode intercepts (src/intercept/paths.*): lexical
// normalisation, relative paths against the working directory or an
// openat() folder, and the folder test (the folder itself is not a file in it).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "intercept/paths.hpp"
#include "support/temp_dir.hpp"


namespace {

using mlbs::intercept::absolute;
using mlbs::intercept::Folder;
using mlbs::intercept::normalize;

// "." and ".." are resolved and slashes folded, lexically; ".." never climbs above the root.
TEST(InterceptPaths, NormalizeIsLexical) {
  EXPECT_EQ(normalize("/a/b/../c/./d//e/"), "/a/c/d/e");
  EXPECT_EQ(normalize("/../.."), "/");
  EXPECT_EQ(normalize("/"), "/");
  EXPECT_EQ(normalize("//x"), "/x");
}

// A relative path is made absolute against the working directory or the folder an openat() descriptor names.
TEST(InterceptPaths, RelativePathsAgainstTheirBase) {
  mlbs::test::TempDir dir;
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(absolute(AT_FDCWD, "x/../y"), normalize(std::string(cwd) + "/y"));
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(absolute(fd, "sub/file"), normalize(dir.path().string() + "/sub/file"));
  EXPECT_EQ(absolute(fd, "/abs/path"), "/abs/path");
  ::close(fd);
  EXPECT_FALSE(absolute(123456, "rel")) << "a descriptor that is not open names no base";
}

// A folder holds itself and what lies below it; "inside" means strictly below; a sibling with the same prefix is out.
TEST(InterceptPaths, FolderTests) {
  mlbs::test::TempDir dir;
  const Folder f(dir.path().string() + "/run/.");
  const std::string root = dir.path().string() + "/run";
  EXPECT_EQ(f.path(), root);
  EXPECT_TRUE(f.holds(root));
  EXPECT_FALSE(f.inside(root));
  EXPECT_TRUE(f.inside(root + "/a/b.npy"));
  EXPECT_FALSE(f.inside(root + "2/a"));
  EXPECT_FALSE(f.inside("/elsewhere"));
  EXPECT_TRUE(Folder("/").inside("/anything"));
}

// The allocation-free first test never turns away a path the folder holds (it may let others through).
TEST(InterceptPaths, MayHoldKeepsEveryPathTheFolderHolds) {
  const Folder f("/scratch/run");
  EXPECT_TRUE(f.may_hold("/scratch/run/a.npy", "/home"));
  EXPECT_TRUE(f.may_hold("/scratch/run", "/home"));
  EXPECT_TRUE(f.may_hold("/scratch/x/../run/a", "/home")) << "not normalised: left to the full test";
  EXPECT_TRUE(f.may_hold("/scratch//run/a", "/home"));
  EXPECT_FALSE(f.may_hold("/scratch/run2/a", "/home"));
  EXPECT_FALSE(f.may_hold("/usr/lib/libm.so", "/home"));
  EXPECT_TRUE(f.may_hold("a.npy", "/scratch/run")) << "the working directory is the folder";
  EXPECT_TRUE(f.may_hold("a.npy", "/scratch/run/sub"));
  EXPECT_TRUE(f.may_hold("run/a.npy", "/scratch")) << "the working directory is above the folder";
  EXPECT_TRUE(f.may_hold("../scratch/run/a", "/home"));
  EXPECT_FALSE(f.may_hold("a.npy", "/home"));
  EXPECT_FALSE(f.may_hold(nullptr, "/home"));
}

}  // namespace
