// Fuzzes the catalog journal's reader, replay_journal, and reopening a
// journal after it (src/catalog/journal.cpp), as a persistent store's
// recovery does.
//
// Each input is tried twice: as the bytes of a journal file, and as a recipe
// that builds a journal from entries appended by mlbs::catalog::Journal (valid
// checksums, fuzzed fields and ops), raw 48-byte slots and a torn tail, so
// that the fields of entries that pass their checksum get fuzzed too.
//
// Contract checked: only CorruptionError (a foreign header) or IoError
// escapes; valid_bytes + torn_bytes is the file's size, valid_bytes is the
// header plus whole entries; the replay returns the built journal's entries in
// order up to the first that is not valid; every live entry is a put it read,
// an id with puts and no erase is live at its newest generation, one without
// puts is not; and a Journal reopened at valid_bytes cuts the torn tail, so
// that an entry appended then is read right after the valid ones.
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "catalog/journal.hpp"
#include "fuzz_support.hpp"
#include "mlbs/errors.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mlbs::fuzz;
using mlbs::catalog::Journal;
using mlbs::catalog::JournalEntry;
using mlbs::catalog::JournalReplay;

bool same(const JournalEntry& a, const JournalEntry& b) {
  return a.op == b.op && a.id == b.id && a.generation == b.generation && a.size == b.size &&
         a.checksum == b.checksum;
}

/// replay_journal(path), or nullopt after one of the errors it documents.
std::optional<JournalReplay> replay(const fs::path& path) {
  std::optional<JournalReplay> r;
  completes<mlbs::Error>("replay_journal", [&] { r = mlbs::catalog::replay_journal(path); },
                         [](const mlbs::Error& e) {
                           if (!dynamic_cast<const mlbs::CorruptionError*>(&e) &&
                               !dynamic_cast<const mlbs::IoError*>(&e))
                             violated("replay_journal threw an undocumented mlbs error", e.what());
                         });
  return r;
}

/// What a replay promises whatever the file held.
void check_replay(const JournalReplay& r, std::uint64_t file_bytes) {
  check(r.valid_bytes + r.torn_bytes == file_bytes, "valid_bytes + torn_bytes is not the journal's size");
  if (file_bytes < Journal::kHeaderBytes)
    check(r.valid_bytes == 0 && r.entries.empty(), "a journal shorter than its header has entries");
  else
    check(r.valid_bytes == Journal::kHeaderBytes + r.entries.size() * Journal::kEntryBytes,
          "valid_bytes is not the header plus the entries read");

  struct Seen {
    bool erased = false;
    const JournalEntry* newest_put = nullptr;
  };
  std::map<std::uint64_t, Seen> ids;
  for (const JournalEntry& e : r.entries) {
    check(e.op == JournalEntry::Op::put || e.op == JournalEntry::Op::erase, "replay_journal read a bad op");
    Seen& seen = ids[e.id];
    if (e.op == JournalEntry::Op::erase) seen.erased = true;
    else if (!seen.newest_put || seen.newest_put->generation < e.generation) seen.newest_put = &e;
  }
  for (const auto& [id, e] : r.live) {
    check(e.id == id && e.op == JournalEntry::Op::put, "a live entry is not a put of its id");
    check(ids.contains(id) && ids[id].newest_put, "a live id has no put in the journal");
  }
  for (const auto& [id, seen] : ids) {
    if (!seen.newest_put) check(!r.live.contains(id), "an id without puts is live");
    else if (!seen.erased)
      check(r.live.contains(id) && same(r.live.at(id), *seen.newest_put),
            "an id with puts and no erase is not live at its newest generation");
  }
}

/// Reopening the journal as a recovering store does cuts the torn tail: an
/// entry appended then is read right after the valid ones, nothing torn.
void check_reopen(const fs::path& path, const JournalReplay& r) {
  const JournalEntry extra{JournalEntry::Op::put, 0xfeed, 7, 4096, 0x5eed};
  must_not_throw("reopening a journal at its valid prefix and appending", [&] {
    Journal journal(path.string(), r.valid_bytes);
    journal.append(extra);
  });
  std::optional<JournalReplay> again;
  must_not_throw("replaying a reopened journal", [&] { again = mlbs::catalog::replay_journal(path); });
  check(again->torn_bytes == 0, "a reopened journal keeps a torn tail");
  check(again->entries.size() == r.entries.size() + 1, "a reopened journal does not read its entries plus one");
  for (std::size_t i = 0; i < r.entries.size(); ++i)
    check(same(again->entries[i], r.entries[i]), "reopening a journal changes its entries");
  check(same(again->entries.back(), extra), "an entry appended after reopening reads back otherwise");
}

/// What one 48-byte slot of a built journal was written as.
struct Slot {
  enum Kind { valid, bad_op, raw } kind = raw;
  JournalEntry entry{};
};

void append_raw(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
    violated("the fuzz harness cannot append to", path.string());
  ::close(fd);
}

/// Builds a journal from the recipe; returns what each slot was written as.
std::vector<Slot> build(const fs::path& path, FuzzedDataProvider& in) {
  std::vector<Slot> slots;
  fs::remove(path);
  { Journal create(path.string(), 0); }
  std::uint64_t end = Journal::kHeaderBytes;
  const int count = in.ConsumeIntegralInRange(0, 24);
  for (int s = 0; s < count; ++s) {
    const int kind = in.ConsumeIntegralInRange(0, 3);
    if (kind == 3) {  // a torn tail ends the file
      append_raw(path, in.ConsumeBytesAsString(in.ConsumeIntegralInRange<std::size_t>(1, Journal::kEntryBytes - 1)));
      break;
    }
    if (kind == 2) {  // raw bytes: may or may not be a valid entry
      std::string raw = in.ConsumeBytesAsString(Journal::kEntryBytes);
      raw.resize(Journal::kEntryBytes);
      append_raw(path, raw);
      slots.push_back({Slot::raw, {}});
    } else {
      JournalEntry e;
      auto op = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint8_t>(1, 2) : in.ConsumeIntegral<std::uint8_t>();
      // 3 marks a framed put's first slot (journal v2), which decodes and
      // joins the put after it: not a bad op, and no entry of its own.
      if (op == 3) op = 0;
      e.op = static_cast<JournalEntry::Op>(op);
      e.id = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 7) : in.ConsumeIntegral<std::uint64_t>();
      e.generation =
          in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint64_t>(0, 7) : in.ConsumeIntegral<std::uint64_t>();
      e.size = in.ConsumeIntegral<std::uint64_t>();
      e.checksum = in.ConsumeIntegral<std::uint64_t>();
      Journal journal(path.string(), end);
      journal.append(e);
      slots.push_back({op == 1 || op == 2 ? Slot::valid : Slot::bad_op, e});
    }
    end += Journal::kEntryBytes;
  }
  return slots;
}

/// The replay of a built journal: the entries of its slots, in order, up to
/// the first slot that is not valid (a raw one may pass for valid).
void check_built(const std::vector<Slot>& slots, const JournalReplay& r) {
  check(r.entries.size() <= slots.size(), "replay_journal read more entries than were written");
  for (std::size_t i = 0; i < r.entries.size(); ++i) {
    check(slots[i].kind != Slot::bad_op, "replay_journal read past an entry with a bad op");
    if (slots[i].kind == Slot::valid) check(same(r.entries[i], slots[i].entry), "replay_journal read an entry otherwise");
  }
  if (r.entries.size() < slots.size())
    check(slots[r.entries.size()].kind != Slot::valid, "replay_journal stopped at a valid entry");
  // Damage is a bad slot with a valid one after it: every valid slot past
  // the prefix is among after_damage (a raw slot may pass for valid too).
  std::size_t valid_after = 0;
  for (std::size_t i = r.entries.size(); i < slots.size(); ++i) valid_after += slots[i].kind == Slot::valid;
  check(r.after_damage.size() >= valid_after, "replay_journal missed valid entries after the damage");
  check(r.damaged() == !r.after_damage.empty(), "damaged() disagrees with the entries found after the damage");
  if (r.damaged()) check(r.damaged_at == r.valid_bytes, "the damage does not start where the valid prefix ends");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path path = scratch_dir() / "journal.mlbs";

  // The input as a journal file.
  write_file(path, {data, size});
  if (const auto r = replay(path)) {
    check_replay(*r, size);
    check_reopen(path, *r);
  }

  // The input as a recipe.
  FuzzedDataProvider recipe(data, size);
  std::vector<Slot> slots;
  must_not_throw("building a journal", [&] { slots = build(path, recipe); });
  const std::uint64_t bytes = fs::file_size(path);
  std::optional<JournalReplay> r;
  must_not_throw("replaying a journal Journal wrote", [&] { r = mlbs::catalog::replay_journal(path); });
  check_replay(*r, bytes);
  check_built(slots, *r);
  check_reopen(path, *r);
  return 0;
}
