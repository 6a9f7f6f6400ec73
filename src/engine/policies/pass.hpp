// mlbs — one planning pass over ranked records: how much each tier may hold,
// where each record should live, and which tiers write behind. The engine
// runs it under its lock before the policies decide; the simulator (sim/)
// runs the same code over its model of the tiers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "catalog/records.hpp"
#include "mlbs/config.hpp"

namespace mlbs::engine::policies {

/// What placement may fill this pass.
struct Limits {
  std::uint64_t dram_bytes = 0;           ///< DRAM budget less the headroom of the writes in progress
  std::vector<std::uint64_t> file_bytes;  ///< per tier (index 0 unused); 0 = unlimited
  /// Persistent mode: every record owes a copy to the last tier, so a copy
  /// there backs nothing (PlacementItem::backing is for scratch copies).
  bool persistent = false;
  /// Residents may move up to faster tiers: not while writes come down
  /// (prefetch_file() waits for reads; see place()).
  bool moves_up = true;
  /// Per file tier (index 0 unused): its bandwidth in bytes/s, 0 = unknown.
  /// Known for all, placement spreads the traffic over them (place());
  /// scratch mode only (persistent records all end on the last tier).
  std::vector<double> file_rates;
  /// The DRAM placement's test of which tiers join spreading counts on
  /// (joins_spread()); 0: dram_bytes. When every write ranks before the
  /// records written (write_streams()), DRAM's whole budget: what
  /// prefetching fills once reads begin, not what the writes' room leaves.
  std::uint64_t lookahead_bytes = 0;
  /// DRAM placement plans with while records are still to come (Coming):
  /// coming_dram(). 0, or less than dram_bytes: dram_bytes.
  std::uint64_t coming_dram_bytes = 0;
  /// The last file tier starts with the first records to leave DRAM when
  /// a bounded tier is above it (place(), bottleneck_first()).
  bool bottleneck_first = false;
  /// With bottleneck_first, while the application computes: the idle last
  /// tier takes a record from a bounded tier above when none leaves DRAM
  /// (place(), last_takes_residents()).
  bool last_takes_residents = false;
  /// With bottleneck_first and a record count (fifo:N, bytes_to_come()):
  /// the bytes still to be written; kRunGoesOn once a run without its count
  /// has outlasted the last tier's move of a record (outlasts_a_move()).
  /// Unset: not known, the run is taken to go on as long again as it has so
  /// far.
  std::optional<std::uint64_t> to_come_bytes;
  /// DRAM's whole budget while writes come (limits_for_writes()): what holds
  /// records once the last write is in, its room then the last record's.
  std::uint64_t dram_budget = 0;
  /// Over unlimited tiers while writes come down: an idle tier takes a
  /// record read before any still to come when the reads before it hide its
  /// fetch (place(), idle_tiers_start()).
  bool idle_tiers_start = false;
  /// While writes come: DRAM holds only the first record of some steps
  /// (Record::step_lead; place(), leads_first(), lead_spacing()).
  bool leads_first = false;
  /// Once reads began: DRAM kept for the records to come up, beside which a
  /// record only DRAM holds keeps its slot (place()); 0: one slot per file
  /// tier they come from. Two steps where steps_double_buffered().
  std::uint64_t read_room_bytes = 0;
};

/// Whether an idle file tier may take a record that no record still to come
/// is read before (Limits::idle_tiers_start): DRAM holds kDoubleBufferSlots
/// of the application's bursts (`burst_bytes`, WriteBursts::bytes(); 0: none
/// yet). With fewer, a record drained to a slower tier holds its slot the
/// longer, and the next write waits for it.
bool idle_tiers_start(std::uint64_t budget, std::uint64_t burst_bytes);

/// Whether placement starts the last file tier at once (place()'s
/// `bottleneck_first`): FIFO, scratch mode, while writes come and DRAM
/// keeps room for two of them (`budget` of kDoubleBufferSlots writes or
/// more). A drain to the slowest tier holds its DRAM slot for that tier's
/// whole copy; with room for one write the writer then waits for it (DRAM
/// for two records: up to 2x slower in mlbs-sim's sweep). LIFO without its
/// count reads the records the last tier would take early last anyway, and
/// `lifo:N` and explicit orders place those records there already (with
/// the rule, 47 of their sweep points were worse by up to 0.38, 24 better).
bool bottleneck_first(Schedule::Kind kind, std::uint64_t budget, std::uint64_t last_write_bytes, bool persistent);

/// Whether the idle last tier may take a record from a bounded tier above
/// (Limits::last_takes_residents, place()): under bottleneck_first, while
/// the application computes between its bursts (`gap_s` > 0) and no write
/// is under way (`pending_bytes`) or waits for a slot (`write_waits`), and
/// the last tier moves a write (`move_s`) within kMoveGaps such gaps. Then
/// the record that would start it next is a step away, and the tier would
/// idle until it comes. With no compute, or in the middle of a burst, the
/// next record is there at once: a move then only displaced it to the
/// faster tier, whose bandwidth the move's read took from the drains the
/// writer waits for, and whose room it left empty at the turn (no compute:
/// `--parts 4 fifo/t2/n32/s2/fs0.25/bw2/f0.0` 1.007x -> 1.186x the bound).
/// A move lasting many gaps displaced several records so, and put a record
/// read soon after the turn on the slowest tier (`mlbs_sim_check --machine
/// three --schedule fifo`, a move 6.25 gaps long: 1.329x -> 1.446x in
/// mlbs-sim); within two gaps, whole records kept 4 of their 10 gains.
bool last_takes_residents(bool bottleneck_first, double gap_s, double move_s, std::uint64_t pending_bytes,
                          bool write_waits);

/// last_takes_residents(): how many of the application's compute gaps the
/// last tier's move of a write may last.
inline constexpr double kMoveGaps = 4.0;

/// FIFO with Schedule::expected_records (fifo:N) while writes come: the
/// bytes a store will still be sent, the `expected` records less the
/// `store_records` it holds (a write in progress is still to come), each of
/// `last_write_bytes`. What Limits::to_come_bytes sums over the stores.
std::uint64_t bytes_to_come(std::uint64_t expected, std::uint64_t store_records, std::uint64_t last_write_bytes);

/// DRAM budgets of at least this many writes keep room for two of them
/// while writes spill (dram_limit); smaller ones keep every slot they can.
inline constexpr std::uint64_t kDoubleBufferSlots = 4;

/// Whether a DRAM `budget` holds kDoubleBufferSlots writes (or bursts) of
/// `bytes`: the one test behind every rule that lets a copy hold a DRAM slot
/// longer or keeps a second write's room (dram_limit(), write_room(),
/// bottleneck_first(), idle_tiers_start(), writes_leave_dram(), copy_ahead()).
constexpr bool double_buffers(std::uint64_t budget, std::uint64_t bytes) noexcept {
  return budget >= kDoubleBufferSlots * bytes;
}

/// The DRAM a record takes: its slot when it has one, else a slot of its size.
std::uint64_t dram_footprint(const catalog::Record& r);

/// DRAM placement may fill: the budget less room for the writes in progress
/// (at least the size of the last one, so a writer finds a clean slot to take
/// instead of waiting for a copy down), and for a second one while the
/// records held (`held_bytes`, see held_bytes()) outgrow DRAM during writes:
/// the next write's copy in then overlaps the previous record's copy down.
/// With `streams` > 1 (write_streams()), room for that many writes while
/// they spill. A known schedule (`known_order`: FIFO, `lifo:N`, an explicit
/// order) spills from the write that fills DRAM with the records held and
/// the next write's room, not one write later: those records stay while
/// later ones come and go, so the first of those to leave has its second
/// slot at once (mlbs-sim's sweep: 52 FIFO points with DRAM for 8 better by
/// up to 0.033, none worse; LIFO without its count, whose held records are
/// pushed out anyway, measured 12 better and 6 worse by up to 0.25). It
/// spills once the records held leave less than the `streams` writes' room,
/// which for more than two streams is sooner still: else the records after
/// the last one DRAM keeps waited there until DRAM was full while the slower
/// tiers idled (FIFO over three unlimited tiers with DRAM for 8: the eight
/// sweeps 37 points better by up to 0.026, none worse).
std::uint64_t dram_limit(std::uint64_t budget, std::uint64_t pending_bytes, std::uint64_t last_write_bytes,
                         std::uint64_t held_bytes, std::uint64_t streams = 1, bool known_order = false);

/// DRAM placement plans with while a known schedule's records are still to
/// come (`coming_bytes` each: Coming) over a bounded file tier: `budget`
/// less one write's room. dram_limit() keeps room for two writes while the
/// records held outgrow DRAM, but the records to come, read before those
/// written (lifo:N, an explicit order's often), will hold DRAM once written,
/// the last write's slot their own. Planned within dram_limit() they spilled
/// onto the bounded tier and pushed records already written to the slower
/// one (lifo:8, DRAM and a 512 MiB/s tier for four records each over one at
/// 128 MiB/s: 1.141x the bound; 1.000x with this). Not over unlimited tiers,
/// where records written stream down (writes_leave_dram()) and spread over
/// the tiers: there up to 0.27 worse over the sweep. 0: none to come, or no
/// tier is bounded.
std::uint64_t coming_dram(std::uint64_t budget, std::uint64_t coming_bytes,
                          const std::vector<std::uint64_t>& file_bytes);

/// How many records to copy down from DRAM at once while writes spill: one
/// per file tier that joins spreading (joins_spread(), over DRAM's whole
/// `budget`), as many as DRAM has slots for, when every write ranks before
/// the records written already (`newest_first`: LIFO without a record-count
/// hint, an unknown schedule). Then the records DRAM keeps while writes go on
/// are pushed out by the next writes anyway: held back, they leave one at a
/// time, and a tier that would take its share idles (the physical bound has
/// the tiers work in parallel). A known schedule keeps the records it reads
/// first (FIFO's oldest, those `lifo:N` or an explicit order says end in
/// DRAM), so 1 (with dram_limit()'s second write), unless DRAM has slots for
/// twice the joining tiers and no file tier is bounded (`file_bytes` all 0):
/// then one per joining tier too, as two streams cannot keep three tiers
/// busy. Scratch mode only, `file_rates` known for all.
std::uint64_t write_streams(std::uint64_t budget, std::uint64_t last_write_bytes,
                            const std::vector<double>& file_rates, const std::vector<std::uint64_t>& file_bytes,
                            bool newest_first, bool persistent);

/// Whether the records written leave DRAM as they come, DRAM keeping none of
/// them while writes go on: write_streams()'s `newest_first`, and DRAM's whole
/// budget as the lookahead of joins_spread() (Limits::lookahead_bytes). So
/// for a schedule whose newest write ranks first (`newest_first`: LIFO
/// without its count, an unknown one), and for one that reads every record
/// written after those still to come (read_after_coming(): lifo:N, an
/// explicit order for a while) while records are still to come after the
/// next (`counted_to_come`, their Coming::ranks) where DRAM holds fewer
/// than kDoubleBufferSlots writes of `last_write_bytes` and no file tier
/// has a capacity limit (`file_bytes` all 0): the records still to come
/// claim DRAM first (place_records()), so every record written is placed
/// below it, as under newest-first writes, and drained one at a time they
/// left the slower tiers idle. Telling mlbs the count made LIFO over three
/// half-speed tiers with DRAM for two records 1.75x the bound where not
/// telling it gave 1.21x. mlbs-sim's sweep with the
/// count (`--hint`): 18 points better by up to 0.54, 1 worse by 0.04 (to what
/// the run without the count gives there). Over a bounded tier too: 6 more
/// worse by up to 0.045 (streamed records took the bounded tier's room from
/// those read first); with DRAM for four writes or more too: the sweep in four
/// parts with the count (`--parts 4 --hint`) 0.22 worse at one point (a part
/// read early streamed to a tier 25x slower), and no gain.
bool writes_leave_dram(bool newest_first, std::size_t counted_to_come, std::uint64_t budget,
                       std::uint64_t last_write_bytes, const std::vector<std::uint64_t>& file_bytes);

/// The DRAM room `ranked` would take if all were there (block-rounded slots).
std::uint64_t held_bytes(std::span<catalog::Record* const> ranked);

/// A file tier's limit: its capacity; in scratch mode at most its high water
/// mark of it (headroom for bursts; a file tier holds one copy per record).
std::uint64_t file_limit(std::uint64_t capacity, double high_water, bool persistent);

/// The planner's order: sooner next use (Record::rank) first, write order between equals.
bool sooner(const catalog::Record* a, const catalog::Record* b) noexcept;
/// Sorts records in that order.
void order_by_rank(std::vector<catalog::Record*>& records);
/// The same for `records` whose first `kept` entries are already in that
/// order: `moved` (the rest, any order) is sorted and merged in, O(n + k log k)
/// for k moved. `out` is scratch space.
void merge_by_rank(std::vector<catalog::Record*>& records, std::size_t kept, std::vector<catalog::Record*>& moved,
                   std::vector<catalog::Record*>& out);

/// Records not written yet that the schedule says will come: LIFO's
/// record-count hint, an explicit order's ids not written yet.
struct Coming {
  /// Their ranks (next_use_rank()), ascending; a LIFO record still to come
  /// ranks before every record written (0).
  std::vector<std::uint64_t> ranks;
  std::uint64_t bytes = 0;  ///< each one's size: the last write's
  /// The schedule says no write comes after those written and in progress
  /// (lifo:N with N written, an explicit order's ids all written): DRAM then
  /// keeps no room for a next write (write_headroom()).
  bool writes_done = false;
};

/// The writes an application makes back to back, between two computes: a
/// step handed over as several records (docs/simulator.md, "Records in
/// parts"). A write that starts sooner after the one before returned than
/// that one took to copy in belongs to the same burst. Fed by the engine's
/// write() and by mlbs-sim's writes alike.
class WriteBursts {
 public:
  /// A write of `bytes` starts `gap_s` after the one before returned, which
  /// took `copy_s` to copy in (the first write: any gap, 0 s of copy).
  /// Whether it begins a burst (a step's first record).
  bool start(std::uint64_t bytes, double gap_s, double copy_s) {
    last_ = bytes;
    if (gap_s < copy_s) {
      current_ += bytes;
      return false;
    }
    if (current_) {  // a burst before this one: gap_s is the compute between them
      previous_gap_ = gap_;
      gap_ = gap_s;
    }
    previous_ = current_;
    current_ = bytes;
    return true;
  }
  /// The longer of the burst under way and the one before it: what the next step is taken to write.
  std::uint64_t bytes() const { return current_ > previous_ ? current_ : previous_; }
  /// The last write's bytes (a step's part when steps come in parts); kept once reads begin.
  std::uint64_t last_bytes() const { return last_; }
  /// The shorter of the last two gaps between bursts (the compute a burst's
  /// drain can hide behind), 0 until one is known: no step is taken to
  /// compute longer than the shortest seen lately.
  double gap_s() const {
    if (gap_ < 0) return 0;
    return previous_gap_ >= 0 && previous_gap_ < gap_ ? previous_gap_ : gap_;
  }

 private:
  std::uint64_t current_ = 0, previous_ = 0, last_ = 0;
  double gap_ = -1, previous_gap_ = -1;  // -1: not known yet
};

/// Limits::to_come_bytes of a run taken to go on for good (outlasts_a_move()).
inline constexpr std::uint64_t kRunGoesOn = std::uint64_t(1) << 60;

/// Whether FIFO without its count (under bottleneck_first()) has gone on as
/// long as the last file tier (`last_rate` bytes/s) takes to move one write
/// of `write_bytes`: `writing_s` since its first write began
/// (WriteState::writing_s), or the compute before the steps written so far
/// (`written_bytes`, block-rounded as WriteBursts counts, in bursts of
/// WriteBursts::bytes(), WriteBursts::gap_s() before each), whichever is
/// longer. From then on placement takes the run to go on
/// (limits_for_writes() sets Limits::to_come_bytes to kRunGoesOn), and the
/// last tier takes the next record to leave DRAM whenever no drain is under
/// way into it. The ski-rental rule: until then the time the tier
/// has idled, which no later plan gives back, is less than what a record
/// sent down costs a run that turns out to fit above it, its read back (its
/// write took the idle tier's time). Taken to go on only as long again as
/// so far (before the fiftieth sitting), the run held the tier back until
/// DRAM and the bounded tiers held half of it: FIFO over two bounded tiers
/// 2x apart above an unlimited one, DRAM and each for 8 of 32 records,
/// 1.269x -> 1.146x the bound, as with the count (fifo:N); of the sweep's
/// FIFO points, those where not knowing the count cost more than 0.005: 31
/// -> 7. From half a move, a run that fits above the last tier
/// (`mlbs_sim_check --machine small --schedule fifo` at 20 ms per call)
/// sent a record read third down for nothing: 1.000x -> 1.069x. The time
/// since the first write alone lags the compute by a step, which cost up
/// to 0.09; the compute alone never starts steps written back to back.
/// Before the run outlasts a move, the guess still pays (taken to end with
/// what is written: 6-20 points worse per sweep). docs/architecture.md,
/// "Without the count, once the run outlasts a move", has the sweeps.
bool outlasts_a_move(const WriteBursts& bursts, std::uint64_t written_bytes, std::uint64_t write_bytes,
                     double last_rate, double writing_s = 0);

/// Whether DRAM keeps only the first record of some steps while writes come
/// (Limits::leads_first): FIFO in scratch mode over one file tier, steps
/// (`bursts`: WriteBursts) with compute between them, and DRAM for
/// kDoubleBufferSlots of them. By rank DRAM keeps the first steps whole, and
/// the tier, which capacity makes the bottleneck, idles until DRAM is full;
/// keeping some steps' first records instead (lead_spacing() says which), it
/// drains the rest from the first write, and each read then fetches only the
/// rest. So DRAM's share is spread over the run, as the least time a linear
/// program over the run finds (benchmarks/lp_bound.py) spreads it.
///
/// Over several file tiers (`file_rates`, `file_bytes`: index 0 DRAM), only
/// for whole records (a step of one record) over unlimited tiers where the
/// fastest is kLeadTierRatio times the rate of the others that join
/// (joins_spread() over the `budget`) together: it then carries nearly all
/// the traffic, as the one tier does. With tiers closer than that
/// (`mlbs_sim_check --machine spread`, 2x apart) the reads at the turn
/// wanted more of DRAM's slots for fetches in flight than the leads and the
/// last writes left them: the real run 5% slower. A step in parts leaves
/// DRAM in parts already, and there the rule lost up to 0.05; bounded
/// tiers, up to 0.08.
bool leads_first(Schedule::Kind kind, std::uint64_t budget, const WriteBursts& bursts, std::uint64_t last_write_bytes,
                 const std::vector<double>& file_rates, const std::vector<std::uint64_t>& file_bytes,
                 bool persistent);

/// leads_first()'s bound on the rate of the other joining tiers: the
/// fastest carries at least four fifths of the traffic.
inline constexpr double kLeadTierRatio = 4.0;

/// lead_spacing()'s guess of a run's length, in multiples of the steps
/// written so far (FIFO without its count cannot know it).
inline constexpr std::uint64_t kLeadRunGuess = 4;

/// Under leads_first(), DRAM keeps the first record of every `spacing`-th
/// step (the first step's always): the least power of two with which the
/// leads of kLeadRunGuess x `steps` written fit DRAM's `slots` for them. As
/// the run goes on the spacing doubles and every other lead kept drains, so
/// DRAM's records stay spread over the steps without knowing their count.
/// A record each step, a lead each step kept DRAM's first steps whole (the
/// tier idle until DRAM was full); the count itself (fifo:N, spacing = N /
/// slots) did no better over the sweep. A guess of the run as long again
/// kept too many early steps (`fifo/t1/n32/s8/fs0.00/bw2/f1.0` 1.069x
/// against 1.049x), and keeping the first step's lead only, 1.055x. 1 with
/// no slots.
std::uint64_t lead_spacing(std::uint64_t steps, std::uint64_t slots);

/// The write room DRAM keeps while writes come (write_headroom()'s input):
/// a burst's bytes (WriteBursts) where DRAM holds kDoubleBufferSlots of them,
/// or two of them where either the file tiers do not spread (`spreading`
/// false: one tier, or one so much faster that the others never join, so
/// that no record the room sends down could have gone to a second tier in
/// parallel) or the compute between bursts (`gap_s`, WriteBursts::gap_s())
/// covers a burst's drain at the file tiers' combined rate
/// (`drain_bytes_per_s`, drain_rate()): then the helpers empty one burst's room
/// while the application computes, and the next burst lands without
/// waiting, as with double buffering. So a step's records all land while
/// the step before leaves DRAM. Else the last write's, as for records a
/// step each or writes with no compute between them (one burst that
/// outgrows DRAM, or tiers slower than the compute: the tiers are the
/// bottleneck and room taken from the records DRAM holds would cost reads).
/// 0 once reads began (`last_write_bytes` 0).
///
/// mlbs-sim's sweep in four parts (`mlbs_sim_sweep --parts 4`): four
/// bursts' room, 442 -> 378 points above 1.05x, none changed for whole
/// records; two where the tiers do not spread: 348; two wherever the tiers
/// spread: 298, but 31 worse by up to 0.55 (a FIFO over three tiers at a
/// fifth of the I/O time in compute, whose records DRAM then kept too few
/// of); two where the compute covers the drain at the unlimited tiers'
/// rate: 320; at the rate of every tier that joins over the DRAM the room
/// leaves (drain_rate()): 301, 73 better, 14 worse by up to 0.11
/// (architecture.md, "Room for a step written in parts").
std::uint64_t write_room(std::uint64_t burst_bytes, std::uint64_t last_write_bytes, std::uint64_t budget,
                         bool spreading = true, double gap_s = 0, double drain_bytes_per_s = 0);

/// The rate a step of records of `write_bytes` each is sure to drain at,
/// write_room()'s `drain_bytes_per_s`: the sum of `file_rates` (index 0 unused) over the
/// file tiers that join spreading (joins_spread()) with `lookahead_bytes` of
/// DRAM ahead, bounded tiers included (a bounded tier that joins takes its
/// share until it fills, and a tier that fills leaves the spread to the
/// others through the plan, not through this rate); 0 if any rate is
/// unknown (0).
double drain_rate(const std::vector<double>& file_rates, std::uint64_t write_bytes, std::uint64_t lookahead_bytes);

/// write_room() for the bursts seen so far within `budget` bytes of DRAM:
/// the drain rate is that of the tiers that join over the DRAM a burst's
/// room leaves (budget - burst), as the room shrinks the lookahead the
/// slower tiers need to join. The tiers spread where some slower tier
/// joins over the DRAM one write's room leaves (the most it could have):
/// a tier too slow to join even then never takes a record the room sends
/// down (FIFO over a tier 20x slower, a step in four parts: 1.28x -> 1.07x
/// the bound; asked beside a burst's room, LIFO lost up to 0.20 at bw5).
std::uint64_t write_room(const WriteBursts& bursts, std::uint64_t last_write_bytes, std::uint64_t budget,
                         const Limits& limits);

/// The share of a step's drain that the compute between steps must cover
/// for steps_double_buffered(): room for one write there blocked every step
/// for about its whole drain, room for the step for the tenth left over.
inline constexpr double kNearlyCovered = 0.9;

/// Whether FIFO's steps, written in parts (`bursts` of two parts or more,
/// with compute between them), are double-buffered both ways over file
/// tiers that spread (`file_rates`, spreads()), in scratch mode, where DRAM
/// holds two steps but fewer than kDoubleBufferSlots and the compute covers
/// at least kNearlyCovered of a step's drain but not all of it (write_room()
/// gives a step's room where it covers all). The drain is at drain_rate()
/// over the DRAM all but one part leaves, the lookahead the rule gives: a
/// tier 5x slower joins there, not over what a step's room leaves, and
/// counted as absent it kept the rule out (`.../bw5/f1.0` 1.312x ->
/// 1.065x). Then (limits_for_writes()) the writes keep room for a step, the
/// slower tiers join over the DRAM all but one part leaves (the lookahead
/// reads will have; a step's room alone would keep them out), and once
/// reads begin DRAM keeps room for two steps (Limits::read_room_bytes):
/// the step being read and the next one, fetched
/// during the compute. With room for one write, the records DRAM held kept
/// six of eight slots through the writes and each step waited for its drain
/// (`fifo/t2/n96/s2/fs0.00/bw2/f1.0` in four store parts: 1.390x the
/// bound, writes blocked 24% of the wall). A step's room alone left more
/// than a step of drains lagging at the turn, where they stop, and the
/// records only DRAM held kept six slots through the reads (1.555x);
/// beside the reads' room for two steps, 1.113x. Where the compute covers
/// the whole drain, the drains keep up, DRAM holds the last step at the
/// turn and the reads stream through the rest: the reads' room there cost
/// up to 0.044 at 8 records, and a lower bar up to 0.22 (architecture.md,
/// "FIFO's steps double-buffered both ways").
bool steps_double_buffered(Schedule::Kind kind, std::uint64_t budget, const WriteBursts& bursts,
                           const std::vector<double>& file_rates, bool persistent);

/// The write room (write_room()), which dram_limit() keeps DRAM room for (a
/// writer finds a clean slot), or 0 once `coming` says no write is to come:
/// that room would send a record read among the first down to a slower
/// tier, through the bottleneck, for a write that never comes.
std::uint64_t write_headroom(std::uint64_t last_write_bytes, const Coming& coming);

/// Places `ranked` (soonest next use first, see place()) within `limits` and
/// stores the answer in each record's want_mem and dir_target (a staged
/// mark whose copy has gone, Record::staged, is cleared on the way). The
/// `coming` records take their places by rank too, before a written record
/// of the same rank: those read sooner than a written record claim DRAM and
/// the fast tiers first, so the records written already go where they will
/// end.
void place_records(std::span<catalog::Record* const> ranked, const Limits& limits, const Coming& coming = {});

/// LIFO with Schedule::expected_records: the records still to come after
/// the next one, of `store_records` written (the next write, in progress or
/// not, has its room in dram_limit()'s headroom); 0 once reads began
/// (`writing` false).
std::uint64_t records_to_come(std::uint64_t expected, std::uint64_t store_records, bool writing);

/// LIFO without a record count (`uncounted_lifo`), while writes come
/// (`writing`), in scratch mode with Config::copy_ahead on, over file tiers
/// that spread (spreads()) and have no capacity limit (`file_bytes` all 0):
/// how many records to plan as still to come, as many as DRAM holds
/// (`dram_records`, at least 1: the run is taken to outgrow DRAM); 0
/// otherwise. Like a counted LIFO's, they rank before every record written
/// and claim DRAM first, so every record written is placed below it from
/// the first on: each is drained while the tiers would otherwise idle,
/// keeping its DRAM copy until a write needs the room, and spreading shares
/// them out by the work arriving on each tier (Cao et al.'s first
/// opportunity). Should the run fit after all, it still reads from DRAM;
/// the price is writes to idle tiers, as a copy ahead's, and the first read
/// stops those still under way (Engine::turn()). Not over a bounded tier:
/// records that may never come would claim its room and send those written
/// to a slower tier for good.
std::uint64_t guessed_to_come(std::uint64_t dram_records, bool uncounted_lifo, bool writing, bool copy_ahead,
                              bool persistent, const std::vector<std::uint64_t>& file_bytes,
                              const std::vector<double>& file_rates);

/// Whether each write ranks before every record written already: LIFO
/// without its record count (`counted`), or an unknown schedule (LRU).
constexpr bool newest_first(Schedule::Kind kind, bool counted) noexcept {
  return (kind == Schedule::Kind::lifo && !counted) || kind == Schedule::Kind::unknown;
}

/// What a planning pass knows of the application's writes so far, from
/// which limits_for_writes() derives the rest of its Limits. The engine
/// fills it from its catalog, mlbs-sim from its model: one set of rules.
struct WriteState {
  Schedule::Kind kind = Schedule::Kind::unknown;
  bool counted = false;              ///< told its record count (lifo:N, fifo:N)
  std::uint64_t budget = 0;          ///< DRAM records may take (lent slots excluded)
  std::uint64_t pending_bytes = 0;   ///< writes in progress
  std::uint64_t last_write_bytes = 0;  ///< 0 once reads began
  const WriteBursts& bursts;
  bool copy_ahead = true;            ///< Config::copy_ahead
  /// Seconds since this write phase's first write began (0 once reads
  /// began): how long the file tiers have had writes to take
  /// (outlasts_a_move()).
  double writing_s = 0;
  /// A write waits for a DRAM slot now (View::write_waits).
  bool write_waits = false;
};

/// Whether the schedule reads every record written so far (`ranked`) after
/// those still to come (`coming`), as writes_leave_dram() asks: LIFO told its
/// count always; an explicit order while no record written ranks before
/// the last of them (a revolve-like order's older groups, before the newest
/// group's head is written: from then on DRAM keeps the records read first,
/// as the order says). A revolve-like order over two unlimited tiers with
/// DRAM for two records kept its records in DRAM until a write needed the
/// slot, then drained them one at a time into the fastest tier, the slower
/// one idle (`mlbs_sim_check --machine pair --schedule revolve`: 1.576 s
/// real, 1.68x the bound; streamed, 1.312 s). Streaming from the first write
/// drained the head, read first, too: 3 sweep points worse by up to 0.06.
bool read_after_coming(const WriteState& w, std::span<catalog::Record* const> ranked, const Coming& coming);

/// The schedule-derived part of a pass's limits, from `w`, the `ranked`
/// records and what `limits` says of the file tiers already (file_bytes,
/// file_rates, persistent): dram_bytes (dram_limit() beside the write room
/// and streams), coming_dram_bytes, lookahead_bytes when writes leave DRAM
/// or steps are double-buffered (steps_double_buffered(), which sets
/// read_room_bytes too), bottleneck_first, idle_tiers_start and
/// leads_first. LIFO without its count gets its guessed records at the
/// front of `coming.ranks` (guessed_to_come()), whose writes_done must be
/// set. Limits::to_come_bytes, per store, stays the caller's where the
/// count is known; without it, kRunGoesOn once outlasts_a_move().
void limits_for_writes(const WriteState& w, std::span<catalog::Record* const> ranked, Limits& limits,
                       Coming& coming);

/// Dirty bytes of each tier above the last (see dirty_on()); `tiers` entries.
std::vector<std::uint64_t> dirty_bytes(std::span<catalog::Record* const> ranked, int tiers, bool persistent);

}  // namespace mlbs::engine::policies
