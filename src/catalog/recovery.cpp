#include "catalog/recovery.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/transfer.hpp"

namespace mlbs::catalog {
namespace {

using StoredObjects = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // (id, generation)

/// Throws CorruptionError when the journal may not name every acknowledged
/// record; a torn tail is not damage. Nothing has been changed yet.
void refuse_damaged_journal(const tiers::Backend& tier, const std::string& space, const std::string& store,
                            const JournalReplay& replay, const std::string& journal_path,
                            const StoredObjects& stored) {
  const auto refuse = [&](const std::string& what) {
    throw CorruptionError(
        EBADMSG,
        fmt::format("{}; nothing was changed and the {} record cop{} stored are kept: salvage the store with "
                    "`mlbs-inspect --salvage {} {}` (docs/persistence.md, \"Journal damage and salvage\")",
                    what, stored.size(), stored.size() == 1 ? "y" : "ies", tier.desc().path, space),
        {store, {}, tier.label()});
  };
  if (replay.damaged())
    refuse(fmt::format("journal {} is damaged: the entry at byte {} fails its checksum and {} valid entr{} follow "
                       "({} damaged in all), so the journal may not name every acknowledged record",
                       journal_path, replay.damaged_at, replay.after_damage.size(),
                       replay.after_damage.size() == 1 ? "y" : "ies", replay.damaged_entries));
  if (stored.empty()) return;
  // The journal's header is durable before the first record is written, so
  // record copies beside a missing or header-less journal are damage too.
  if (!replay.exists) refuse(fmt::format("journal {} is missing but record copies are stored", journal_path));
  if (replay.valid_bytes < Journal::kHeaderBytes)
    refuse(fmt::format("journal {} holds {} bytes, less than its header, but record copies are stored",
                       journal_path, replay.torn_bytes));
  // A crash leaves at most one unjournaled copy per helper (each writes one
  // at a time); more copies that no entry names mean lost entries (a journal
  // cut short or replaced), not a crash.
  std::set<std::pair<std::uint64_t, std::uint64_t>> named;
  for (const auto& e : replay.entries) named.insert({e.id, e.generation});
  const auto unnamed = static_cast<std::size_t>(
      std::count_if(stored.begin(), stored.end(), [&](const auto& object) { return !named.count(object); }));
  if (unnamed > Config::max_helper_threads)
    refuse(fmt::format("journal {} does not name {} of the {} record copies stored, more than a crash can leave "
                       "(one per helper, at most {}): entries were lost (the journal was cut short or replaced?)",
                       journal_path, unnamed, stored.size(), Config::max_helper_threads));
}

/// Reads a live record in full; false (its reason on stderr) if it is
/// missing, short, unreadable or, with checksums, does not match.
bool verify(tiers::Backend& tier, const std::string& space, const std::string& store, const JournalEntry& e,
            bool checksums, detail::Block& buffer) {
  try {
    // A codec's frame is checked as stored; it is decoded (and its record's
    // checksum checked) when read.
    auto reader = tier.open({space, e.id, e.generation, store}, e.file_bytes());
    tiers::Control control;
    control.hash_kind = e.checksum_kind;  // as the entry's mlbs hashed it
    const std::uint64_t digest =
        tiers::transfer({nullptr, reader.get()}, {}, e.file_bytes(), &buffer, checksums, control);
    if (!checksums || digest == e.file_checksum()) return true;
    std::fprintf(stderr, "mlbs: recovery of store '%s' skips id %llu: checksum mismatch\n", store.c_str(),
                 static_cast<unsigned long long>(e.id));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "mlbs: recovery of store '%s' skips id %llu: %s\n", store.c_str(),
                 static_cast<unsigned long long>(e.id), ex.what());
  }
  return false;
}

/// Removes the stored copies that are not live: erased or superseded (a
/// crash between an erase entry and the removal), or never journaled (a
/// crash between a copy and its entry). The journal is whole (checked) and
/// the store locked, so no one else writes here; otherwise every crash would
/// leak their space for good.
/// Returns whether every such copy is gone.
bool remove_unlive(tiers::Backend& tier, const std::string& space, const std::string& store,
                   const JournalReplay& replay, const StoredObjects& stored) {
  std::size_t removed = 0;
  bool all = true;
  for (const auto& [id, gen] : stored) {
    const auto live = replay.live.find(id);
    if (live != replay.live.end() && live->second.generation == gen) continue;
    try {
      tier.remove({space, id, gen, store});
      ++removed;
    } catch (const std::exception& ex) {
      all = false;
      std::fprintf(stderr, "mlbs: recovery of store '%s' cannot remove an unjournaled copy: %s\n", store.c_str(),
                   ex.what());
    }
  }
  if (removed)
    std::fprintf(stderr,
                 "mlbs: recovery of store '%s' removed %zu record cop%s that were erased or never journaled (left "
                 "by a crash)\n",
                 store.c_str(), removed, removed == 1 ? "y" : "ies");
  return all;
}

/// The journal rewritten with just the live records' puts, when it holds
/// mostly history: it would otherwise grow with every operation the store
/// ever saw. One erased put keeps the highest generation handed out, so
/// generations (which name objects) never repeat. Atomic (write_journal);
/// returns the new journal's length.
std::uint64_t compact(const std::string& path, const JournalReplay& replay, const std::string& store) {
  std::uint64_t newest = 0, newest_live = 0;
  for (const auto& e : replay.entries) newest = std::max(newest, e.generation);
  for (const auto& [id, e] : replay.live) newest_live = std::max(newest_live, e.generation);
  std::vector<JournalEntry> entries;
  // The watermark first: replay keeps an id's newest put, so after a live
  // put of the same id it would take that record with it.
  if (newest > newest_live) {
    entries.push_back({JournalEntry::Op::put, 0, newest, 0, 0});
    entries.push_back({JournalEntry::Op::erase, 0, newest, 0, 0});
  }
  for (const auto& [id, e] : replay.live) entries.push_back(e);
  const std::uint64_t length = write_journal(path, entries);
  std::fprintf(stderr, "mlbs: recovery of store '%s' compacted its journal: %zu entries, %zu live records\n",
               store.c_str(), replay.entries.size(), replay.live.size());
  return length;
}

}  // namespace

StoreLock::StoreLock(const tiers::Backend& tier, const std::string& space, const std::string& store) {
  const std::string path = tier.space_path(space) + "/LOCK";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) tier.fail(errno, fmt::format("cannot open {}", path), nullptr);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    release();
    throw StoreBusyError(EBUSY, "the persistent store is open in another runtime or process", {store, {}, tier.label()});
  }
}

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void StoreLock::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

namespace fs = std::filesystem;

/// A count recorded beside a store's spaces (`<store>.ranks`, `<space>.parts`); none when absent or unreadable.
std::optional<long> read_count(const fs::path& marker) {
  std::FILE* f = std::fopen(marker.c_str(), "r");
  if (!f) return std::nullopt;
  long written = 0;
  const bool ok = std::fscanf(f, "%ld", &written) == 1;
  std::fclose(f);
  return ok ? std::optional<long>(written) : std::nullopt;
}

/// Records a count durably: written beside the marker, synced, renamed over
/// it, its folder synced (a crash leaves the old count or the new, never part).
void write_count(const tiers::Backend& tier, const fs::path& marker, long count, const std::string& tag) {
  const fs::path tmp = marker.string() + "." + tag + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) tier.fail(errno, fmt::format("cannot write {}", tmp.string()), nullptr);
  std::fprintf(f, "%ld\n", count);
  int err = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0 ? 0 : errno;
  std::fclose(f);
  std::error_code ec;
  if (!err) fs::rename(tmp, marker, ec);
  if (!err && ec) err = ec.value();
  if (!err) err = tiers::sync_directory(marker.parent_path());
  if (err) {
    fs::remove(tmp, ec);
    tier.fail(err, fmt::format("cannot record {} in {}", count, marker.string()), nullptr);
  }
}

/// Where a store's part count is recorded: `<space>.parts` beside its space.
fs::path part_count_marker(const tiers::Backend& tier, const std::string& whole_space) {
  return fs::path(tier.space_path(whole_space)).parent_path() / (whole_space + ".parts");
}

}  // namespace

void check_rank_count(const tiers::Backend& tier, const std::string& space, const std::string& store, int ranks,
                      int rank) {
  // A persistent store written by N ranks is N rank spaces: a run with another
  // count would silently see a part of it. Rank 0 records the count beside them.
  const fs::path marker = fs::path(tier.space_path(space)).parent_path() / (store + ".ranks");
  if (const std::optional<long> written = read_count(marker)) {
    if (*written != ranks)
      throw InvalidArgumentError(EINVAL,
                                 fmt::format("the persistent store was written by {} MPI ranks and this run has {}: "
                                             "recover it with {} ranks ({})",
                                             *written, ranks, *written, marker.string()),
                                 {store, {}, tier.label()});
    return;
  }
  if (rank == 0) write_count(tier, marker, ranks, "rank-0");
}

std::optional<std::uint32_t> recorded_part_count(const tiers::Backend& tier, const std::string& store,
                                                 const std::string& rank_suffix) {
  const std::string whole = store + rank_suffix;
  if (const std::optional<long> k = read_count(part_count_marker(tier, whole)); k && *k > 1 && *k <= 0xffffffffL)
    return static_cast<std::uint32_t>(*k);
  if (!tier.list(whole).empty()) return 1;  // records kept whole
  return std::nullopt;
}

void check_part_count(tiers::Backend& tier, const std::string& store, const std::string& rank_suffix,
                      std::uint32_t parts) {
  // Records cut in K parts are K part stores beside the whole store's space:
  // opened with another count, a read would put together the wrong pieces.
  const std::string whole = store + rank_suffix;
  const auto part_space = [&](long j) { return fmt::format("{}#{}{}", store, j, rank_suffix); };
  const fs::path marker = part_count_marker(tier, whole);
  const long written = read_count(marker).value_or(1);
  if (written == static_cast<long>(parts)) return;
  // Another count is taken only while the store holds nothing: what it
  // holds was cut for the count it was written with.
  const auto holds = [&](const std::string& space) {
    tier.create_space(space);  // a no-op for a folder; what lets an MPI-IO tier see its index
    return !tier.list(space).empty();
  };
  bool held = false;
  if (written > 1)
    for (long j = 0; j < written && !held; ++j) held = holds(part_space(j));
  else
    held = holds(whole);
  if (held)
    throw InvalidArgumentError(
        EINVAL,
        written > 1 ? fmt::format("the persistent store keeps its records in {} parts and is opened {}: open it "
                                  "with StoreOptions::parts = {} ({})",
                                  written, parts > 1 ? fmt::format("in {}", parts) : std::string("whole"), written,
                                  marker.string())
                    : fmt::format("the persistent store keeps its records whole and is opened in {} parts: open it "
                                  "with StoreOptions::parts = 1",
                                  parts),
        {store, {}, tier.label()});
  if (parts > 1) return write_count(tier, marker, parts, "parts");
  std::error_code ec;
  fs::remove(marker, ec);  // whole again: no marker, as a store always kept whole has none
  if (ec) tier.fail(ec.value(), fmt::format("cannot remove {}", marker.string()), nullptr);
}

RecoveredStore recover_store(tiers::Backend& tier, const std::string& space, const std::string& store,
                             const RecoveryOptions& options) {
  RecoveredStore out;
  out.journal_path = tier.space_path(space) + "/journal.mlbs";
  const JournalReplay replay = replay_journal(out.journal_path);
  // Damage is never a reason to delete: refused before anything is reclaimed.
  const StoredObjects stored = tier.list(space);
  refuse_damaged_journal(tier, space, store, replay, out.journal_path, stored);
  // Generations name objects: never hand out one the journal or the tier has seen.
  for (const auto& e : replay.entries) out.next_generation = std::max(out.next_generation, e.generation + 1);
  for (const auto& [id, gen] : stored) out.next_generation = std::max(out.next_generation, gen + 1);
  // Verified eagerly: what ids() lists is readable and byte-exact. The
  // buffer is block-aligned, so an O_DIRECT tier reads straight into it.
  detail::Block buffer = detail::Block::allocate(options.chunk_bytes);
  for (const auto& [id, e] : replay.live) {
    if (verify(tier, space, store, e, options.checksums, buffer))
      out.records.push_back(e);
    else
      ++out.skipped;
  }
  const bool clean = remove_unlive(tier, space, store, replay, stored);
  out.journal_valid_bytes = replay.valid_bytes;
  // Compacted only once nothing it names as erased is left on the tier (an
  // erase entry is what lets the next open remove such a copy).
  if (clean && replay.entries.size() >= options.compact_entries &&
      replay.entries.size() > 4 * replay.live.size())
    out.journal_valid_bytes = compact(out.journal_path, replay, store);
  return out;
}

}  // namespace mlbs::catalog
