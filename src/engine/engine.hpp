// mlbs — the helper engine: helper threads that move copies between tiers
// while the application computes, planned by the policies (engine/policies)
// over the catalog (catalog/catalog.hpp), all under one mutex.
// Its definitions, by concern: engine.cpp (construction, shutdown, shared
// helpers), planning.cpp, helpers.cpp, stores.cpp (open, close, durability),
// api.cpp (the application's calls).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "catalog/catalog.hpp"
#include "catalog/journal.hpp"
#include "catalog/records.hpp"
#include "codec/codec.hpp"
#include "codec/need.hpp"
#include "core/group.hpp"
#include "engine/policies/pass.hpp"
#include "engine/policies/view.hpp"
#include "mlbs/config.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/stats.hpp"
#include "tiers/backend.hpp"
#include "tiers/memory/memory_backend.hpp"
#include "tiers/transfer.hpp"
#include "tiers/wrappers/quota.hpp"

namespace mlbs::engine {

// The catalog's record and store types (catalog/records.hpp), by their short names here.
using catalog::bit;
using catalog::Record;
using catalog::StoreState;
using catalog::TierMask;

/// Part `index` of a store kept in `count` parts (StoreOptions::parts): an
/// ordinary store named `name#index` ('#' is in no name an application can
/// give, so parts never meet its stores).
struct StorePart {
  std::uint32_t index = 0, count = 1;
};

class Engine {
 public:
  /// `group`: the MPI ranks this runtime runs with (null: this process alone).
  /// Names on the tiers carry the rank; tiers marked `shared` (above the last)
  /// share their capacity with the node's other ranks.
  explicit Engine(Config cfg, std::shared_ptr<core::Group> group = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Drains what durability owes (bounded), then stops and joins the helpers.
  void shutdown() noexcept;

  /// `element` and `plane` tell the codec what the records hold (ZFP takes
  /// float and double stores only: InvalidArgumentError otherwise);
  /// `codec_spec`, when not empty, is the store's codec instead of the
  /// runtime's (a bad one: ConfigError naming the store).
  /// `part`: the store is one part of a store kept in parts (StorePart).
  std::uint32_t open_store(const std::string& name, codec::Element element = codec::Element::any,
                           codec::Plane plane = {}, const std::string& codec_spec = {}, StorePart part = {});
  void close_store(std::uint32_t store) noexcept;
  /// Persistent: the part count store `name` holds its records in (its
  /// `.parts` marker, or 1 for records kept whole; catalog/recovery); none
  /// for a store that holds nothing, or a scratch runtime.
  std::optional<std::uint32_t> recorded_parts(const std::string& name) const;
  void write(std::uint32_t store, std::uint64_t id, const std::byte* data, std::size_t bytes);
  /// `exact`: the record must hold exactly that many bytes (checked before it
  /// is consumed); detail::kAnySize accepts any whole number of elements.
  /// Persistent stores: bytes [offset, offset + len) of record `id` (clipped
  /// to its size) copied into `dst`, the record staying where it is (its
  /// DRAM slot is not handed over); as read() otherwise, but the read counts
  /// as the record's use (the schedule's) only once it reaches the record's
  /// end. Scratch stores: the whole record only (offset 0, len at least its
  /// size: InvalidArgumentError otherwise, before it is consumed), released
  /// as read() releases it — a store in parts reads each part so. Returns
  /// the bytes copied. `own_errors_only`: only this record's failure (or a
  /// shutdown) throws, other records' wait for the next call — a store in
  /// parts reading the parts after its first, which must not stop half-read.
  std::size_t read_into(std::uint32_t store, std::uint64_t id, std::byte* dst, std::size_t offset, std::size_t len,
                        bool own_errors_only = false);
  /// A DRAM slot of at least `bytes` lent to the caller to fill in place,
  /// when room can be made for it now (none otherwise: no waiting). It
  /// counts against the budget until write_lent() makes it a record's slot
  /// (no copy) or return_slot() gives it back. mlbs-run's chunk buffers.
  /// At most half of DRAM is lent at once: a borrower that copies a chunk
  /// out of its slot into a record of its own size (write()) must find room
  /// that no other borrower holds, or borrowers would wait on each other.
  std::optional<detail::Block> lend_slot(std::size_t bytes);
  /// Record `id` of `bytes` (at most the slot's capacity) in a lent slot;
  /// the slot is the record's once this returns (left with the caller if it throws).
  void write_lent(std::uint32_t store, std::uint64_t id, detail::Block& slot, std::size_t bytes);
  void return_slot(detail::Block slot) noexcept;
  std::size_t read(std::uint32_t store, std::uint64_t id, detail::Block& buf, std::size_t elem,
                   std::size_t exact = detail::kAnySize);
  bool contains(std::uint32_t store, std::uint64_t id);
  void erase(std::uint32_t store, std::uint64_t id);
  std::vector<std::uint64_t> ids(std::uint32_t store);
  void flush(std::uint32_t store);
  RecordInfo info(std::uint32_t store, std::uint64_t id);
  Stats stats();
  /// Runtime::set_schedule (fifo, lifo, unknown): ranks every record again.
  void set_schedule(const Schedule& schedule);
  /// As constructed (set_schedule() changes schedule_, not this).
  const Config& config() const noexcept { return cfg_; }
  const core::Group* group() const noexcept { return group_.get(); }
  /// The read order placement assumes now.
  Schedule::Kind schedule_kind();

 private:
  using Lock = std::unique_lock<std::mutex>;
  /// One unit of helper work.
  struct Op {
    enum class Kind { copy, remove } kind = Kind::copy;
    Record* rec = nullptr;
    int src = -1, dst = -1;
    bool move = false;       ///< drop the source copy afterwards
    bool persist = false;    ///< dst is the last tier of a persistent store: journal it
    bool prefetch = false, demand = false;
    policies::Purpose why = policies::Purpose::demand_fetch;  ///< copies: the policy that decided it
    detail::Block block;     ///< destination slot when dst == 0
    std::uint64_t checksum = 0;  ///< computed by execute(), stored by complete()
    bool computed_checksum = false;
    // Everything execute() needs from the catalog, copied under the lock.
    std::string space, dst_space, store_name;
    std::uint64_t id = 0, gen = 0;
    std::shared_ptr<catalog::Journal> journal;  ///< copy: put entry after; remove: erase entry first
    int tier = -1;           ///< remove: the tier of the copy
    std::uint64_t reserved = 0;  ///< copy to a file tier: the room taken there
    int released = 0;  ///< the tier no longer counted busy with it (last_request_queued()), 0: none
    /// DRAM to a file tier of a store with a codec: encode with it (null:
    /// none, or `bypassed` when the store's bypass skips this record).
    std::shared_ptr<const codec::Codec> codec;
    bool bypassed = false;
    bool unneeded = false;             ///< not encoded: the tiers keep up (Config::codec_when)
    // execute()'s results, applied by complete():
    std::uint64_t attempt = 0;         ///< bytes the codec made of the record (0: not tried)
    std::uint64_t stored = 0;          ///< the frame written (0: raw)
    std::uint64_t frame_checksum = 0;
    std::uint64_t codec_ns = 0;        ///< encoding or decoding time
  };
  /// Thrown by execute(): the copy's room was planned at its frame's expected
  /// size and the tier has not the `bytes` it really takes (complete()
  /// plans the record again at that size; nothing failed).
  struct RoomShort {
    std::uint64_t bytes = 0;
  };
  struct TierState {
    /// The tier's backend, outermost layer first (quota, throttle, faults,
    /// device); it keeps the tier's Usage. Tier 0 is the memory backend.
    std::unique_ptr<tiers::Backend> backend;
    /// The device said ENOSPC: placement sends nothing more until room comes
    /// free there (a removal on it completes) or, for the last tier, flush() asks again.
    bool full_latched = false;
    bool wb_active = false;                   ///< water-mark hysteresis
    std::uint32_t copies_in_flight = 0;       ///< helper copies reading or writing it (the planner's idle test)
    std::uint32_t fetches_in_flight = 0;      ///< of these, those moving a record up out of it (policies::TierView)
    std::uint32_t arrivals_in_flight = 0;     ///< of these, those writing into it (policies::TierView)
    /// What the engine itself counts (stalls, records too large) and the
    /// tier's description; the rest of TierStats comes from the backend's Usage.
    TierStats stats;
    /// Shared tiers under MPI: the node-wide budget this rank takes from
    /// (owned by the tier's quota wrapper).
    tiers::QuotaBackend* quota = nullptr;
    core::SharedQuota* node = nullptr;
    std::uint64_t quota_version = 0;  ///< node->version() at the last placement
    std::uint64_t node_free_seen = 0; ///< node->node_free() at the last placement
    std::uint64_t quota_limit = 0;    ///< node->limit() at the last placement (acquire re-checks it)
    std::uint64_t demand = 0;         ///< bytes placement would put here, last published
  };

  // --- helpers (helpers.cpp) ---
  void helper_loop(std::stop_token st, unsigned index);
  /// The next copy for a helper (mu_ held): the policies' first decision
  /// (engine/policies), its drops carried out; none when stopping.
  std::optional<Op> plan();
  // --- the remover (helpers.cpp) ---
  /// Runs the queued removals one after the other, beside the helpers: an
  /// unlink on a busy file system takes milliseconds (1.4-5 ms per 8 MiB file
  /// on this VM's ext4) that a prefetch on the bottleneck tier must not
  /// wait behind. Counted in inflight_ while it runs one.
  void remover_loop(std::stop_token st);
  /// A removal's I/O, outside the lock: the journal's erase made durable
  /// first (persistent), then the tier's object removed.
  void remove_now(const Op& op);
  /// A removal is done (mu_ held): its file name is free again, a full
  /// device may take copies again, its error is reported.
  void removed(const Op& op, std::exception_ptr err);
  /// The copy `why` decided on, with its room taken; none if the room or the
  /// file name is not free after all (planning runs again on the next change).
  std::optional<Op> copy_op(Record& r, int src, int dst, policies::Purpose why);
  /// Runs `op` outside the lock; a copy down or between file tiers stops
  /// early (tiers::Cancelled) once `cancel` is set, within a piece
  /// (kStoppablePiece bytes for a copy ahead, a quarter of the record out of
  /// DRAM, at most Config::io_chunk_bytes).
  void execute(Op& op, detail::Block& staging, detail::Block& frame, const std::atomic<bool>& cancel);
  /// The first read after writes (mu_ held): placement plans without write
  /// headroom from now on, and the copies in flight that only the writes
  /// wanted are stopped (policies::stops_at_turn(); Cao et al.'s "do no harm").
  void turn();
  /// A helper copies `r` (retired: released or erased while busy): its copy
  /// is stopped, as nobody will read what it makes.
  void stop_copy_of(const Record& r);
  /// `op`'s last request on tier `t`, its slower end, is queued: the tier
  /// counts as free of it (TierState::copies_in_flight, fetches_in_flight),
  /// so that the planner's one-copy-at-a-time rules let the tier's next copy
  /// queue its first request behind that last one (tiers::Control).
  void last_request_queued(Op& op, int t);
  /// 1 MiB: 5 ms at 200 MiB/s, large enough for the device to stream.
  static constexpr std::uint64_t kStoppablePiece = 1ull << 20;
  /// A completed copy's codec results into the record, the store's bypass and the counters.
  void note_codec(const Op& op);
  /// Bytes/s of the slowest file tier: its cap where it has one, else what it
  /// was observed to move (after 50 ms of I/O); 0 while no tier's rate is known.
  /// Any thread (the backends' counters have their own lock).
  double slowest_file_rate() const;
  /// What a record's file copies hold, for tiers::read_record (under the lock, or the record busy).
  static tiers::StoredRecord stored_of(const Record& r) noexcept {
    return {r.size, r.stored, r.checksum, r.frame_checksum, r.has_checksum, r.checksum_kind};
  }
  /// Per helper: staging for copies between file tiers, from the memory
  /// tier's scratch (pre-faulted after its slots) by the constructor, so an
  /// allocation failure is the constructor's error, not a helper's.
  std::vector<detail::Block> staging_;
  std::vector<detail::Block> frames_;  ///< per helper: codec frames, allocated on first use
  /// Per helper: stop the copy it runs (read without the lock by transfer()).
  std::unique_ptr<std::atomic<bool>[]> cancel_;
  /// Per helper, under mu_: the copy it runs now (rec null: none), for
  /// turn() and stop_copy_of() to find.
  struct Running {
    const Record* rec = nullptr;
    policies::Purpose why = policies::Purpose::demand_fetch;
    int src = -1;
  };
  std::vector<Running> running_;
  codec::Spec codec_;                  ///< Config::codec, parsed
  codec::Need need_;                   ///< whether the application waits for the tiers lately (codec/need.hpp)
  /// Reads a record from its fastest file copy straight into `buf`, for a
  /// read that no DRAM room can be made for. A copy that fails verification
  /// is read again or dropped for the next one, as a helper's is (read_again()).
  void read_direct(Lock& lock, Record& r, detail::Block& buf);
  /// The copy of `r` on tier `t` just failed verification: whether it is
  /// read once more before it is called bad (marked Record::doubted, counted
  /// in Stats::rereads). Only the record's only copy, and only its first
  /// failure there: bytes flipped on their way (a link, a controller, a
  /// network file system's client) are not flipped again, while another copy,
  /// where there is one, is used instead. Helpers' copies (complete()) and
  /// read_direct() both ask here, so the rule is one.
  bool read_again(Record& r, int t);
  /// write()'s checks of a new record (the id free, DRAM and the last tier's
  /// quota large enough); its store.
  StoreState& check_new_record(std::uint32_t store, std::uint64_t id, std::size_t bytes);
  /// A slot for write() (waiting for room as the helpers make it), the write
  /// pending in `s` meanwhile; refused with CapacityError when none can come.
  detail::Block take_slot(Lock& lock, StoreState& s, std::uint64_t id, std::size_t bytes, bool& waited);
  /// The record written into `slot`, in the catalog, with its checksum when write() made it;
  /// `step_lead`: it began a burst of writes (policies::WriteBursts::start()).
  void add_record(std::uint32_t store, std::uint64_t id, std::size_t bytes, detail::Block slot,
                  std::optional<std::uint64_t> checksum = std::nullopt, bool step_lead = false);
  /// A read's start, mu_ held: the record found and checked, in DRAM (or
  /// none can be made there: read it directly), its use counted: consumed
  /// when the read reaches byte `reach` at its end. `own_errors_only`: as read_into's.
  Record* await_read(Lock& lock, std::uint32_t store, std::uint64_t id, std::size_t elem, std::size_t exact,
                     std::size_t reach = std::numeric_limits<std::size_t>::max(), bool own_errors_only = false);
  /// After a reader is done with `r`: release it (scratch) or finish it if retired.
  void finish_read(Record& r, bool release);
  /// Whether a read just begun releases `r`: in scratch mode, unless the schedule reads it again.
  bool released_when_read(const Record& r) const;
  void complete(Op& op, std::exception_ptr err);
  /// The trace span of one executed helper operation (only when tracing is on).
  void trace_op(const Op& op, std::chrono::steady_clock::time_point start,
                std::chrono::steady_clock::time_point end, std::string_view outcome) const;

  // --- catalog and placement ---
  StoreState& store_ref(std::uint32_t store);
  Record* find(std::uint32_t store, std::uint64_t id);
  Record& get(std::uint32_t store, std::uint64_t id);   ///< throws UnknownIdError
  void refresh_placement();
  std::uint64_t rank_of(const Record& r) const;
  /// The records the schedule says are still to come (policies::Coming):
  /// LIFO's hint, or an explicit order's ids not written yet, and whether
  /// that is none at all; none once reads began.
  policies::Coming coming_records();
  /// Whether in-transit readers came or went on a store since the last look
  /// (StoreState::watched is updated).
  bool readers_changed();
  /// How long an idle helper sleeps before looking for readers that attached
  /// meanwhile (another process cannot wake it); forever when none can.
  std::optional<std::chrono::milliseconds> reader_check_interval() const;
  /// What the policies see: ranked_ and the tiers now (call refresh_placement() first).
  policies::View view();
  void apply(const std::vector<policies::Drop>& drops);
  /// Drops clean DRAM copies placement does not want (Wishes::yield: any
  /// clean copy) until `bytes` fit (all or none).
  bool make_dram_room(std::size_t bytes, policies::Wishes wishes = policies::Wishes::keep);
  /// What tier t may hold (this rank's share of a node budget); 0 = unlimited.
  std::uint64_t tier_capacity(int t) const;
  std::uint64_t tier_free(int tier) const;
  /// Accounts `bytes` more (take) or fewer (give) on file tier t; take fails
  /// only when a node-shared budget has no room left (another rank took it).
  bool take(int tier, std::uint64_t bytes);
  void give(int tier, std::uint64_t bytes);
  /// Another rank of the node changed what it asks of a shared tier, or took
  /// room placement counted on: placement must be redone.
  bool shared_quota_moved() const;
  /// One tier's TierStats: the backend's Usage with the engine's own counts.
  TierStats tier_stats(int tier) const;
  bool removal_pending(int tier, const std::string& space, std::uint64_t id, std::uint64_t gen) const;
  void drop_copy(Record& r, int tier);
  void retire(Record& r);       ///< out of the catalog now; copies go once no one uses it
  void settle(Record& r);       ///< finishes a retired record nobody uses any more
  void erase_record(Record& r);
  int fastest_copy(const Record& r, int except = -1) const;
  void note(Record& r, int from, int to);
  /// State changed: changed(), and an idle helper woken if the change gave
  /// the helpers work (helpers_have_work()). Not from inside plan() or while
  /// indices into ranked_ are held: it may rank the catalog again.
  void touch();
  /// State changed: waiting callers (and live readers) are told, the next
  /// planning pass ranks again; no helper is woken (a helper calls this on
  /// itself before it plans again).
  void changed();
  /// Wakes one idle helper, if any, unconditionally (for a change made where
  /// helpers_have_work() cannot look: a tier freed inside a transfer).
  void wake_helper();
  /// Nothing is moving and nothing will unless state changes: the helpers
  /// found no copy to make at this version, none is in flight and no removal
  /// is queued or running. What flush(), a write without room and a read
  /// that no room can be made for wait for (mu_ held).
  bool idle() const noexcept { return idle_version_ == version_ && inflight_ == 0 && removals_.empty(); }
  /// Whether plan() would find something now, found without doing it (the
  /// policies are pure): a wake-up is a futex call and, on a sleeping core,
  /// an interrupt, so a change that leaves nothing to do (a write into free
  /// DRAM, a read of a record in DRAM with nothing to prefetch) wakes no
  /// one. When nothing is found, the helpers are idle at this version, as if
  /// one had planned.
  bool helpers_have_work();
  /// The record's state to its store's live catalog (if it has one); `state`
  /// overrides the one the catalog derives (an erase in progress).
  void publish(const Record& r, std::optional<catalog::RecordState> state = std::nullopt);
  /// Opens the store's live catalog and publishes what it holds (recovered records).
  void go_live(std::uint32_t store, StorePart part);
  void raise_pending();
  ErrorContext ctx(const Record& r, int tier = -1) const;
  ErrorContext ctx(std::uint32_t store, std::uint64_t id) const;
  std::string space_for(const StoreState& s, int tier) const;
  /// What every name on the tiers carries under MPI (".rank-<r>"; empty without).
  std::string rank_suffix() const;
  /// Persistent: takes the store's lock and recovers what its journal names
  /// (catalog/recovery). `given` and `rank`: the name the application gave
  /// and the rank's suffix; `part`: which part of it the store is.
  void recover(std::uint32_t store, const std::string& given, const std::string& rank, StorePart part);
  /// Waits until every record of `store` written up to generation `horizon`
  /// (and every erase done so far) is durable on the last tier. Throws when
  /// that cannot happen: some failed there, or the helpers are idle with
  /// records still owed (a full device, a quota too small); ETIMEDOUT at
  /// `deadline`. Called with mu_ held.
  void wait_durable(Lock& lock, std::uint32_t store, std::uint64_t horizon,
                    std::chrono::steady_clock::time_point deadline);
  /// The typed error for records a flush could not make durable: names the
  /// store, the ids and the tier, and the cause (the device's error, a full
  /// device, the quota).
  [[noreturn]] void throw_not_durable(std::uint32_t store, std::vector<const Record*> owed) const;
  std::uint64_t now_ns() const;
  bool persistent() const noexcept { return cfg_.durability == Durability::persistent; }
  /// Persistent stores keep a journal on the last tier (false for a kind
  /// whose objects are durable by themselves: mlbs-run's files tier).
  bool journaled() const noexcept { return journaled_; }
  int last() const noexcept { return static_cast<int>(tiers_.size()) - 1; }

  Config cfg_;
  std::shared_ptr<core::Group> group_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> schedule_pos_;  ///< explicit order

  mutable std::mutex mu_;
  std::condition_variable_any work_cv_;   ///< helpers wait here
  std::condition_variable_any state_cv_;  ///< application calls wait here
  std::vector<TierState> tiers_;
  tiers::MemoryBackend* mem_ = nullptr;  ///< tier 0's backend: the slot pool
  /// Stores and records (after tiers_: records' slots go home before the pool goes).
  catalog::Catalog catalog_;
  std::vector<Record*> ranked_;       ///< soonest next use first (a copy of catalog_.ranking())
  std::vector<Record*> moved_;        ///< refresh_placement()'s scratch: records whose rank changed
  std::vector<policies::TierView> tier_views_;  ///< view()'s storage
  Schedule schedule_;  ///< the read order placement assumes now (Config::schedule, or set_schedule())
  bool journaled_ = true;  ///< see journaled()
  bool ranking_dirty_ = true;
  /// Removals queued for the remover: file copies dropped (their room is
  /// counted free already), the last tier's journal erases.
  std::deque<Op> removals_;
  std::condition_variable_any removal_cv_;  ///< the remover waits here
  /// The removal the remover is executing: (tier, space, id, generation).
  std::set<std::tuple<int, std::string, std::uint64_t, std::uint64_t>> removing_;
  std::deque<std::exception_ptr> pending_errors_;
  std::uint64_t flush_horizon_ = 0;  ///< records with gen <= this must be made durable now
  std::uint64_t pending_bytes_ = 0;  ///< DRAM wanted by writes in progress
  unsigned slot_waiters_ = 0;        ///< writes waiting for a DRAM slot (policies::View::write_waits)
  std::uint64_t last_write_bytes_ = 0;
  /// Writes back to back, a step in several records (write()); the last
  /// write's return and its copy's time tell the next one's burst.
  policies::WriteBursts bursts_;
  std::optional<std::chrono::steady_clock::time_point> last_write_end_;
  /// When this write phase's first write began (policies::WriteState::writing_s).
  std::chrono::steady_clock::time_point writes_began_{};
  std::uint64_t last_copy_ns_ = 0;
  std::uint64_t version_ = 0;        ///< bumped on every state change
  std::uint64_t idle_version_ = ~0ull;  ///< version at which helpers found nothing to do
  unsigned inflight_ = 0;  ///< helpers' copies and the remover's removal under way
  /// Readers copying out of a pinned DRAM slot: a write finding no room waits
  /// for them (the slot becomes droppable) rather than being refused.
  unsigned copying_out_ = 0;
  std::uint64_t lent_bytes_ = 0;  ///< DRAM slots lent (lend_slot) and not back yet
  unsigned idle_helpers_ = 0;        ///< helpers waiting on work_cv_
  bool reader_polling_ = false;      ///< an idle helper looks for new readers now and then
  bool shared_tiers_ = false;        ///< a tier's budget is shared with other ranks (MPI): touch() wakes every helper
  bool stopping_ = false;
  bool live_changed_ = false;  ///< published since the last touch(): tier counters and a wake-up are due
  Stats counters_;
  // Last members: joined before the rest is destroyed (shutdown() joins them first).
  std::jthread remover_;
  std::vector<std::jthread> helpers_;
};

}  // namespace mlbs::engine
