// Fuzzes the log layout's index reader, read_log_index, and what rests on it:
// list_stored_objects and locate_stored_object (mlbs-inspect, tests) and a
// log-layout tier recovering a space (src/tiers/directory/log_layout.cpp).
//
// Each input is tried twice: as the bytes of log-0.idx, and as a recipe that
// builds one or two index files from entries encoded with valid checksums
// (encode_log_index_entry), raw slots and torn tails, so that the fields of
// entries that pass their checksum get fuzzed too.
//
// Contract checked: nothing throws but the tier's typed errors; the reader
// returns every valid entry in order and nothing from an entry with a bad op;
// list_stored_objects names exactly the puts no erase followed and
// locate_stored_object finds each where its entry says; a tier recovering the
// space opens each of those objects (another size is a SizeMismatchError),
// reads its bytes exactly where they are in the log or throws when they are
// not all there; a record written afterwards reads back, the recovered ones
// are unchanged, and removing them all leaves no object listed.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fuzz_support.hpp"
#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/layout.hpp"
#include "tiers/registry.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mlbs::fuzz;
using mlbs::tiers::LogIndexEntry;
using Key = std::pair<std::uint64_t, std::uint64_t>;  // (id, generation)

constexpr std::size_t kEntry = mlbs::tiers::kLogIndexEntryBytes;
constexpr std::uint64_t kMaxRead = 256 << 10;  // objects up to this size are read back
const std::string kSpace = "s.space";
const std::string kStore = "s";

/// What one 48-byte slot of an index was written as.
struct Slot {
  enum Kind { valid, bad_op, raw } kind = raw;
  LogIndexEntry entry{};
};

/// One index file and its log, as the harness writes them.
struct Lane {
  unsigned number = 0;
  std::string index;        ///< the index file's bytes
  std::vector<Slot> slots;  ///< what each whole slot of `index` was written as
  std::uint64_t log_bytes = 0;
};

constexpr std::uint64_t kMaxLog = 256 << 10;

/// The bytes of lane n's log: a pattern from a place that depends on n, so
/// that reading another log than the index names shows.
const std::byte* log_bytes_of(unsigned lane) {
  static const std::vector<std::byte> pattern = [] {
    std::vector<std::byte> p(kMaxLog + 4096);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::byte>((i * 131 + (i >> 12)) & 0xff);
    return p;
  }();
  return pattern.data() + lane % 4096;
}

bool same(const LogIndexEntry& a, const LogIndexEntry& b) {
  return a.op == b.op && a.id == b.id && a.generation == b.generation && a.offset == b.offset && a.size == b.size;
}

/// The input as the bytes of log-0.idx beside a 64 KiB log.
Lane lane_from_bytes(std::string_view bytes) {
  Lane lane;
  lane.index = std::string(bytes);
  lane.slots.resize(bytes.size() / kEntry);
  lane.log_bytes = 64 << 10;
  return lane;
}

/// The input as a recipe for one or two lanes. Ids of the second lane have
/// their top bit set, those of the first have it clear, so that no object
/// is in two logs (which only a lost erase entry can cause).
std::vector<Lane> lanes_from_recipe(FuzzedDataProvider& in) {
  std::vector<Lane> lanes(in.ConsumeBool() ? 2 : 1);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    Lane& lane = lanes[i];
    lane.number = in.ConsumeIntegral<std::uint32_t>();
    if (i == 1 && lane.number == lanes[0].number) lane.number ^= 1;
    lane.log_bytes = in.ConsumeIntegralInRange<std::uint64_t>(0, kMaxLog);
    const int slots = in.ConsumeIntegralInRange(0, 16);
    for (int s = 0; s < slots; ++s) {
      const int kind = in.ConsumeIntegralInRange(0, 3);
      if (kind == 3) {  // a torn tail ends the file
        lane.index += in.ConsumeBytesAsString(in.ConsumeIntegralInRange<std::size_t>(1, kEntry - 1));
        break;
      }
      if (kind == 2) {  // raw bytes: may or may not be a valid entry
        std::string raw = in.ConsumeBytesAsString(kEntry);
        raw.resize(kEntry);
        lane.index += raw;
        lane.slots.push_back({Slot::raw, {}});
        continue;
      }
      LogIndexEntry e;
      const auto op = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint32_t>(1, 2)
                                       : in.ConsumeIntegral<std::uint32_t>();
      e.op = static_cast<LogIndexEntry::Op>(op);
      e.id = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 7) : in.ConsumeIntegral<std::uint64_t>();
      e.id = i == 0 ? e.id & ~(1ull << 63) : e.id | (1ull << 63);
      e.generation =
          in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 3) : in.ConsumeIntegral<std::uint64_t>();
      e.offset = in.ConsumeBool() ? 4096 * in.ConsumeIntegralInRange<std::uint64_t>(0, 64)
                                  : in.ConsumeIntegral<std::uint64_t>();
      e.size =
          in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 64 << 10) : in.ConsumeIntegral<std::uint64_t>();
      const auto bytes = mlbs::tiers::encode_log_index_entry(e);
      lane.index.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      lane.slots.push_back({op == 1 || op == 2 ? Slot::valid : Slot::bad_op, e});
    }
  }
  return lanes;
}

/// read_log_index returns, in order, the entry of every valid slot, nothing
/// for a slot with a bad op, and at most one entry for a raw slot (whether
/// one is valid is not known here): some choice of raw slots must explain
/// the entries exactly. `can[k]`: the slots so far can explain entries[0, k).
void check_read(const Lane& lane, const std::vector<LogIndexEntry>& entries) {
  for (const LogIndexEntry& e : entries)
    check(e.op == LogIndexEntry::Op::put || e.op == LogIndexEntry::Op::erase, "read_log_index returned a bad op");
  std::vector<bool> can(entries.size() + 1, false);
  can[0] = true;
  for (const Slot& slot : lane.slots) {
    if (slot.kind == Slot::bad_op) continue;
    std::vector<bool> next(can.size(), false);
    for (std::size_t k = 0; k < can.size(); ++k) {
      if (!can[k]) continue;
      if (slot.kind == Slot::raw) next[k] = true;
      if (k < entries.size() && (slot.kind == Slot::raw || same(slot.entry, entries[k]))) next[k + 1] = true;
    }
    can = std::move(next);
  }
  check(can.back(), "read_log_index does not return exactly the valid entries of the index, in order");
}

/// Live objects of an index: the puts no erase of the same (id, generation) followed.
std::map<Key, LogIndexEntry> live_objects(const std::vector<LogIndexEntry>& entries) {
  std::map<Key, LogIndexEntry> live;
  for (const LogIndexEntry& e : entries) {
    if (e.op == LogIndexEntry::Op::put) live[{e.id, e.generation}] = e;
    else live.erase({e.id, e.generation});
  }
  return live;
}

std::uint64_t bytes_in_log(std::uint64_t log_bytes, const LogIndexEntry& e) {
  return log_bytes <= e.offset ? 0 : std::min(e.size, log_bytes - e.offset);
}

/// An object lies wholly within its log.
bool readable(std::uint64_t log_bytes, const LogIndexEntry& e) {
  return e.offset <= log_bytes && e.size <= log_bytes - e.offset;
}

std::vector<std::byte> read_object(mlbs::tiers::Backend& tier, const Key& key, std::uint64_t size) {
  std::vector<std::byte> bytes(size);
  tier.open({kSpace, key.first, key.second, kStore}, size)->read(0, bytes.data(), bytes.size());
  return bytes;
}

/// A live object and the lane whose index names it.
struct Object {
  LogIndexEntry entry;
  const Lane* lane;
};
using LiveObjects = std::map<Key, Object>;

/// Writes each lane's index and log into `dir` and checks what
/// read_log_index makes of the index. The live objects of all indexes, or
/// nullopt if one is live in two logs (which log is read is not promised).
std::optional<LiveObjects> write_lanes(const fs::path& dir, const std::vector<Lane>& lanes) {
  LiveObjects live;
  bool duplicates = false;
  for (const Lane& lane : lanes) {
    const fs::path index = dir / fmt::format("log-{}.idx", lane.number);
    write_file(index, {reinterpret_cast<const std::uint8_t*>(lane.index.data()), lane.index.size()});
    write_file(dir / fmt::format("log-{}.mlbs", lane.number),
               {reinterpret_cast<const std::uint8_t*>(log_bytes_of(lane.number)), lane.log_bytes});
    std::vector<LogIndexEntry> entries;
    must_not_throw("read_log_index", [&] { entries = mlbs::tiers::read_log_index(index); });
    check(entries.size() <= lane.index.size() / kEntry, "read_log_index returned more entries than slots");
    check_read(lane, entries);
    for (const auto& [key, e] : live_objects(entries)) duplicates |= !live.try_emplace(key, Object{e, &lane}).second;
  }
  if (duplicates) return std::nullopt;
  return live;
}

/// The tools' view: list_stored_objects names exactly the live objects,
/// locate_stored_object finds each where its index entry says.
void check_tools_view(const fs::path& dir, const LiveObjects& live) {
  std::vector<fs::path> listed;
  must_not_throw("list_stored_objects", [&] { listed = mlbs::tiers::list_stored_objects(dir); });
  std::set<fs::path> expected;
  for (const auto& [key, object] : live) expected.insert(dir / mlbs::tiers::object_file_name(key.first, key.second));
  check(std::set<fs::path>(listed.begin(), listed.end()) == expected && listed.size() == expected.size(),
        "list_stored_objects does not name exactly the live objects of the indexes");
  for (const auto& item : live) {  // clang 14: lambdas cannot capture structured bindings
    const Key& key = item.first;
    const Object& object = item.second;
    mlbs::tiers::StoredObject found;
    must_not_throw("locate_stored_object", [&] { found = mlbs::tiers::locate_stored_object(dir, key.first, key.second); });
    check(found.found && found.file == dir / fmt::format("log-{}.mlbs", object.lane->number) &&
              found.offset == object.entry.offset && found.bytes == bytes_in_log(object.lane->log_bytes, object.entry),
          "locate_stored_object does not find a live object where its index entry says");
  }
}

/// Each live object reads back exactly as its log holds it, or throws a
/// typed error when it does not lie wholly within the log.
void check_reads(mlbs::tiers::Backend& tier, const LiveObjects& live, std::string_view when) {
  for (const auto& item : live) {
    const Key& key = item.first;
    const Object& object = item.second;
    const LogIndexEntry& e = object.entry;
    if (e.size == 0 || e.size > kMaxRead) continue;
    std::vector<std::byte> bytes;
    const bool read = completes<mlbs::Error>(
        "reading a recovered object", [&] { bytes = read_object(tier, key, e.size); },
        [&](const mlbs::Error& error) {
          if (readable(object.lane->log_bytes, e))
            violated(fmt::format("an object wholly inside its log cannot be read {}", when), error.what());
        });
    if (!read) continue;
    check(readable(object.lane->log_bytes, e), "an object that ends beyond its log was read");
    if (std::memcmp(bytes.data(), log_bytes_of(object.lane->number) + e.offset, e.size) != 0)
      violated(fmt::format("a recovered object reads other bytes than its log holds {}", when));
  }
}

/// A log-layout tier (pread) at `root` with the space open: its recovery.
std::unique_ptr<mlbs::tiers::Backend> open_log_space(const fs::path& root) {
  mlbs::Tier desc = mlbs::Tier::directory(root.string());
  desc.layout = mlbs::Layout::log;
  desc.io_backend = mlbs::IoBackend::pread;
  desc.page_cache = true;  // nothing to drop from the cache on tmpfs
  std::unique_ptr<mlbs::tiers::Backend> tier;
  must_not_throw("opening a log-layout space", [&] {
    tier = mlbs::tiers::make_backend(1, desc);
    tier->probe();
    tier->create_space(kSpace);
  });
  return tier;
}

/// A log-layout tier recovering the space: it reads the live objects, a
/// record written then reads back and leaves them as they were, and
/// removing everything leaves no object listed.
void check_recovery(const fs::path& root, const LiveObjects& live) {
  const std::unique_ptr<mlbs::tiers::Backend> tier = open_log_space(root);
  check_reads(*tier, live, "after recovery");
  for (const auto& item : live) {
    const Key& key = item.first;
    const std::uint64_t size = item.second.entry.size;
    if (size == UINT64_MAX) continue;
    completes<mlbs::SizeMismatchError>("opening a recovered object with another size", [&] {
      tier->open({kSpace, key.first, key.second, kStore}, size + 1);
      violated("a recovered object opens with another size than its index entry's");
    });
  }

  Key fresh{UINT64_MAX, UINT64_MAX};
  while (live.contains(fresh)) --fresh.second;
  std::vector<std::byte> data(5000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7 + 3);
  must_not_throw("writing after recovery", [&] {
    auto writer = tier->create({kSpace, fresh.first, fresh.second, kStore}, data.size());
    writer->write(0, data.data(), data.size());
    writer->commit(false);
  });
  std::vector<std::byte> back;
  must_not_throw("reading a record written after recovery", [&] { back = read_object(*tier, fresh, data.size()); });
  check(back == data, "a record written after recovery reads back other bytes");
  check_reads(*tier, live, "after a new record was written");

  must_not_throw("removing every object", [&] {
    for (const auto& [key, object] : live) tier->remove({kSpace, key.first, key.second, kStore});
    tier->remove({kSpace, fresh.first, fresh.second, kStore});
  });
  std::vector<fs::path> listed;
  must_not_throw("list_stored_objects", [&] { listed = mlbs::tiers::list_stored_objects(root / kSpace); });
  check(listed.empty(), "objects are still listed after all were removed");
}

void run(const std::vector<Lane>& lanes) {
  const fs::path root = scratch_dir() / "tier";
  const fs::path dir = root / kSpace;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const std::optional<LiveObjects> live = write_lanes(dir, lanes);
  if (!live) {
    open_log_space(root);  // only opening the space is promised then
    return;
  }
  check_tools_view(dir, *live);
  check_recovery(root, *live);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run({lane_from_bytes(as_text(data, size))});
  FuzzedDataProvider recipe(data, size);
  run(lanes_from_recipe(recipe));
  return 0;
}
