// mlbs — what the catalog holds: one Record per live record (its copies,
// state, checksum and lineage) and one StoreState per open store. The engine
// owns the map of them and changes them under its lock; planner, inspection
// and readers are to see them through a read-only view (issue 13).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "catalog/journal.hpp"
#include "codec/bypass.hpp"
#include "codec/share.hpp"
#include "catalog/recovery.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/stats.hpp"

namespace mlbs::codec {
class Codec;
}

namespace mlbs::catalog {

namespace live {
class Writer;
}

/// Record::rank of a record no planning pass has ranked yet (no rank the
/// policies give is this large).
inline constexpr std::uint64_t kUnranked = ~std::uint64_t{0};
using TierMask = std::uint32_t;
constexpr TierMask bit(int t) { return TierMask{1} << t; }

/// One record and everything the catalog knows about it.
struct Record {
  std::uint32_t store = 0;
  std::uint64_t id = 0;
  std::uint64_t size = 0;
  std::uint64_t gen = 0;            ///< runtime-unique write generation (also write order)
  /// The first record of a step the application writes as several records
  /// back to back (policies::WriteBursts::start()): placement's leads.
  bool step_lead = false;
  std::uint64_t checksum = 0;
  bool has_checksum = false;
  /// How checksum and frame_checksum were made: kRecordChecksum, unless the
  /// record was recovered from a journal an older mlbs wrote.
  ChecksumKind checksum_kind = kRecordChecksum;
  /// Its file copies are a codec frame of this many bytes (codec/frame.hpp),
  /// all of them the same frame; 0: stored raw. Set when a record is first
  /// encoded on its way out of DRAM, cleared when no file copy is left.
  std::uint64_t stored = 0;
  std::uint64_t frame_checksum = 0;  ///< of the frame (when stored)
  /// Bytes a copy takes on a file tier.
  std::uint64_t file_bytes() const noexcept { return stored ? stored : size; }
  /// A record only in DRAM whose store's codec will encode it on its way
  /// down: the bytes its frame is expected to take (codec/share.hpp); 0
  /// otherwise. Set by each planning pass.
  std::uint64_t expect = 0;
  /// A copy of it was given up for lack of room at this size (more than
  /// `expect`): it is planned at no less from then on.
  std::uint64_t took = 0;
  /// What placement and the room for its next file copy count: the frame
  /// expected for a record not encoded yet, else file_bytes().
  std::uint64_t plan_bytes() const noexcept { return expect && !stored ? expect : file_bytes(); }
  TierMask copies = 0;              ///< tiers holding a full copy
  detail::Block slot;               ///< the DRAM copy when copies & bit(0)
  std::uint64_t last_use = 0;       ///< LRU clock (unknown schedule)
  bool busy = false;                ///< a helper is copying it
  /// While a helper copies it: the tiers that copy reads and writes (0 for
  /// any other use of `busy`). One between two file tiers needs neither the
  /// DRAM copy nor its slot, which may then go (engine/policies dram_room).
  TierMask copying_on = 0;
  /// The tier a copy ahead (engine/policies copy_ahead) is making its second
  /// copy on, while busy; -1 otherwise. Placement counts that copy as made:
  /// the record gives way to the next write as soon as it lands.
  int ahead = -1;
  /// The file tier a copy ahead made its copy on straight from DRAM; -1
  /// otherwise. While writes come down and DRAM holds the record, placement
  /// places it as if that copy were not there (a DRAM-only record, which
  /// then gets its copy on its target tier before DRAM lets it go).
  int ahead_from_dram = -1;
  /// A copy ahead of it failed (its source read back bad, or the slower
  /// tier refused it): it gets no other, which would fail the same way, as
  /// often as its source is made again from DRAM.
  bool ahead_failed = false;
  /// A file tier whose copy is only on its way to the target tier: the record
  /// left DRAM there while its target was busy (engine/policies drain_dram,
  /// Purpose::stage); -1 otherwise. Placement places the record as if that
  /// copy were not there, so it moves on down.
  int staged = -1;
  bool retired = false;             ///< released/erased while busy or pinned: finish when idle
  bool demand = false;              ///< a read waits for it
  /// Read since it was written. A FIFO or LIFO schedule reads each record
  /// once: one a persistent store keeps after its read then ranks after
  /// every record still to be read.
  bool consumed = false;
  bool journaled = false;           ///< persistent: durable on the last tier
  int pins = 0;                     ///< readers copying out of its slot
  TierMask avoid = 0;               ///< tiers that failed for it
  /// Tiers whose copy failed verification once and had no other copy beside
  /// it: the next failure there is final, a good read clears the doubt
  /// (Engine::complete; bytes flipped in transit, not on the device).
  TierMask doubted = 0;
  std::exception_ptr error;         ///< why it cannot be delivered (corruption, lost copy)
  std::exception_ptr write_failure; ///< why the last copy down failed (the record kept its copy):
                                    ///< reported when flush() or a write() needs that copy
  std::vector<RecordInfo::Move> lineage;
  // Placement of the last planning pass (the planner's, kept here until it has a view of its own).
  std::uint64_t rank = kUnranked;   ///< what the last pass ordered it by (engine/policies/ranking.hpp)
  bool want_mem = false;
  int dir_target = -1;
  /// Reader retention: no reader has read this write yet (placement keeps it
  /// on the fastest file tier with room).
  bool for_readers = false;
  /// In-transit readers are attached to its store: it is written behind to a
  /// file tier (readers read only those) whatever the schedule.
  bool watched = false;
};

struct StoreState {
  std::string name;
  std::string space;               ///< namespace on the tiers above the persistent one
  std::string persistent_space;    ///< namespace on the last tier (stable, persistent mode)
  bool open = true;
  std::unordered_map<std::uint64_t, std::uint32_t> consumed;  ///< explicit schedule: reads done per id
  std::unordered_map<std::uint64_t, std::uint64_t> pending;   ///< writes in progress: id -> bytes
  std::shared_ptr<catalog::Journal> journal;
  catalog::StoreLock lock;         ///< persistent: this runtime's hold on the store
  /// Persistent, part 0 of a store in parts: the hold on the whole store's name.
  catalog::StoreLock whole_lock;
  unsigned journal_erases = 0;     ///< erase entries queued or being written: flush() waits for them
  /// The store's live catalog (catalog/live.hpp), while it is open; null
  /// when Config::live_catalog is off or another writer publishes the name.
  std::shared_ptr<live::Writer> live;
  /// In-transit readers were attached when the engine last looked (its
  /// records are then written behind whatever the schedule).
  bool watched = false;
  /// Its records' codec below DRAM (null: none), and when to skip it.
  std::shared_ptr<const codec::Codec> codec;
  codec::Bypass bypass;
  codec::StoredShare share;  ///< what its frames take lately: records not encoded yet are planned at it
};

}  // namespace mlbs::catalog
