// Tests of the log layout of directory tiers (src/tiers/directory/log_layout.cpp):
// one append-only log per writing thread plus its index, hole punching,
// reopening, torn index entries. Run on the pread and io_uring backends.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mlbs/config.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "support/temp_dir.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/directory/layout.hpp"
#include "tiers/registry.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::IoBackend;
using mlbs::Tier;
using mlbs::tiers::Backend;
using mlbs::tiers::ObjectRef;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 12)) & 0xff);
  return v;
}

std::uint64_t allocated_bytes(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
}

std::size_t files_ending(const fs::path& dir, const std::string& ext) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ext;
  return n;
}

/// A log-layout tier on the backend the parameter names, space "u.space".
class LogLayout : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::io_uring) {
      if (!mlbs::tiers::io_uring_compiled()) GTEST_SKIP() << "built without io_uring";
      if (int err = mlbs::tiers::io_uring_setup_error())
        GTEST_SKIP() << "io_uring unavailable here: " << std::strerror(err);
    }
    tier = fresh();
  }
  std::unique_ptr<Backend> fresh() {
    Tier desc = Tier::directory(root);
    desc.io_backend = GetParam();
    desc.layout = mlbs::Layout::log;
    desc.io_request_bytes = 64 << 10;
    auto t = mlbs::tiers::make_backend(1, desc);
    t->probe();
    t->create_space(space);
    return t;
  }
  ObjectRef ref(std::uint64_t id, std::uint64_t gen = 1) const { return {space, id, gen, store}; }
  /// Writes in pieces of `piece` bytes from aligned memory, as the engine does.
  void put(Backend& t, const ObjectRef& r, const std::vector<std::byte>& data, std::size_t piece = 1 << 20,
           bool durable = false) {
    auto src = mlbs::detail::Block::allocate(std::max<std::size_t>(data.size(), 1));
    if (!data.empty()) std::memcpy(src.data(), data.data(), data.size());
    auto w = t.create(r, data.size());
    for (std::size_t off = 0; off < data.size(); off += piece)
      w->write(off, src.data() + off, std::min(piece, data.size() - off));
    w->commit(durable);
  }
  std::vector<std::byte> get(Backend& t, const ObjectRef& r, std::size_t size) {
    auto dst = mlbs::detail::Block::allocate(std::max<std::size_t>(size, 1));
    t.open(r, size)->read(0, dst.data(), size);
    return {dst.data(), dst.data() + size};
  }
  fs::path space_dir() const { return fs::path(root) / space; }

  mlbs::test::TempDir dir;
  std::string root = dir / "tier";
  std::string space = "u.space", store = "u";
  std::unique_ptr<Backend> tier;
};

// Objects of odd sizes written by one thread share one log (and one index) and read back byte-exact.
TEST_P(LogLayout, OneThreadAppendsToOneLogAndReadsBackExact) {
  const std::vector<std::size_t> sizes = {1, 4095, 4096, 4097, 100000, 0, (3 << 20) + 123};
  for (std::size_t i = 0; i < sizes.size(); ++i) put(*tier, ref(i), pattern(sizes[i], unsigned(i)), 1 << 20);
  EXPECT_EQ(files_ending(space_dir(), ".mlbs"), 1u);
  EXPECT_EQ(files_ending(space_dir(), ".idx"), 1u);
  EXPECT_EQ(files_ending(space_dir(), ".rec"), 0u);
  EXPECT_EQ(mlbs::tiers::count_stored_objects(space_dir()), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i)
    EXPECT_EQ(get(*tier, ref(i), sizes[i]), pattern(sizes[i], unsigned(i))) << "object " << i;
}

// Two writing threads (two helpers) append to two logs; each object reads back from the other thread.
TEST_P(LogLayout, EachWritingThreadHasItsOwnLog) {
  auto writer = [&](std::uint64_t first) {
    for (std::uint64_t id = first; id < first + 8; ++id) put(*tier, ref(id), pattern(50000, unsigned(id)), 16384);
  };
  std::thread a(writer, 0), b(writer, 100);
  a.join();
  b.join();
  EXPECT_EQ(files_ending(space_dir(), ".mlbs"), 2u);
  for (std::uint64_t id : {0, 7, 100, 107}) EXPECT_EQ(get(*tier, ref(id), 50000), pattern(50000, unsigned(id)));
}

// Removing an object punches its blocks out of the log; removing the last one cuts log and index back to empty.
TEST_P(LogLayout, RemovalFreesBlocksAndAnEmptyLogStartsOver) {
  for (std::uint64_t id = 0; id < 4; ++id) put(*tier, ref(id), pattern(1 << 20, unsigned(id)));
  const fs::path log = space_dir() / "log-0.mlbs";
  const std::uint64_t before = allocated_bytes(log);
  ASSERT_GE(before, 4u << 20);
  tier->remove(ref(1));
  tier->remove(ref(1));  // not there any more: not an error
  EXPECT_LE(allocated_bytes(log), before - (1u << 20)) << "no hole punched";
  EXPECT_EQ(get(*tier, ref(2), 1 << 20), pattern(1 << 20, 2));
  EXPECT_THROW(tier->open(ref(1), 1 << 20), mlbs::TierError);
  for (std::uint64_t id : {0, 2, 3}) tier->remove(ref(id));
  EXPECT_EQ(fs::file_size(log), 0u);
  EXPECT_EQ(fs::file_size(space_dir() / "log-0.idx"), 0u);
  put(*tier, ref(9), pattern(5000, 9));  // appends from the start again
  EXPECT_EQ(fs::file_size(log), 8192u);
  EXPECT_EQ(get(*tier, ref(9), 5000), pattern(5000, 9));
}

// A writer dropped before commit leaves no object, and its room is taken back.
TEST_P(LogLayout, UncommittedWriterLeavesNothing) {
  put(*tier, ref(1), pattern(10000, 1));
  {
    auto w = tier->create(ref(2), 1 << 20);
    const auto data = pattern(1 << 20, 2);
    auto src = mlbs::detail::Block::allocate(data.size());
    std::memcpy(src.data(), data.data(), data.size());
    w->write(0, src.data(), 65536);
  }
  EXPECT_THROW(tier->open(ref(2), 1 << 20), mlbs::TierError);
  EXPECT_EQ(mlbs::tiers::count_stored_objects(space_dir()), 1u);
  put(*tier, ref(3), pattern(4096, 3));
  const auto where = mlbs::tiers::locate_stored_object(space_dir(), 3, 1);
  EXPECT_EQ(where.offset, 12288u) << "the abandoned extent was not taken back";
  EXPECT_EQ(get(*tier, ref(3), 4096), pattern(4096, 3));
}

// A size other than the index's is a SizeMismatchError naming the log; an unknown object a TierError.
TEST_P(LogLayout, WrongSizeAndUnknownObjectAreTypedErrors) {
  put(*tier, ref(1), pattern(10000, 1));
  try {
    tier->open(ref(1), 9999);
    FAIL() << "opened with the wrong size";
  } catch (const mlbs::SizeMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("log-0.mlbs"), std::string::npos) << e.what();
    EXPECT_EQ(e.context().id, 1u);
  }
  EXPECT_THROW(tier->open(ref(1, 2), 10000), mlbs::TierError) << "another generation is another object";
}

// A new backend on the same folder finds what the index says (puts minus erases), byte-exact.
TEST_P(LogLayout, ReopenFindsCommittedObjects) {
  for (std::uint64_t id = 0; id < 5; ++id) put(*tier, ref(id), pattern(70000, unsigned(id)), 1 << 20, true);
  tier->remove(ref(3));
  tier.reset();
  auto again = fresh();
  EXPECT_EQ(mlbs::tiers::count_stored_objects(space_dir()), 4u);
  for (std::uint64_t id : {0, 1, 2, 4}) EXPECT_EQ(get(*again, ref(id), 70000), pattern(70000, unsigned(id)));
  EXPECT_THROW(again->open(ref(3), 70000), mlbs::TierError);
  // New objects go to a new log; the old one is deleted once all of its objects are gone.
  put(*again, ref(10), pattern(100, 10));
  EXPECT_EQ(files_ending(space_dir(), ".mlbs"), 2u);
  for (std::uint64_t id : {0, 1, 2, 4}) again->remove(ref(id));
  EXPECT_FALSE(fs::exists(space_dir() / "log-0.mlbs"));
  EXPECT_FALSE(fs::exists(space_dir() / "log-0.idx"));
  EXPECT_EQ(get(*again, ref(10), 100), pattern(100, 10));
}

// Opening a space deletes nothing, even logs with no live object: another runtime may be writing them.
TEST_P(LogLayout, OpeningASpaceDeletesNothing) {
  put(*tier, ref(1), pattern(100, 1));
  tier->remove(ref(1));
  ASSERT_TRUE(fs::exists(space_dir() / "log-0.mlbs"));
  auto other = fresh();
  EXPECT_TRUE(fs::exists(space_dir() / "log-0.mlbs"));
  put(*tier, ref(2), pattern(100, 2));  // the first runtime goes on in its log
  EXPECT_EQ(get(*tier, ref(2), 100), pattern(100, 2));
}

// A corrupt index entry costs only itself; a torn last entry is ignored.
TEST_P(LogLayout, CorruptAndTornIndexEntriesAreSkipped) {
  for (std::uint64_t id = 0; id < 3; ++id) put(*tier, ref(id), pattern(5000, unsigned(id)));
  tier.reset();
  const fs::path idx = space_dir() / "log-0.idx";
  {
    std::fstream f(idx, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(48 + 20);  // inside the second entry
    f.put('\x5a');
  }
  {
    std::ofstream f(idx, std::ios::app | std::ios::binary);
    f.write("torn entry", 10);
  }
  const auto entries = mlbs::tiers::read_log_index(idx);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].id, 0u);
  EXPECT_EQ(entries[1].id, 2u);
  auto again = fresh();
  EXPECT_EQ(get(*again, ref(2), 5000), pattern(5000, 2));
  EXPECT_THROW(again->open(ref(1), 5000), mlbs::TierError);
}

// Logs numbered up to 2^32-1 left by an earlier run are never reused (and cut) by a
// new writer, though the next number wraps there (found by fuzz_log_index).
TEST_P(LogLayout, NewLogNeverTakesTheNumberOfAnExistingOne) {
  put(*tier, ref(1), pattern(5000, 1));
  tier.reset();
  const std::string top = "log-4294967295";
  fs::rename(space_dir() / "log-0.mlbs", space_dir() / (top + ".mlbs"));
  fs::rename(space_dir() / "log-0.idx", space_dir() / (top + ".idx"));
  std::ofstream(space_dir() / "log-4294967294.mlbs").put('x');  // a log without an index holds nothing
  auto again = fresh();
  put(*again, ref(2), pattern(3000, 2));
  EXPECT_EQ(get(*again, ref(1), 5000), pattern(5000, 1));
  EXPECT_EQ(get(*again, ref(2), 3000), pattern(3000, 2));
}

// Entries built with encode_log_index_entry read back field for field; one with a
// flipped byte or an unknown op is skipped, the entries after it are not.
TEST(LogIndex, EncodedEntriesReadBackAndBadOnesAreSkipped) {
  using mlbs::tiers::LogIndexEntry;
  mlbs::test::TempDir dir;
  const LogIndexEntry put{LogIndexEntry::Op::put, 7, 2, 8192, 5000};
  const LogIndexEntry erase{LogIndexEntry::Op::erase, 7, 1, 0, 0};
  const LogIndexEntry bad_op{static_cast<LogIndexEntry::Op>(3), 8, 1, 0, 1};
  std::string bytes;
  for (const LogIndexEntry& e : {put, bad_op, put, erase}) {
    const auto b = mlbs::tiers::encode_log_index_entry(e);
    bytes.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  bytes[2 * mlbs::tiers::kLogIndexEntryBytes + 9] ^= 0x10;  // the second put
  std::ofstream(dir / "log-0.idx", std::ios::binary) << bytes;
  const auto entries = mlbs::tiers::read_log_index(dir / "log-0.idx");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op, put.op);
  EXPECT_EQ(entries[0].id, put.id);
  EXPECT_EQ(entries[0].generation, put.generation);
  EXPECT_EQ(entries[0].offset, put.offset);
  EXPECT_EQ(entries[0].size, put.size);
  EXPECT_EQ(entries[1].op, erase.op);
  EXPECT_EQ(entries[1].generation, erase.generation);
}

INSTANTIATE_TEST_SUITE_P(Backends, LogLayout, ::testing::Values(IoBackend::pread, IoBackend::io_uring),
                         [](const auto& info) { return mlbs::to_string(info.param); });

}  // namespace
