// Tests of the simulator (src/sim/): the model's bookkeeping, the physical
// bound as a true lower bound over hundreds of configurations, how close the
// planner's policies come to it, and refused models.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "mlbs/errors.hpp"
#include "sim/sim.hpp"
#include "sim/sweep.hpp"

namespace {

using mlbs::Schedule;
using namespace mlbs::sim;

constexpr std::uint64_t kMiB = 1ull << 20;

Machine two_tiers(std::uint64_t dram, std::uint64_t fast_cap) {
  Machine m;
  m.dram_bytes = dram;
  m.tiers = {{fast_cap, 1024.0 * kMiB, 0, 1.0}, {0, 200.0 * kMiB, 0, 1.0}};
  return m;
}

/// DRAM for `slots` records of 16 MiB over two unlimited tiers at 1 GiB/s and 512 MiB/s (rates known: spreading).
Machine unlimited_pair(std::uint64_t slots) {
  Machine m;
  m.dram_bytes = slots * 16 * kMiB;
  m.tiers = {{0, 1024.0 * kMiB, 0, 1.0}, {0, 512.0 * kMiB, 0, 1.0}};
  return m;
}

Workload records(std::uint32_t n, double compute_s, Schedule::Kind k = Schedule::Kind::lifo) {
  Workload w;
  w.record_bytes = 16 * kMiB;
  w.records = n;
  w.compute_per_write_s = w.compute_per_read_s = compute_s;
  w.schedule = k;
  return w;
}

/// Timeline spans of helper copies (or waits) named `what`.
std::size_t spans_named(const Result& r, const char* what) {
  return std::size_t(std::count_if(r.timeline.begin(), r.timeline.end(), [&](const Span& s) { return s.what == what; }));
}

/// The earliest timeline span named `what`, or nullptr.
const Span* first_span(const Result& r, const char* what) {
  const Span* first = nullptr;
  for (const Span& s : r.timeline)
    if (s.what == what && (!first || s.start_s < first->start_s)) first = &s;
  return first;
}

/// When the first helper copy into tier `dst` began (from tier `src`, or from any with -1); 1e9 if none did.
double first_copy_into(const Result& r, int dst, int src = -1) {
  double first = 1e9;
  for (const Span& s : r.timeline)
    if (s.dst == dst && (src < 0 || s.src == src)) first = std::min(first, s.start_s);
  return first;
}

/// Tier `t`'s idle time between its first copy and the end of the write phase, counting the copies that
/// read or write it and start in that phase: the longest stretch and their sum.
struct Idle {
  double longest = 0, total = 0;
};
Idle write_phase_idle(const Result& r, int t) {
  std::vector<std::pair<double, double>> busy;
  for (const Span& s : r.timeline)
    if ((s.src == t || s.dst == t) && s.start_s < r.write_phase_s) busy.emplace_back(s.start_s, s.end_s);
  std::sort(busy.begin(), busy.end());
  Idle idle;
  double busy_until = busy.empty() ? 0.0 : busy.front().second;
  for (const auto& [start, end] : busy) {
    idle.longest = std::max(idle.longest, start - busy_until);
    idle.total += std::max(0.0, start - busy_until);
    busy_until = std::max(busy_until, end);
  }
  return idle;
}

/// One point of the sweep (sim/sweep.hpp) by its key, its records in `parts`, simulated (with its timeline).
Result sweep_point(const char* key, std::uint32_t parts = 1, bool hint = false) {
  auto points =
      sweep_points({Schedule::Kind::lifo, Schedule::Kind::fifo, Schedule::Kind::explicit_order}, hint, key, parts);
  if (points.size() != 1) throw std::logic_error(std::string("no sweep point ") + key);
  points[0].machine.timeline = true;
  return simulate(points[0].machine, points[0].workload);
}

// Everything fits DRAM: every read is served from DRAM (nothing comes back up), no blocking, wall = compute + copies.
TEST(Sim, FitsInDramReadsFromDram) {
  const Result r = simulate(two_tiers(512 * kMiB, 0), records(8, 0.01));
  EXPECT_EQ(r.tiers[1].bytes_out + r.tiers[2].bytes_out, 0u);
  EXPECT_NEAR(r.blocked_s(), 0.0, 1e-9);
  EXPECT_NEAR(r.wall_s, r.compute_s + r.copy_s, 1e-9);
  EXPECT_EQ(r.bytes_written, 8 * 16 * kMiB);
  EXPECT_EQ(r.bytes_read, 8 * 16 * kMiB);
}

// Out of core: what comes back up went down first, the fast tier's capacity holds, and the bound is the capacity split's.
TEST(Sim, SpillGoesDownAndComesBackWithinCapacity) {
  const Result r = simulate(two_tiers(32 * kMiB, 96 * kMiB), records(16, 0.005));
  EXPECT_LE(r.tiers[1].bytes_out + r.tiers[2].bytes_out, r.tiers[1].bytes_in + r.tiers[2].bytes_in);
  EXPECT_GE(r.tiers[1].bytes_out + r.tiers[2].bytes_out, 256 * kMiB - 32 * kMiB) << "all but DRAM's comes back";
  EXPECT_LE(r.tiers[1].peak_used_bytes, 96 * kMiB);
  EXPECT_GE(r.tiers[2].bytes_in, 128 * kMiB) << "capacity forces 256 - 32 - 96 MiB to the slow tier";
  EXPECT_NEAR(r.least_io_s, 2 * 128.0 / 200.0, 1e-6);
  EXPECT_GT(r.blocked_s(), 0.0);
  EXPECT_GT(r.write_phase_s, 0.0);
  EXPECT_LT(r.write_phase_s, r.wall_s) << "the reads come after the last write";
}

// The bound's I/O side waits for the first write's compute and, when every record is read back, leaves the last
// read's compute after it; an order that never reads a record back leaves that compute no tail.
TEST(Sim, IoSpanAddsTheFirstWritesAndTheLastReadsCompute) {
  Workload w = records(16, 0.005);
  w.compute_per_write_s = 0.03;
  const Result r = simulate(two_tiers(32 * kMiB, 96 * kMiB), w);
  EXPECT_NEAR(r.io_span_s, 0.03 + r.least_io_s + 0.005, 1e-9);
  EXPECT_NEAR(r.bound_s, r.io_span_s, 1e-9) << "16 x 35 ms of compute do not cover 1.28 s of I/O";
  EXPECT_GE(r.wall_s, r.bound_s - 1e-9);
  w.schedule = Schedule::Kind::explicit_order;
  w.order.clear();
  for (std::uint64_t id = 15; id >= 1; --id) w.order.push_back(id);  // record 0 is never read
  const Result partial = simulate(two_tiers(32 * kMiB, 96 * kMiB), w);
  EXPECT_NEAR(partial.io_span_s, 0.03 + partial.least_io_s, 1e-9);
}

// Compute between the last write and the first read (the bench's turn): the slow tier, holding what DRAM and
// the full fast tier cannot, idles through it, in the model as in the bound, and no run beats that.
TEST(Sim, TheTurnsComputeIsInTheRunAndInTheBound) {
  Workload w = records(16, 0.005);
  w.compute_per_write_s = 0.03;
  const Result plain = simulate(two_tiers(32 * kMiB, 96 * kMiB), w);
  w.compute_at_turn_s = 0.04;
  const Result turn = simulate(two_tiers(32 * kMiB, 96 * kMiB), w);
  EXPECT_NEAR(turn.compute_s, plain.compute_s + 0.04, 1e-9);
  EXPECT_NEAR(turn.io_span_s, 0.03 + turn.least_io_s + 0.04 + 0.005, 1e-9);
  EXPECT_GE(turn.wall_s, turn.bound_s - 1e-9);
  EXPECT_GE(turn.wall_s, plain.wall_s + 0.04 - 1e-9) << "the slow tier cannot use the turn";
}

// Compute-bound: the helpers hide the I/O; blocking is a small share of wall.
TEST(Sim, ComputeBoundHidesTheIo) {
  const Result r = simulate(two_tiers(64 * kMiB, 128 * kMiB), records(32, 0.2));
  EXPECT_LT(r.blocked_s() / r.wall_s, 0.03) << r.blocked_s();
  EXPECT_LT(r.wall_s / r.bound_s, 1.05);
}

// A codec (ratio 4): the file tiers move and hold a quarter of the bytes (the fast tier then holds 4x the
// records), an I/O-bound run gets faster, its bound shrinks with it; slow encoding takes some of that back.
TEST(Sim, CodecStoresAFractionAndShortensAnIoBoundRun) {
  const Workload w = records(16, 0.005);
  const Result none = simulate(two_tiers(32 * kMiB, 96 * kMiB), w);
  Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  m.codec_ratio = 4;
  const Result coded = simulate(m, w);
  const auto file_in = [](const Result& r) { return r.tiers[1].bytes_in + r.tiers[2].bytes_in; };
  EXPECT_LE(file_in(coded) * 4, file_in(none));
  // (the slow tier may get copies ahead while the fast one fills, never a record's only copy)
  // 224 MiB of records fit the 96 MiB fast tier at a quarter; spreading may send a frame or so to the
  // slow tier, which reads it back beside the fast one.
  EXPECT_LE(coded.tiers[2].bytes_out, 4 * kMiB);
  EXPECT_GE(coded.tiers[1].bytes_out, 16 * coded.tiers[2].bytes_out);
  EXPECT_LT(coded.wall_s, 0.7 * none.wall_s);
  EXPECT_LT(coded.least_io_s, none.least_io_s);
  EXPECT_GE(coded.wall_s, coded.bound_s - 1e-9);
  m.encode_bytes_per_s = m.decode_bytes_per_s = 100.0 * kMiB;  // 160 ms per record each way
  const Result slow = simulate(m, w);
  EXPECT_GT(slow.wall_s, coded.wall_s);
  // Records read back exactly once each, whatever is stored.
  EXPECT_EQ(slow.bytes_read, 16 * 16 * kMiB);
}

// LIFO without the record-count hint, the demo's machine: with copy ahead the slow tier starts long before
// DRAM and the fast tier are full (8 records of 16 written, the 7th at 0.15 s) and the run ends sooner.
TEST(Sim, CopyAheadStartsTheSlowTierWithTheFirstRecords) {
  Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  m.timeline = true;
  const Workload w = records(16, 0.020);
  const Result with = simulate(m, w);
  m.copy_ahead = false;
  const Result without = simulate(m, w);
  const auto first_on_slow = [](const Result& r) {
    double t = 1e9;
    for (const Span& s : r.timeline)
      if (s.dst == 2) t = std::min(t, s.start_s);
    return t;
  };
  EXPECT_LT(first_on_slow(with), 0.12);
  EXPECT_GT(first_on_slow(without), 0.15);
  EXPECT_LT(with.wall_s, 0.95 * without.wall_s);
  EXPECT_EQ(with.bytes_read, without.bytes_read);
}

// One unlimited file tier, DRAM for 8 of 32 records, compute equal to the least I/O: the tier copies DRAM's
// oldest record ahead from the first write on instead of idling until DRAM is full (94 ms); within 1.05x of
// the bound (1.027x; 1.126x before); 9% longer with copy ahead off.
TEST(Sim, OneFileTierTakesDramsRecordsAheadFromTheFirstWrite) {
  Machine m;
  m.dram_bytes = 128 * kMiB;
  m.tiers = {{0, 1024.0 * kMiB, 0, 1.0}};
  m.timeline = true;
  const Workload w = records(32, 0.75 / 64);
  const Result with = simulate(m, w);
  m.copy_ahead = false;
  const Result without = simulate(m, w);
  EXPECT_LT(first_copy_into(with, 1), 0.03) << "the tier's first copy";
  EXPECT_LT(with.wall_s, 1.05 * with.bound_s);
  EXPECT_GT(without.wall_s, 1.05 * with.wall_s);
}

/// mlbs_sim_check's machine `small`: DRAM 32 MiB over a 32 MiB tier at 512 MiB/s and an unlimited one at 128 MiB/s.
Machine small_machine() {
  Machine m;
  m.dram_bytes = 32 * kMiB;
  m.tiers = {{32 * kMiB, 512.0 * kMiB, 0, 1.0}, {0, 128.0 * kMiB, 0, 1.0}};
  return m;
}

/// Its run: LIFO, 8 records of 8 MiB, 10 ms of compute per call.
Workload small_run() {
  Workload w = records(8, 0.010);
  w.record_bytes = 8 * kMiB;
  return w;
}

// LIFO without its count, 8 records of 8 MiB: DRAM for 4 over a tier bounded at 4 (512 MiB/s) and an
// unlimited one at 128 MiB/s, 10 ms of compute per call. Capacity forces nothing onto the slow tier, yet
// the fast one idled until DRAM was full (its first drain at 42 ms) and then each write waited for a drain
// slower than itself (writes blocked 31 ms, 1.24x the bound). Now the fast tier takes DRAM's records from
// the second write on: 1.02x.
TEST(Sim, ABoundedFastTierTakesDramsRecordsBesideTheSlowTiersCopyAhead) {
  Machine m = small_machine();
  m.timeline = true;
  const Result r = simulate(m, small_run());
  EXPECT_LT(first_copy_into(r, 1), 0.025);
  EXPECT_LT(r.write_blocked_s, 0.01);
  EXPECT_LT(r.wall_s, 1.05 * r.bound_s);
}

// The same machine, told the count (lifo:8): the four records to come hold DRAM at the turn, so the four
// written go to the fast tier, which holds them all, and none to the slow one (placed within the writes'
// DRAM room, the records to come claimed the fast tier's room and record 2 went to the slow tier: 1.141x).
TEST(Sim, ACountedLifoPlansItsRecordsToComeInDramLessOneWrite) {
  Workload w = small_run();
  w.hint_records = true;
  const Result r = simulate(small_machine(), w);
  EXPECT_EQ(r.tiers[2].bytes_in, 0u);
  EXPECT_LT(r.wall_s, 1.01 * r.bound_s);
}

// The same machine, FIFO told the count (fifo:8): DRAM and the fast tier hold all eight records once the
// writes end, so the slow tier takes none. Weighed against DRAM less the writes' room, the run seemed to
// force a record through it, which the first read then waited for (1.370x; uncounted 1.118x).
TEST(Sim, FifoWithItsCountSendsNothingDownThatDramAndTheFastTierHold) {
  Workload w = small_run();
  w.schedule = Schedule::Kind::fifo;
  w.hint_records = true;
  const Result r = simulate(small_machine(), w);
  EXPECT_EQ(r.tiers[2].bytes_in, 0u);
  EXPECT_LT(r.wall_s, 1.16 * r.bound_s);
}

/// mlbs_sim_check's machine `three`, timeline on: DRAM 64 MiB over 48 MiB at 512 MiB/s, 48 MiB at 256 MiB/s and
/// an unlimited tier at 128 MiB/s, three helpers, copies into slots at 7 GiB/s.
Machine three_file_tiers() {
  Machine m;
  m.dram_bytes = 64 * kMiB;
  m.helpers = 3;
  m.copy_bytes_per_s = 7.0 * double(1ull << 30);
  m.tiers = {{48 * kMiB, 512.0 * kMiB, 0, 1.0}, {48 * kMiB, 256.0 * kMiB, 0, 1.0}, {0, 128.0 * kMiB, 0, 1.0}};
  m.timeline = true;
  return m;
}

// LIFO without the count over two bounded tiers (48 MiB at 512 and 256 MiB/s) above an unlimited one at 128
// MiB/s, DRAM for 8 of 24 records, 10 ms a call, copies into slots at 7 GiB/s (`mlbs_sim_check --machine
// three`): a record staged on the fast tier as the writes end stays there once reads begin, and its move
// down in flight stops at the turn; it was moved to the slowest tier and fetched back on demand (1.76x the
// bound; now 1.52x, as the real run's 1.47-1.53x).
TEST(Sim, AStagedRecordStaysOnTheFastTierOnceReadsBegin) {
  const Machine m = three_file_tiers();
  Workload w = records(24, 0.010);
  w.record_bytes = 8 * kMiB;
  const Result r = simulate(m, w);
  for (const Span& s : r.timeline) {
    // (the first read comes a copy out of its slot after the last write: 1.1 ms)
    if (s.what == "move down" && s.src > 0) EXPECT_LE(s.end_s, r.write_phase_s + 0.002) << "id " << s.id;
    EXPECT_NE(s.what, "demand fetch") << "id " << s.id << " from tier " << s.src;
  }
  EXPECT_LT(r.wall_s, 1.6 * r.bound_s);
}

/// Machine `three`, LIFO told the count of its 24 records of 8 MiB, 10 ms a call.
Result three_file_tiers_lifo_count() {
  Workload w = records(24, 0.010);
  w.record_bytes = 8 * kMiB;
  w.hint_records = true;
  return simulate(three_file_tiers(), w);
}

/// Expects no two of `copies` that write into one tier to overlap in time.
void expect_one_at_a_time_into_each_tier(const std::vector<const Span*>& copies) {
  for (std::size_t i = 0; i < copies.size(); ++i)
    for (std::size_t j = i + 1; j < copies.size(); ++j)
      if (copies[i]->dst == copies[j]->dst)
        EXPECT_TRUE(copies[i]->end_s <= copies[j]->start_s || copies[j]->end_s <= copies[i]->start_s)
            << "ids " << copies[i]->id << " and " << copies[j]->id << " go into tier " << copies[i]->dst << " at once";
}

// LIFO told the record count over two bounded tiers above an unlimited one (mlbs_sim_check --machine three): the
// oldest records drain into the last tier one at a time, each slot back as soon as its copy ends, where three
// drains sharing the tier held three slots for 0.16 s and the writes waited (1.52x the bound; now 1.24x).
TEST(Sim, OneDrainAtATimeIntoTheLastTier) {
  const Result r = three_file_tiers_lifo_count();
  std::vector<const Span*> into_last;
  for (const Span& s : r.timeline)
    if (s.what == "drain DRAM" && s.dst == 3) into_last.push_back(&s);
  ASSERT_GE(into_last.size(), 2u);
  expect_one_at_a_time_into_each_tier(into_last);
  EXPECT_LT(r.wall_s, 1.3 * r.bound_s);
}

// The same machine and workload: DRAM's drains and stages into a faster tier, too, go one at a time, as no two
// copies writing into one tier add bandwidth there (1.24x the bound with drains sharing the faster tiers; now
// 1.15x; real runs 1.29x and 1.20x).
TEST(Sim, OneDrainAtATimeIntoAFasterTier) {
  const Result r = three_file_tiers_lifo_count();
  std::vector<const Span*> drains;
  for (const Span& s : r.timeline)
    if ((s.what == "drain DRAM" || s.what == "stage") && s.src == 0 && s.dst > 0 && s.dst < 3) drains.push_back(&s);
  ASSERT_GE(drains.size(), 4u);
  expect_one_at_a_time_into_each_tier(drains);
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// The same machine and workload with copies into slots at 16 GiB/s: records wait to be staged on the fastest tier
// rather than on the middle one, whose move down later shared the middle tier with the moves into it while the
// writes waited for the fastest tier's room (1.212x the bound, where copies at 7-12 GiB/s planned otherwise and
// took 1.145-1.152x; real runs flipped between those plans, 0.62 and 0.76 s).
TEST(Sim, RecordsAreStagedOnTheFastestTierOnly) {
  Machine m = three_file_tiers();
  m.copy_bytes_per_s = 16.0 * double(1ull << 30);
  Workload w = records(24, 0.010);
  w.record_bytes = 8 * kMiB;
  w.hint_records = true;
  const Result r = simulate(m, w);
  ASSERT_GT(spans_named(r, "stage"), 0u);
  for (const Span& s : r.timeline)
    if (s.what == "stage") EXPECT_EQ(s.dst, 1) << "id " << s.id;
  EXPECT_LT(r.wall_s, 1.16 * r.bound_s);
}

// LIFO told the record count, the demo's machine (micro at I/O ratio 8): the oldest records are placed on the
// slow tier from the start, and while it is busy the next ones are staged on the fast tier instead of holding
// DRAM, so the slow tier works from the first record on: within 1.15x of the physical bound (1.134x), where
// draining DRAM straight into the busy slow tier took 1.27x.
TEST(Sim, StagingKeepsTheSlowTierBusyWhenTheRecordCountIsKnown) {
  Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  m.timeline = true;
  Workload w = records(16, 0.030);
  w.hint_records = true;
  const Result r = simulate(m, w);
  std::size_t staged = 0;
  double first_on_slow = 1e9;
  for (const Span& s : r.timeline) {
    staged += s.what == "stage";
    if (s.dst == 2) first_on_slow = std::min(first_on_slow, s.start_s);
  }
  EXPECT_GE(staged, 4u);
  EXPECT_LT(first_on_slow, 0.035) << "the first record goes down as soon as it is written";
  EXPECT_LT(r.wall_s, 1.15 * r.bound_s);
  EXPECT_EQ(r.tiers[2].bytes_in, 128 * kMiB) << "nothing more than capacity forces down";
}

// An explicit order names the records still to come, as "lifo:N" does: read newest first, it plans exactly as
// LIFO told the record count (the demo's machine, micro at I/O ratio 8). Both, and LIFO without the count
// (which copies ahead instead), come within 3% of the physical bound there.
TEST(Sim, AnExplicitOrderTellsWhatIsToComeAsLifoNDoes) {
  const Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  Workload lifo = records(16, 0.030);
  const Result plain = simulate(m, lifo);
  lifo.hint_records = true;
  const double hinted = simulate(m, lifo).wall_s;
  Workload order = records(16, 0.030, Schedule::Kind::explicit_order);
  for (std::uint64_t id = 16; id-- > 0;) order.order.push_back(id);
  const Result explicit_order = simulate(m, order);
  EXPECT_NEAR(explicit_order.wall_s, hinted, 1e-9);
  EXPECT_LT(explicit_order.wall_s, 1.03 * explicit_order.bound_s);
  EXPECT_LT(plain.wall_s, 1.03 * plain.bound_s);
}

// Two unlimited tiers, 1 GiB/s and 512 MiB/s, and DRAM for 8 records: the bound splits the spill 2:1
// between them, and so does placement (spreading); a record being drained counts as its tier's work, so
// two helpers drain into both tiers at once. All on the fast tier, or drained in pairs, was 1.55x-1.73x;
// now 1.11x.
TEST(Sim, TiersOfKnownBandwidthShareTheSpill) {
  const Result r = simulate(unlimited_pair(8), records(32, 0));
  EXPECT_GT(r.tiers[2].bytes_in, 6 * 16 * kMiB) << "the slower tier takes about a third of 24 records";
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// LIFO without the record-count hint, on the demo's machine at I/O ratio 8: the first read stops the copy
// ahead in flight (the writes it made room for are over), so the slow tier takes only the records capacity
// forces there and turns to the reads at once (1.12x the bound; 1.185x when the copy ran on).
TEST(Sim, TheFirstReadStopsTheCopiesAhead) {
  Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  m.timeline = true;
  const Result r = simulate(m, records(16, 0.03));
  EXPECT_EQ(spans_named(r, "copy ahead, cancelled"), 1u);
  EXPECT_EQ(r.tiers[2].bytes_in, 128 * kMiB);
  EXPECT_LT(r.wall_s, 1.15 * r.bound_s);
}

// LIFO without the count, 32 records of 4 MiB and DRAM for all of them over three tiers: while writes come,
// copies out of DRAM make room for the next ones (nothing says they are the last); the first read stops
// those of records placement now keeps in DRAM, so no tier takes a write no read uses and the run ends at
// the bound (1.61x when they ran on).
TEST(Sim, TheFirstReadStopsCopiesThatOnlyMadeRoomForWrites) {
  Machine m;
  m.dram_bytes = 128 * kMiB;
  m.tiers = {{32 * kMiB, 1024.0 * kMiB, 0, 1.0}, {32 * kMiB, 512.0 * kMiB, 0, 1.0}, {0, 256.0 * kMiB, 0, 1.0}};
  m.helpers = 3;
  m.timeline = true;
  Workload w = records(32, 0.0003);
  w.record_bytes = 4 * kMiB;
  const Result r = simulate(m, w);
  EXPECT_GE(spans_named(r, "move down, cancelled"), 1u);
  EXPECT_EQ(r.tiers[1].bytes_out + r.tiers[2].bytes_out + r.tiers[3].bytes_out, 0u) << "every read from DRAM";
  EXPECT_LT(r.wall_s, 1.01 * r.bound_s);
}

// A revolve-like order over three tiers 20x apart, DRAM for two records: a record read for the last time
// while it drains to the slowest tier (16 MiB at 2.56 MiB/s, 6 s) is released and its copy stops, which
// would otherwise hold that tier and a helper to the end of the run (1.25x the bound; now 1.00x).
TEST(Sim, AReleasedRecordsCopyStops) {
  const Result r = sweep_point("rev/t3/n8/s2/fs0.25/bw20/f0.0");
  EXPECT_EQ(spans_named(r, "drain DRAM, cancelled"), 1u);
  EXPECT_LT(r.wall_s, 1.01 * r.bound_s);
}

// LIFO without the count, DRAM for 8 of 32 records over two unlimited tiers 5:1 apart, compute as long as
// the least I/O: taken to outgrow DRAM, the run drains its first record as soon as it is written, not once
// half of DRAM is used (1.23x the bound with a full DRAM, 1.08x from half of it, 1.04x now).
TEST(Sim, UncountedLifoStartsItsUnlimitedTiersWithTheFirstRecord) {
  const Result r = sweep_point("lifo/t2/n32/s8/fs0.00/bw5/f1.0");
  const auto first = std::find_if(r.timeline.begin(), r.timeline.end(), [](const Span& s) { return s.src == 0; });
  ASSERT_NE(first, r.timeline.end());
  EXPECT_EQ(first->id, 0u);
  EXPECT_LT(first->start_s, 1.5 * r.compute_s / 64) << "drained right after the first write (one call's compute)";
  EXPECT_LT(r.wall_s, 1.06 * r.bound_s);
}

// FIFO, DRAM for 8 of 32 records over three unlimited tiers at 1 GiB/s, 512 and 256 MiB/s (all join): DRAM
// keeps the first records but one slot per tier, so three copies stream down at once and the write phase
// ends sooner (0.337 s with two streams, 1.33x the bound; now 0.26 s, 1.15x).
TEST(Sim, AKnownScheduleStreamsToEveryJoiningTierWhenDramHasTheSlots) {
  const Result r = sweep_point("fifo/t3/n32/s8/fs0.00/bw2/f0.0");
  EXPECT_LT(r.write_phase_s, 0.29);
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// LIFO without the count, DRAM for 8 of 32 records over two unlimited tiers 5:1 apart, no compute: the
// slower tier, idle, takes the second record to leave DRAM rather than wait until the fastest has a round
// trip of its own queued (first opportunity), so both drain from the first write on and stay busy (the
// slower one 54% of the run before, 1.11x the bound; now 1.01x).
TEST(Sim, AnIdleTierTakesTheNextDrainFromTheFirstWriteOn) {
  const Result r = sweep_point("lifo/t2/n32/s8/fs0.00/bw5/f0.0");
  double first[3] = {1e9, 1e9, 1e9};
  for (const Span& s : r.timeline)
    if (s.src == 0 && s.dst > 0) first[s.dst] = std::min(first[s.dst], s.start_s);
  EXPECT_LT(first[2] - first[1], 0.005) << "the slow tier starts with the fast one (its record takes 78 ms)";
  EXPECT_GT(r.tiers[2].busy_s, 0.9 * r.wall_s);
  EXPECT_LT(r.wall_s, 1.03 * r.bound_s);
}

// LIFO without its count, DRAM for 8 of 32 records over two tiers bounded at 8 and an unlimited one 25x
// slower than the fastest: while the middle tier copies the first record ahead, the last takes the second
// from DRAM at 0.10 s, where it idled until the middle one had a copy to pass down (0.45 s; 1.06x the
// bound, now 1.01x).
TEST(Sim, TheLastTierCopiesAheadFromDramWhileTheOneAboveIsBusy) {
  const Result r = sweep_point("lifo/t3/n32/s8/fs0.25/bw5/f0.5");
  EXPECT_LT(first_copy_into(r, 3), 0.2);
  EXPECT_LT(r.wall_s, 1.03 * r.bound_s);
}

// LIFO without its count, DRAM for 2 of 32 records over two tiers bounded at 8 records, 2x apart, above an
// unlimited one 2x slower still: the fastest tier's records are copied ahead straight to the last tier, not
// through the middle one, which took 36 records in and was busy 2.29 s of a 2.51 s run (1.39x the bound;
// now 24 records, 1.13x).
TEST(Sim, CopiesAheadFromTheFastestTierGoPastTheMiddleOne) {
  const Result r = sweep_point("lifo/t3/n32/s2/fs0.25/bw2/f1.0");
  std::size_t past = 0;
  for (const Span& s : r.timeline) past += s.what == "copy ahead" && s.src == 1 && s.dst == 3;
  EXPECT_GT(past, 0u) << "tier 1 copies ahead straight to tier 3";
  EXPECT_LE(r.tiers[2].bytes_in, 24 * 16 * kMiB);
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// LIFO without its count in four parts, DRAM for 2 of 96 records over two tiers bounded at 24 records, 2x
// apart, above an unlimited one 2x slower still: the middle tier takes at most two drains at once while the
// last one idles, where three helpers drained into it together and the last tier, the bottleneck, idled
// 0.42 s at a stretch, 0.58 s of the write phase in all (1.25x the bound; now, past its first 35 ms, 8 ms at
// most, 1.16x).
TEST(Sim, AMiddleTierTakesNoThirdDrainWhileTheLastIdles) {
  const Result r = sweep_point("lifo/t3/n96/s2/fs0.25/bw2/f1.0", 4);
  ASSERT_LT(first_copy_into(r, 3), r.write_phase_s);
  EXPECT_LT(write_phase_idle(r, 3).longest, 0.05) << "the last tier idles while writes come down";
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// FIFO without its count in four parts, DRAM for 2 of 32 records above a tier bounded at 8, 2x faster than an
// unlimited one, compute as long as the least I/O: while the application computes, the idle last tier takes a
// resident of the bounded tier (a move down), where the fast tier took every other part until full at 0.40 s
// and the last one idled 6.9 ms of each 21.5 ms step before, 0.10 s of the write phase in all; then every
// write waited on it (writes blocked 0.11 s, 1.20x the bound; now 7 ms idle, 0.02 s blocked, 1.05x).
TEST(Sim, TheIdleLastTierTakesResidentsFromAboveWhileFifoComputes) {
  const Result r = sweep_point("fifo/t2/n32/s2/fs0.25/bw2/f1.0", 4);
  std::size_t moves = 0;
  for (const Span& s : r.timeline) moves += s.what == "move down" && s.src == 1 && s.dst == 2;
  EXPECT_GT(moves, 0u);
  ASSERT_LT(first_copy_into(r, 2), r.write_phase_s);
  EXPECT_LT(write_phase_idle(r, 2).total, 0.03) << "the last tier idles while writes come down";
  EXPECT_LT(r.write_blocked_s, 0.05);
  EXPECT_LT(r.wall_s, 1.1 * r.bound_s);
}

// As above, 96 records, each tier 20x slower than the one above, compute as long as the least I/O:
// once DRAM is full the last tier still takes the record to leave DRAM next, at 21 s, where it idled
// until the middle tier filled and passed records down (81 s; 1.27x the bound, now 1.07x).
TEST(Sim, TheLastTierCopiesAheadFromAFullDram) {
  const Result r = sweep_point("lifo/t3/n96/s8/fs0.25/bw20/f1.0");
  EXPECT_LT(first_copy_into(r, 3), 30.0);
  EXPECT_LT(r.wall_s, 1.1 * r.bound_s);
}

// Uncounted LIFO over tiers bounded at a quarter of 96 records each, compute as long as the least I/O:
// copies ahead made while the tiers filled leave the middle tier's oldest records backed; the newcomers
// take that stale reserve's room rather than the fast tier's, whose copy ahead each waited for.
// DRAM for 8, each tier 2x slower: 79 records through the middle tier, 1.155x the bound (now 71, 1.102x);
// DRAM for 2, each tier 5x slower: 8 last-tier copies made for nothing, 1.131x (now 6, 1.103x).
TEST(Sim, NewcomersTakeTheRoomOfAStaleReserveOfCopiesAhead) {
  constexpr std::uint64_t kRecord = 16ull << 20;
  Result r = sweep_point("lifo/t3/n96/s8/fs0.25/bw2/f1.0");
  EXPECT_LT(r.tiers[2].bytes_in, 75 * kRecord);
  EXPECT_LT(r.wall_s, 1.12 * r.bound_s);
  r = sweep_point("lifo/t3/n96/s2/fs0.25/bw5/f1.0");
  EXPECT_LT(r.tiers[3].bytes_in - r.tiers[3].bytes_out, 7 * kRecord) << "last-tier copies never read";
  EXPECT_LT(r.wall_s, 1.12 * r.bound_s);
}

// FIFO, DRAM for 8 of 32 records over two unlimited tiers 5x apart, compute half the least I/O: the
// slower tier starts with the first record whose fetch the five before it on the fast tier hide, and
// takes every sixth from there (its bandwidth's share), not record 14 once the fast tier had a round trip
// queued (1.19x the bound then). DRAM keeps record 0, the first lead (Pass.LeadsFirstOverSeveralTiers...),
// so that is record 6 (it was 11 while DRAM kept records 0-4 whole: 1.14x; now 1.12x).
TEST(Sim, FifoStartsAnIdleSlowerTierWithTheFirstRecordItsReadsHide) {
  const Result r = sweep_point("fifo/t2/n32/s8/fs0.00/bw5/f0.5");
  std::vector<std::uint64_t> slow;
  for (const Span& s : r.timeline)
    if (s.src == 0 && s.dst == 2) slow.push_back(s.id);
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(slow.front(), 6u);
  for (std::size_t i = 1; i < slow.size(); ++i) EXPECT_GE(slow[i] - slow[i - 1], 6u) << slow[i];
  EXPECT_LT(r.wall_s, 1.13 * r.bound_s);
}

// FIFO, DRAM for 8 of 32 records above a tier bounded at 8 and an unlimited one 5x slower, compute as
// long as the least I/O: the slower tier, which capacity forces 16 records through, takes every second
// record to leave DRAM from the second on, instead of the newest once the fast tier is full (its first
// drain at 0.60 s, writes blocked 0.61 s, 1.28x the bound; now 0.32 s, 0.34 s, 1.16x).
TEST(Sim, FifoStartsTheSlowTierWithTheFirstRecordsBelowABoundedOne) {
  const Result r = sweep_point("fifo/t2/n32/s8/fs0.25/bw5/f1.0");
  EXPECT_LT(first_copy_into(r, 2, 0), 0.4);
  EXPECT_LT(r.write_blocked_s, 0.45);
  EXPECT_LT(r.wall_s, 1.2 * r.bound_s);
}

// As above over two bounded tiers and an unlimited one 25x slower than the fastest: told the count
// (fifo:N), the last tier starts when the 32 records will outgrow DRAM and the bounded tiers; without it,
// once the run has computed as long as the last tier takes to move a record (policies::outlasts_a_move),
// at the same time. Taken to go on as long again as so far, the run without the count started it at
// 1.18 s, not 0.69 s, and ran 1.20x the bound, not 1.13x.
TEST(Sim, FifoWithoutItsCountStartsTheSlowTierOnceTheRunOutlastsAMove) {
  auto points = sweep_points({Schedule::Kind::fifo}, false, "fifo/t3/n32/s8/fs0.25/bw5/f1.0");
  ASSERT_EQ(points.size(), 1u);
  points[0].machine.timeline = true;
  auto first_slow = [](const Result& r) { return first_copy_into(r, 3, 0); };
  const Result guessed = simulate(points[0].machine, points[0].workload);
  points[0].workload.hint_records = true;
  const Result counted = simulate(points[0].machine, points[0].workload);
  EXPECT_LT(first_slow(counted), 0.8);
  EXPECT_LT(first_slow(guessed), first_slow(counted) + 0.05);
  EXPECT_LT(guessed.wall_s, 1.01 * counted.wall_s);
  EXPECT_LT(counted.wall_s, 1.18 * counted.bound_s);
}

// mlbs_sim_check's `small` machine and run read first in first out at 20 ms per call, not told the count:
// DRAM and the fast tier hold all eight records, and the run is taken to go on only from the fourth write
// (80 ms of compute, the slow tier's move of a record 62.5 ms), too late to cost anything. Taken to go on
// from half a move (the third write), record 2 went down to the slow tier and its read waited 22 ms: 1.07x.
TEST(Sim, FifoWithoutItsCountStaysAtTheBoundWhenTheRunFitsAbove) {
  Workload w = small_run();
  w.schedule = Schedule::Kind::fifo;
  w.compute_per_write_s = w.compute_per_read_s = 0.020;
  const Result r = simulate(small_machine(), w);
  EXPECT_LT(r.wall_s, 1.01 * r.bound_s);
}

// LIFO without the count, DRAM for two of 32 records over two unlimited tiers 2:1 apart, compute as long
// as the least I/O: once reads begin, the slower tier's next record takes a slot as soon as it is within
// two records, rather than once it is next but one, so its fetch overlaps the faster tier's and the reads
// wait half as long (0.117 s before, 1.27x the bound; now 0.068 s, 1.19x).
TEST(Sim, ASlowerTiersNextRecordComesUpInTime) {
  const Result r = sweep_point("lifo/t2/n32/s2/fs0.00/bw2/f1.0");
  EXPECT_LT(r.read_blocked_s, 0.09);
  EXPECT_LT(r.wall_s, 1.22 * r.bound_s);
}

// FIFO on the demo's machine (micro at I/O ratio 8 with --order fifo): once reads begin, DRAM's other
// slot holds the newest record, read last and waiting for its drain. The slow tier's next record borrowed
// the one free slot, the record read next (on the fast tier) waited for that fetch, and its read took the
// borrowed copy back, for the slow tier to read again (144 MiB out for 128 in, 1.258x the bound). Now the
// slot goes to the record read next: the slow tier reads each record once, 1.197x.
TEST(Sim, TheBorrowedSlotIsNotTheNextReadsOwn) {
  const Result r = simulate(two_tiers(32 * kMiB, 96 * kMiB), records(16, 0.025, Schedule::Kind::fifo));
  EXPECT_EQ(r.tiers[2].bytes_out, r.tiers[2].bytes_in);
  EXPECT_LT(r.wall_s, 1.22 * r.bound_s);
}

// LIFO without the count, DRAM for two records over two unlimited tiers, the second half as fast: the
// records DRAM would keep while writes go on are pushed out by the next writes anyway, so both slots
// stream down, one to each tier, as the bound's split has them (1.55x the bound when DRAM kept the newest
// and tier 1 took every record alone).
TEST(Sim, WritesStreamDownToEveryTierThatJoins) {
  const Result r = simulate(unlimited_pair(2), records(32, 0));
  EXPECT_GE(r.tiers[2].bytes_in, 8 * 16 * kMiB) << "the slower tier takes about a third";
  EXPECT_LT(r.write_phase_s, 1.15 * 30 * 16 / 1536.0) << "the writes at the tiers' summed bandwidth";
  EXPECT_LT(r.wall_s, 1.1 * r.bound_s);
}

// DRAM for two records above two bounded tiers (8 records each, 1 GiB/s and 512 MiB/s) and an unlimited
// one at 256 MiB/s: the bounded tiers' room is read-ahead too (prefetching between file tiers fills it), so
// the slowest tier joins spreading and the middle one, the busiest, moves less (1.42x the bound when
// only DRAM's room counted, 1.32x now: mlbs-sim's sweep, lifo/t3/n32/s2/fs0.25/bw2/f0.0).
TEST(Sim, BoundedTiersAboveLetASlowerTierJoin) {
  Machine m;
  m.dram_bytes = 32 * kMiB;
  m.helpers = 3;
  m.tiers = {{128 * kMiB, 1024.0 * kMiB, 0, 1.0}, {128 * kMiB, 512.0 * kMiB, 0, 1.0}, {0, 256.0 * kMiB, 0, 1.0}};
  const Result r = simulate(m, records(32, 0));
  EXPECT_LT(r.tiers[2].bytes_in, 576 * kMiB) << "608 MiB when the slowest tier stayed out";
  EXPECT_LT(r.wall_s, 1.37 * r.bound_s);
}

// The persistent mode writes every record to the last tier and the flush waits for it.
TEST(Sim, PersistentWritesEveryRecordToTheLastTier) {
  Machine m = two_tiers(64 * kMiB, 128 * kMiB);
  m.persistent = true;
  const Result r = simulate(m, records(8, 0.01));
  EXPECT_GE(r.tiers[2].bytes_in, 8 * 16 * kMiB);
}

// Explicit orders with repeated reads keep a record until its last read.
TEST(Sim, ExplicitOrderWithRepeats) {
  Workload w = records(12, 0.002, Schedule::Kind::explicit_order);
  w.order = revolve_like_order(12, 4);
  const Result r = simulate(two_tiers(48 * kMiB, 64 * kMiB), w);
  EXPECT_EQ(r.bytes_read, w.order.size() * 16 * kMiB);
}

// split_records(): a step's record as `parts` records of a part's size, an explicit order's ids each read as
// its parts in order, the compute once per step (before a step's first write, after its last read).
TEST(Sim, RecordsInPartsComputeOncePerStep) {
  Workload w = records(4, 0.01, Schedule::Kind::explicit_order);
  w.order = {3, 1};
  const Workload s = split_records(w, 4);
  EXPECT_EQ(s.record_bytes, 4 * kMiB);
  EXPECT_EQ(s.records, 16u);
  EXPECT_EQ(s.order, (std::vector<std::uint64_t>{12, 13, 14, 15, 4, 5, 6, 7}));
  const Result whole = simulate(two_tiers(64 * kMiB, 0), w), split = simulate(two_tiers(64 * kMiB, 0), s);
  EXPECT_DOUBLE_EQ(split.compute_s, whole.compute_s);  // 4 writes' and 2 reads' worth, not 16 and 8
  EXPECT_EQ(split.bytes_written, whole.bytes_written);
  EXPECT_EQ(split.bytes_read, whole.bytes_read);
  EXPECT_THROW(split_records(w, 0), mlbs::InvalidArgumentError);
  w.record_bytes = 16 * kMiB + 1;
  EXPECT_THROW(split_records(w, 4), mlbs::InvalidArgumentError) << "parts that do not divide the record";
}

// A store in parts (StoreOptions::parts) reads each part by a copy out of its slot, where the application's own
// records are handed over: the model charges every read's bytes at the copy rate; one part is a whole record.
TEST(Sim, AStoreInPartsCopiesEveryRead) {
  const Workload w = records(8, 0.01);
  const Machine m = two_tiers(256 * kMiB, 0);  // everything fits DRAM: no read waits on a helper
  const Result own = simulate(m, split_records(w, 4)), store = simulate(m, store_parts(w, 4));
  EXPECT_NEAR(store.copy_s - own.copy_s, double(store.bytes_read) / m.copy_bytes_per_s, 1e-9);
  EXPECT_GT(store.wall_s, own.wall_s);
  EXPECT_DOUBLE_EQ(store.bound_s, own.bound_s) << "the physical bound forgives no copy the store chose to make";
  EXPECT_FALSE(store_parts(w, 1).store_parts);
  EXPECT_TRUE(store_parts(w, 4).store_parts);
}

// DRAM for two records over three unlimited tiers: one whole record at a time leaves DRAM, so the tiers take
// turns (docs/simulator.md, "What is left"); in four parts, several leave at once and the three tiers work
// together, close to the bound that has them in parallel.
TEST(Sim, RecordsInPartsLetTiersWorkTogetherWithDramForTwo) {
  Machine m;
  m.dram_bytes = 32 * kMiB;
  m.helpers = 3;
  m.tiers = {{0, 1024.0 * kMiB, 0, 1.0}, {0, 512.0 * kMiB, 0, 1.0}, {0, 256.0 * kMiB, 0, 1.0}};
  const Workload w = records(32, 0.01);
  const Result whole = simulate(m, w), split = simulate(m, split_records(w, 4));
  EXPECT_GT(whole.wall_s / whole.bound_s, 1.15);
  EXPECT_LT(split.wall_s / split.bound_s, 1.05);
  EXPECT_GT(split.tiers[3].bytes_in, 0u) << "the slowest tier took no part";
  EXPECT_LT(split.blocked_s(), 0.02 * split.wall_s);
}

// FIFO over two unlimited tiers, a step's 16 MiB in four records back to back, DRAM for 32 of them:
// DRAM keeps room for a step (two), not for two records (policies::write_room), so a step's records land
// while the last step's leave and the tiers stay busy; with room for two records the third waits for the
// first to leave DRAM (1.35x the bound before the rule).
TEST(Sim, AStepInPartsFindsRoomForAllItsParts) {
  const Result r = sweep_point("fifo/t2/n96/s8/fs0.00/bw2/f1.0", 4);
  EXPECT_LT(r.wall_s / r.bound_s, 1.05);
  EXPECT_LT(r.write_blocked_s, 0.02 * r.wall_s);
}

// FIFO over two unlimited tiers, each step's 16 MiB in four parts, DRAM for two steps, compute twice the
// least I/O time: DRAM keeps room for a step, as the compute between steps covers a step's drain at the
// tiers' combined rate (policies::write_room); with room for one part the writes wait (1.174x the bound).
TEST(Sim, ComputeThatCoversADrainKeepsRoomForAStep) {
  const Result r = sweep_point("fifo/t2/n32/s2/fs0.00/bw2/f2.0", 4);
  EXPECT_LT(r.wall_s / r.bound_s, 1.05);
  EXPECT_LT(r.write_blocked_s, 0.02 * r.wall_s);
}

// FIFO over one unlimited tier, each step's 16 MiB in eight parts, DRAM for eight steps, compute equal to
// the least I/O time: DRAM keeps each step's first part (policies::leads_first), so the tier drains the
// rest of every step from the first write, where by rank DRAM kept the first steps whole and the tier idled
// until it was full (1.099x the bound).
TEST(Sim, FifoOverOneTierKeepsEachStepsFirstPart) {
  const Result r = sweep_point("fifo/t1/n32/s8/fs0.00/bw2/f1.0", 8);
  EXPECT_LT(r.wall_s / r.bound_s, 1.05);
  EXPECT_LT(r.write_blocked_s, 0.01 * r.wall_s);
}

/// Sweep point `key` with whole records within `ratio` of the bound, its tiers draining from the second
/// write on: DRAM kept the first record, the first lead (policies::leads_first).
Result expect_drains_from_the_second_write(const char* key, double ratio) {
  const Result r = sweep_point(key);
  EXPECT_LT(r.wall_s / r.bound_s, ratio) << key;
  const Span* first = first_span(r, "drain DRAM");
  EXPECT_TRUE(first && first->id == 1u) << key << ": the tiers started with record " << (first ? first->id : 0);
  return r;
}

// The same with whole records: DRAM keeps the first record of every spacing-th step (policies::lead_spacing),
// so the tier drains from the second write on, where by rank DRAM kept the first six records and the tier
// idled until the seventh (1.117x the bound).
TEST(Sim, FifoOverOneTierKeepsSpacedRecordsWhole) {
  expect_drains_from_the_second_write("fifo/t1/n32/s8/fs0.00/bw2/f1.0", 1.06);
}

// The same over two unlimited tiers 5x apart, 96 whole records, compute as long as the least I/O: the fast
// tier carries nearly all the traffic, and DRAM keeps spaced records there too (policies::leads_first), so
// the tiers drain from the second write on and the writes never wait; by rank DRAM kept the first seven
// records, the tiers idled until the eighth, and the writes then waited 0.20 s (1.107x the bound).
TEST(Sim, FifoOverTiersFarApartKeepsSpacedRecordsWhole) {
  const Result r = expect_drains_from_the_second_write("fifo/t2/n96/s8/fs0.00/bw5/f1.0", 1.07);
  EXPECT_LT(r.write_blocked_s, 0.01 * r.wall_s);
}

// Once reads began no drain from DRAM starts into a tier while a fetch comes up from it (policies.cpp,
// one_at_a_time(): a read may wait on that fetch). FIFO over a bounded fast tier and two unlimited ones, each
// 2x slower, DRAM for two of 8 records: a drain of record 7 to the fast tier halved the fetch of record 5 from
// it, whose read waited (1.808x the bound -> 1.752x). A revolve-like order over two such tiers, 32 records: a
// drain of record 16 back to the fast tier halved the fetch of record 26, whose read waited, and record 16
// came up again later (1.229x -> 1.176x).
TEST(Sim, NoDrainStartsIntoATierAReadsFetchComesFrom) {
  const Result r = sweep_point("fifo/t3/n8/s2/fs0.25/bw2/f1.0");
  EXPECT_LT(r.wall_s / r.bound_s, 1.78);
  std::size_t drains = 0;
  for (const Span& d : r.timeline) {
    if (d.what.rfind("drain DRAM", 0) != 0 || d.start_s <= r.write_phase_s) continue;
    ++drains;
    for (const Span& f : r.timeline)
      if (f.src == d.dst && f.dst < f.src && f.start_s < d.start_s && f.end_s > d.start_s)
        ADD_FAILURE() << "record " << d.id << " drained into tier " << d.dst << " at " << d.start_s
                      << " s while record " << f.id << " came up from it";
  }
  EXPECT_GT(drains, 0u) << "drains after the turn: what the test looks at";
  const Result rev = sweep_point("rev/t2/n32/s2/fs0.25/bw2/f1.0");
  EXPECT_LT(rev.wall_s / rev.bound_s, 1.20);
}

// FIFO over two unlimited tiers, the second 20 times slower, each step in four parts, DRAM for two steps,
// compute equal to the least I/O time: the slow tier never joins, so the tiers do not spread and DRAM keeps
// room for a step (policies::write_room); counted as spreading, room for one part made each step's last
// two parts wait (1.283x the bound).
TEST(Sim, ATierThatNeverJoinsLeavesRoomForAStep) {
  const Result r = sweep_point("fifo/t2/n32/s2/fs0.00/bw20/f1.0", 4);
  EXPECT_LT(r.wall_s / r.bound_s, 1.10);
  EXPECT_LT(r.write_blocked_s, 0.03 * r.wall_s);
}

// FIFO over two unlimited tiers, the second half as fast, each step's 16 MiB in four parts, DRAM for two
// steps, compute equal to the least I/O time (about 95% of a step's drain at both tiers' rate): the steps
// are double-buffered both ways (policies::steps_double_buffered). With room for one part, the parts DRAM
// held kept six of its eight slots and every step waited for its drain (1.350x the bound). The same with
// the second tier five times slower, which joins only over the DRAM all but a part leaves: 1.282x while
// the cover was counted without it. Over 32 records the turn's weight shows: the parts leaving DRAM for the
// reads' room go to the fast tier (policies::place), 1.227x while they went to the slow one, which the
// first reads' fetches then waited on.
TEST(Sim, FifoStepsInPartsDoubleBufferBothWays) {
  for (const char* key :
       {"fifo/t2/n96/s2/fs0.00/bw2/f1.0", "fifo/t2/n96/s2/fs0.00/bw5/f1.0", "fifo/t2/n32/s2/fs0.00/bw2/f1.0"}) {
    const Result r = sweep_point(key, 4);
    EXPECT_LT(r.wall_s / r.bound_s, 1.15) << key;
    EXPECT_LT(r.write_blocked_s, 0.02 * r.wall_s) << key;
    EXPECT_GT(r.tiers[2].bytes_in, 0u) << key << ": the slower tier took no part";
  }
}

// LIFO over a bounded fast tier (a quarter of the data) and an unlimited one half as fast, each step in
// four parts, DRAM for two steps, compute equal to the least I/O time: the fast tier joins the drain until
// it fills, so its rate counts towards covering a step's drain (policies::drain_rate) and DRAM keeps room
// for a step; counting the unlimited tier alone kept room for one part (1.232x the bound). 1.037x before
// the fast tier copied DRAM's parts ahead (policies.cpp, copy_into_fast_tier), 1.085x since: the parts it
// took early passed on to the slow tier from there, which then idled 16 ms while both helpers drained
// into the fast one (docs/architecture.md, "Into the fast tier beside the slower one's copy").
TEST(Sim, ABoundedTierThatJoinsCountsTowardsTheDrain) {
  const Result r = sweep_point("lifo/t2/n8/s2/fs0.25/bw2/f1.0", 4);
  EXPECT_LT(r.wall_s / r.bound_s, 1.09);
  EXPECT_GT(r.tiers[1].bytes_in, 0u) << "the bounded tier took no part";
}

// LIFO told its count over three unlimited tiers, each half as fast as the one above, DRAM for two records and
// no compute: the records written stream down two at a time, as without the count (policies::writes_leave_dram),
// where one drain at a time sent them all to the fastest tier (1.754x the bound, against 1.210x without it).
TEST(Sim, ACountedLifoStreamsItsWritesAsAnUncountedOneDoes) {
  const Result counted = sweep_point("lifo/t3/n32/s2/fs0.00/bw2/f0.0", 1, true);
  const Result uncounted = sweep_point("lifo/t3/n32/s2/fs0.00/bw2/f0.0");
  EXPECT_LT(counted.wall_s / counted.bound_s, 1.25);
  EXPECT_LE(counted.wall_s, uncounted.wall_s * 1.01);
  EXPECT_GT(counted.tiers[2].bytes_in, 0u) << "the second tier took nothing";
}

// A revolve-like order over 8 steps in four parts, three unlimited tiers each half as fast as the one above,
// DRAM for two steps, compute half the least I/O: at the end of the writes the slowest tier, idle, takes no
// part of the step read third, which the calls before its read cannot hide the tier's write and fetch of
// (policies::place). It took one: the last write waited for its drain and the reads for its fetch (1.333x).
TEST(Sim, AnIdleSlowTierTakesNoRecordReadTooSoonAfterTheTurn) {
  const Result r = sweep_point("rev/t3/n8/s2/fs0.00/bw2/f0.5", 4);
  EXPECT_LT(r.wall_s / r.bound_s, 1.2);
  EXPECT_LT(r.tiers[3].bytes_in, 16 * kMiB) << "the slowest tier took four parts";
}

// A revolve-like order over two unlimited tiers 2x apart, DRAM for two whole records, compute half the least I/O:
// the older groups' records, all read after those still to come, stream down as a counted LIFO's do
// (policies::read_after_coming), so the slower tier takes its share; DRAM held them until a write needed the slot
// and drained them one at a time into the fastest tier, the slower one idle (1.505x the bound).
TEST(Sim, AnExplicitOrderStreamsTheRecordsItReadsAfterThoseToCome) {
  const Result r = sweep_point("rev/t2/n96/s2/fs0.00/bw2/f0.5");
  EXPECT_LT(r.wall_s / r.bound_s, 1.4);
  EXPECT_GT(r.tiers[2].bytes_in, 0u) << "the slower tier took nothing";
}

// FIFO over three unlimited tiers 2x apart, DRAM for eight records, compute equal to the least I/O: DRAM keeps
// the five records read first and three writes' room (one per tier), so the sixth record is drained as soon as it
// is written, not once DRAM is full two writes later (pass.hpp's dram_limit(): 1.262x -> 1.236x the bound).
TEST(Sim, AKnownOrderSpillsOnceTheRecordsHeldLeaveLessThanItsStreamsRoom) {
  auto points = sweep_points({Schedule::Kind::fifo}, false, "fifo/t3/n32/s8/fs0.00/bw2/f1.0");
  ASSERT_EQ(points.size(), 1u);
  points[0].machine.timeline = true;
  const Result r = simulate(points[0].machine, points[0].workload);
  const double step_s = points[0].workload.compute_per_write_s +
                        double(points[0].workload.record_bytes) / points[0].machine.copy_bytes_per_s;
  const Span* first = first_span(r, "drain DRAM");
  ASSERT_NE(first, nullptr);
  EXPECT_LT(first->start_s, 6.5 * step_s) << "the first drain waited for the seventh write";
  EXPECT_LT(r.wall_s / r.bound_s, 1.25);
}

// The timeline names each copy and each wait.
TEST(Sim, TimelineRecordsCopiesAndWaits) {
  Machine m = two_tiers(32 * kMiB, 96 * kMiB);
  m.timeline = true;
  const Result r = simulate(m, records(16, 0.001));
  ASSERT_FALSE(r.timeline.empty());
  EXPECT_TRUE(std::any_of(r.timeline.begin(), r.timeline.end(), [](const Span& s) { return s.src == 0; }));
  EXPECT_TRUE(std::any_of(r.timeline.begin(), r.timeline.end(), [](const Span& s) { return s.src < 0; }));
  for (const Span& s : r.timeline) EXPECT_LE(s.start_s, s.end_s);
}

// A model that cannot run is refused with the reason.
TEST(Sim, RefusesModelsThatCannotRun) {
  Machine none;
  none.dram_bytes = 64 * kMiB;
  EXPECT_THROW(simulate(none, records(4, 0)), mlbs::InvalidArgumentError);
  Machine m = two_tiers(64 * kMiB, 0);
  m.tiers[1].bandwidth_bytes_per_s = 0;
  EXPECT_THROW(simulate(m, records(4, 0)), mlbs::InvalidArgumentError);
  EXPECT_THROW(simulate(two_tiers(8 * kMiB, 0), records(4, 0)), mlbs::InvalidArgumentError) << "slot > DRAM";
  Workload w = records(4, 0, Schedule::Kind::explicit_order);
  w.order = {0, 9};
  EXPECT_THROW(simulate(two_tiers(64 * kMiB, 0), w), mlbs::InvalidArgumentError);
}

/// Wall over the physical bound over the sweep (sim/sweep.hpp).
struct SweepStats {
  SweepSummary ratio;         // wall / physical bound
  double below_bound = 0;     // the worst wall under the bound (a broken bound or model)
};

/// `parts` > 1: each point's records in parts (split_records()); points whose key holds `skip` are left out.
SweepStats sweep(std::vector<Schedule::Kind> kinds = {Schedule::Kind::lifo, Schedule::Kind::fifo,
                                                       Schedule::Kind::explicit_order},
                 bool hint = false, std::uint32_t parts = 1, std::string_view skip = {}) {
  SweepStats st;
  std::vector<double> ratios;
  for (const SweepPoint& p : sweep_points(kinds, hint, {}, parts)) {
    if (!skip.empty() && p.key.find(skip) != std::string::npos) continue;
    const Result r = simulate(p.machine, p.workload);
    ratios.push_back(r.wall_s / r.bound_s);
    st.below_bound = std::max(st.below_bound, (r.bound_s - r.wall_s) / r.bound_s);
  }
  st.ratio = summarize(std::move(ratios));
  return st;
}

// No simulated run beats the physical bound (it is a lower bound), over 1,296 configurations.
TEST(SimSweep, NoRunBeatsThePhysicalBound) {
  const SweepStats st = sweep();
  ASSERT_EQ(st.ratio.points, 1296u);
  EXPECT_LT(st.below_bound, 1e-9);
}

// How close the planner comes to the bound over the same sweep, guarded at what
// the policies measured when last changed (docs/simulator.md: median 1.009,
// p90 1.207, max 1.85, 410 points above 1.05x); the target of 1.05x at every
// point is not met yet.
TEST(SimSweep, PlannerStaysWithinItsMeasuredDistanceOfTheBound) {
  const SweepSummary s = sweep().ratio;
  RecordProperty("median", std::to_string(s.median));
  RecordProperty("p90", std::to_string(s.p90));
  RecordProperty("max", std::to_string(s.max));
  RecordProperty("above", std::to_string(s.above));
  std::printf("wall / physical bound over %zu configurations: median %.3f, p90 %.3f, max %.3f, %zu above 1.05x\n",
              s.points, s.median, s.p90, s.max, s.above);
  EXPECT_LT(s.median, 1.04);
  EXPECT_LT(s.p90, 1.30);
  EXPECT_LT(s.max, 2.0);
  EXPECT_LT(s.above, 420u);
}

// FIFO's third of the sweep, 8 and 32 records (96 would take a sanitizer build minutes), each step's data
// written as four records back to back (docs/simulator.md, "Records in parts"): no run beats the bound, and
// DRAM's room for a step (policies::write_room) keeps it at what was measured when that rule came (147 of 288
// points above 1.05x, p90 1.210; with room for two records 165, 1.243), at what room for a step over a
// tier that does not spread brought (129, 1.173), at what room for a step where the compute covers its
// drain at the unlimited tiers' rate brought (113, 1.168), at every joining tier's rate (106, 1.148),
// with the leads DRAM keeps over one tier spaced over the run (94, 1.133), and with the idle last tier
// taking residents from a bounded tier above while the application computes (82, 1.112).
TEST(SimSweep, RecordsInPartsFindRoomForTheirStep) {
  const SweepStats st = sweep({Schedule::Kind::fifo}, false, 4, "/n96/");
  const SweepSummary& s = st.ratio;
  std::printf("FIFO in four parts: median %.3f, p90 %.3f, %zu of %zu above 1.05x\n", s.median, s.p90, s.above,
              s.points);
  ASSERT_EQ(s.points, 288u);
  EXPECT_LT(st.below_bound, 1e-9);
  EXPECT_LT(s.p90, 1.13);
  EXPECT_LT(s.above, 90u);
}

// LIFO told how many records come ("lifo:N"): the records written go where they will end and the
// slow tier starts with the first one; over the LIFO third of the sweep the median moves closer to the bound.
// And the count costs little anywhere: no point is more than 0.1 further from the bound with it than without
// it, and fewer than 6 are 0.05 further (measured: 0.091 and 5; before a counted LIFO's writes streamed
// down, policies::writes_leave_dram, 0.544 and 22). The fifth came when the uncounted run's fast tier began
// copying DRAM's records ahead (policies.cpp, copy_into_fast_tier), which a counted run does not do:
// lifo/t2/n96/s8/fs0.25/bw2/f0.0 went 1.098 -> 1.032 without the count and sits at 1.090 with it.
TEST(SimSweep, ARecordCountHintBringsLifoCloserToTheBound) {
  std::map<std::string, double> without_at;
  std::vector<double> without, with;
  double below = 0;
  for (const SweepPoint& p : sweep_points({Schedule::Kind::lifo})) {
    const Result r = simulate(p.machine, p.workload);
    without_at[p.key] = r.wall_s / r.bound_s;
    without.push_back(r.wall_s / r.bound_s);
  }
  double worst = 0;
  std::size_t worse = 0;
  std::string where;
  for (const SweepPoint& p : sweep_points({Schedule::Kind::lifo}, true)) {
    const Result r = simulate(p.machine, p.workload);
    with.push_back(r.wall_s / r.bound_s);
    below = std::max(below, (r.bound_s - r.wall_s) / r.bound_s);
    const double cost = with.back() - without_at.at(p.key);
    if (cost > worst) worst = cost, where = p.key;
    if (cost > 0.05) ++worse;
  }
  const double m0 = summarize(without).median, m1 = summarize(with).median;
  std::printf("LIFO wall / physical bound, median: %.3f without the hint, %.3f with it; the hint costs at most "
              "%.3f (%s), %zu points more than 0.05\n",
              m0, m1, worst, where.c_str(), worse);
  EXPECT_LT(m1, m0);
  EXPECT_LT(below, 1e-9);
  EXPECT_LT(worst, 0.1) << where;
  EXPECT_LT(worse, 6u);
}

// FIFO told how many records come ("fifo:N"): below a bounded tier the last one starts with what the run
// truly forces through it; over the FIFO third of the sweep fewer points stay above 1.05x (202 -> 197
// when added; 180 -> 179 since the run without it is taken to go on once it outlasts the last tier's move
// of a record, policies::outlasts_a_move; 174 -> 173 since the idle last tier takes residents from above
// while the application computes) and the worst of them come closer.
TEST(SimSweep, ARecordCountHintBringsFifoCloserToTheBound) {
  const SweepStats without = sweep({Schedule::Kind::fifo});
  const SweepStats with = sweep({Schedule::Kind::fifo}, true);
  std::printf("FIFO points above 1.05x: %zu without the hint, %zu with it; p90 %.3f -> %.3f\n", without.ratio.above,
              with.ratio.above, without.ratio.p90, with.ratio.p90);
  EXPECT_LT(with.ratio.above, without.ratio.above);
  EXPECT_LE(with.ratio.p90, without.ratio.p90);
  EXPECT_LT(with.below_bound, 1e-9);
}

}  // namespace
