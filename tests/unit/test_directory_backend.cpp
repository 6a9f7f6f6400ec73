// Tests of the directory tier behind the backend registry: probing, object
// write/commit/read, removal and error labelling (src/tiers/).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/registry.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::Tier;
using mlbs::tiers::Backend;
using mlbs::tiers::make_backend;
using mlbs::tiers::ObjectRef;

// The pread backend; the io_uring one has its own tests (test_uring_backend.cpp).
std::unique_ptr<Backend> dir_tier(const std::string& path) {
  Tier desc = Tier::directory(path);
  desc.io_backend = mlbs::IoBackend::pread;
  return make_backend(1, desc);
}

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + 3) & 0xff);
  return v;
}

std::size_t open_fds() {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator("/proc/self/fd"), {}));
}

/// One object of store "u" in space "u.space".
struct Fixture {
  mlbs::test::TempDir dir;
  std::string root = dir / "tier";
  std::unique_ptr<Backend> tier = dir_tier(root);
  std::string space = "u.space", store = "u";
  ObjectRef ref{space, 42, 3, store};
  Fixture() {
    tier->probe();
    tier->create_space(space);
  }
  void put(const std::vector<std::byte>& data) {
    auto w = tier->create(ref, data.size());
    w->write(0, data.data(), data.size());
    w->commit(false);
  }
};

// probe() creates the tier's own folder when its parent exists.
TEST(DirectoryBackend, ProbeCreatesFinalFolder) {
  mlbs::test::TempDir dir;
  auto tier = dir_tier(dir / "new");
  tier->probe();
  EXPECT_TRUE(fs::is_directory(dir.path() / "new"));
}

// probe() accepts a tier path written with a trailing slash and creates that folder.
TEST(DirectoryBackend, ProbeCreatesFinalFolderWithTrailingSlash) {
  mlbs::test::TempDir dir;
  auto tier = dir_tier(dir / "new/");
  EXPECT_NO_THROW(tier->probe());
  EXPECT_TRUE(fs::is_directory(dir.path() / "new"));
}

// probe() does not create missing parents: TierError with ENOENT, nothing created.
TEST(DirectoryBackend, ProbeRefusesMissingParent) {
  mlbs::test::TempDir dir;
  auto tier = dir_tier(dir / "no/such/tier");
  try {
    tier->probe();
    FAIL() << "expected TierError";
  } catch (const mlbs::TierError& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "no"));
}

// A regular file as tier path is a TierError (ENOTDIR).
TEST(DirectoryBackend, ProbeRejectsFile) {
  mlbs::test::TempDir dir;
  std::ofstream(dir / "file") << "x";
  auto tier = dir_tier(dir / "file");
  try {
    tier->probe();
    FAIL() << "expected TierError";
  } catch (const mlbs::TierError& e) {
    EXPECT_EQ(e.error_code(), ENOTDIR);
  }
}

// An unwritable tier folder is a TierError (EACCES).
TEST(DirectoryBackend, ProbeRejectsUnwritableFolder) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores permission bits";
  mlbs::test::TempDir dir;
  fs::create_directory(dir.path() / "ro");
  ::chmod((dir / "ro").c_str(), 0500);
  auto tier = dir_tier(dir / "ro");
  EXPECT_THROW(tier->probe(), mlbs::TierError);
  ::chmod((dir / "ro").c_str(), 0700);
}

// Errors name the tier: "tier 1 (directory <path>)" both in context() and what().
TEST(DirectoryBackend, ErrorsNameTheTier) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "no/such";
  auto tier = dir_tier(path);
  const std::string label = "tier 1 (directory " + path + ")";
  EXPECT_EQ(tier->label(), label);
  try {
    tier->probe();
    FAIL() << "expected TierError";
  } catch (const mlbs::TierError& e) {
    EXPECT_EQ(e.context().tier, label);
    EXPECT_NE(std::string(e.what()).find(label), std::string::npos) << e.what();
  }
}

// An object written in several chunks, committed, reads back byte for byte, also in chunks.
TEST(DirectoryBackend, WriteCommitReadRoundTrip) {
  Fixture f;
  const auto data = pattern(100'000);
  {
    auto w = f.tier->create(f.ref, data.size());
    for (std::size_t off = 0; off < data.size(); off += 30'000)
      w->write(off, data.data() + off, std::min<std::size_t>(30'000, data.size() - off));
    w->commit(true);
  }
  std::vector<std::byte> back(data.size());
  auto r = f.tier->open(f.ref, data.size());
  r->read(50'000, back.data() + 50'000, 50'000);  // out of order on purpose
  r->read(0, back.data(), 50'000);
  EXPECT_EQ(back, data);
}

// Objects of different generations of one id are separate files.
TEST(DirectoryBackend, GenerationsAreDistinctObjects) {
  Fixture f;
  f.put(pattern(10));
  ObjectRef newer{f.space, f.ref.id, f.ref.generation + 1, f.store};
  auto w = f.tier->create(newer, 20);
  w->write(0, pattern(20).data(), 20);
  w->commit(false);
  EXPECT_NO_THROW(f.tier->open(f.ref, 10));
  EXPECT_NO_THROW(f.tier->open(newer, 20));
}

// Opening with the wrong expected size is a SizeMismatchError naming store, id and tier.
TEST(DirectoryBackend, WrongSizeIsSizeMismatch) {
  Fixture f;
  f.put(pattern(4096));
  try {
    f.tier->open(f.ref, 4095);
    FAIL() << "expected SizeMismatchError";
  } catch (const mlbs::SizeMismatchError& e) {
    EXPECT_EQ(e.context().store, "u");
    EXPECT_EQ(e.context().id, 42u);
    EXPECT_EQ(e.context().tier, f.tier->label());
  }
}

// A refused open (size mismatch) does not leak its file descriptor.
TEST(DirectoryBackend, SizeMismatchDoesNotLeakDescriptor) {
  Fixture f;
  f.put(pattern(100));
  const std::size_t before = open_fds();
  for (int i = 0; i < 8; ++i) EXPECT_THROW(f.tier->open(f.ref, 99), mlbs::SizeMismatchError);
  EXPECT_EQ(open_fds(), before);
}

// Reading past the end of an object is an error, not a silent short read.
TEST(DirectoryBackend, ReadPastEndThrows) {
  Fixture f;
  f.put(pattern(100));
  auto r = f.tier->open(f.ref, 100);
  std::vector<std::byte> buf(50);
  EXPECT_THROW(r->read(80, buf.data(), buf.size()), mlbs::IoError);
}

// Opening an object that does not exist is a typed error naming the id.
TEST(DirectoryBackend, OpenMissingObjectThrows) {
  Fixture f;
  try {
    f.tier->open(f.ref, 1);
    FAIL() << "expected an error";
  } catch (const mlbs::Error& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
    EXPECT_EQ(e.context().id, 42u);
  }
}

// A writer destroyed without commit() leaves no file behind.
TEST(DirectoryBackend, UncommittedWriterLeavesNoFile) {
  Fixture f;
  {
    auto w = f.tier->create(f.ref, 100);
    w->write(0, pattern(100).data(), 100);
  }
  EXPECT_EQ(mlbs::test::stored_records(f.root), 0u);
  EXPECT_THROW(f.tier->open(f.ref, 100), mlbs::Error);
}

// A committed object is one .rec file inside the space folder.
TEST(DirectoryBackend, CommittedObjectIsOneFile) {
  Fixture f;
  f.put(pattern(10));
  EXPECT_EQ(mlbs::test::stored_records(fs::path(f.root) / f.space), 1u);
  EXPECT_EQ(f.tier->space_path(f.space), (fs::path(f.root) / f.space).string());
}

// remove() deletes an object, and removing one that is not there is fine.
TEST(DirectoryBackend, RemoveIsIdempotent) {
  Fixture f;
  f.put(pattern(10));
  f.tier->remove(f.ref);
  EXPECT_EQ(mlbs::test::stored_records(f.root), 0u);
  EXPECT_NO_THROW(f.tier->remove(f.ref));
}

// remove_space() removes the space folder and everything in it, leaving the tier folder.
TEST(DirectoryBackend, RemoveSpaceRemovesEverything) {
  Fixture f;
  for (std::uint64_t id = 0; id < 5; ++id) {
    ObjectRef r{f.space, id, 1, f.store};
    auto w = f.tier->create(r, 1);
    w->write(0, pattern(1).data(), 1);
    w->commit(false);
  }
  std::ofstream(fs::path(f.root) / f.space / "stray.tmp") << "x";
  f.tier->remove_space(f.space);
  EXPECT_FALSE(fs::exists(fs::path(f.root) / f.space));
  EXPECT_TRUE(fs::is_directory(f.root));
  EXPECT_NO_THROW(f.tier->remove_space(f.space));  // a missing space is fine too
}

// Writing into a space that was never created is a typed error naming the tier.
TEST(DirectoryBackend, CreateInMissingSpaceThrows) {
  Fixture f;
  std::string other = "nope";
  ObjectRef r{other, 1, 1, f.store};
  try {
    f.tier->create(r, 1);
    FAIL() << "expected TierError";
  } catch (const mlbs::TierError& e) {
    EXPECT_EQ(e.context().tier, f.tier->label());
  }
}

// make_backend() knows "directory" and rejects unknown kinds with a ConfigError.
TEST(DirectoryBackend, UnknownKindIsConfigError) {
  Tier t = Tier::directory("/tmp");
  t.kind = "tape";
  try {
    make_backend(2, t);
    FAIL() << "expected ConfigError";
  } catch (const mlbs::ConfigError& e) {
    EXPECT_EQ(e.field(), "tiers[2].kind");
    EXPECT_NE(std::string(e.what()).find("tape"), std::string::npos);
  }
  const auto kinds = mlbs::tiers::registered_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "directory"), kinds.end());
}

}  // namespace

namespace {
// parse_object_file_name inverts object_file_name and refuses every other name.
TEST(DirectoryBackend, ObjectFileNamesParseBack) {
  for (const auto& [id, gen] : {std::pair<std::uint64_t, std::uint64_t>{0, 1}, {42, 11}, {~0ull, ~0ull}}) {
    const auto parsed = mlbs::tiers::parse_object_file_name(mlbs::tiers::object_file_name(id, gen));
    ASSERT_TRUE(parsed) << id << "-" << gen;
    EXPECT_EQ(*parsed, std::pair(id, gen));
  }
  for (const char* other : {"journal.mlbs", "LOCK", "log-0.idx", "2a-b.rec", "000000000000002a-.rec",
                            "000000000000002a-b.recx", "000000000000002a-xyz.rec", "000000000000002a-b"})
    EXPECT_FALSE(mlbs::tiers::parse_object_file_name(other)) << other;
}
}  // namespace

// Every MPI rank probes the same tier paths while the others create their
// scratch spaces: a scan must never take a space being created for a dead
// runtime's (its owner lock is held from the moment it is visible).
TEST(DirectoryBackend, ScanForAbandonedScratchNeverRemovesASpaceBeingCreated) {
  mlbs::test::TempDir dir;
  auto creator = dir_tier(dir.path().string());
  creator->probe();
  std::vector<std::string> spaces;
  {
    std::jthread scanner([&](std::stop_token st) {
      auto other = dir_tier(dir.path().string());
      while (!st.stop_requested()) other->probe();  // probe() scans for abandoned scratch spaces
    });
    for (int i = 0; i < 300; ++i) {
      spaces.push_back("s.rank-0." + std::to_string(i) + ".scratch");
      EXPECT_NO_THROW(creator->create_space(spaces.back())) << spaces.back();
    }
  }  // the scanner stops and is joined here
  for (const auto& s : spaces) EXPECT_TRUE(std::filesystem::exists(dir.path() / s)) << s << " was removed";
}
