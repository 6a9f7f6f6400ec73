#include "engine/policies/policies.hpp"

#include <algorithm>
#include <utility>

#include "engine/policies/pass.hpp"
#include "mlbs/detail/block.hpp"

namespace mlbs::engine::policies {

const char* to_string(Purpose p) noexcept {
  switch (p) {
    case Purpose::demand_fetch: return "demand fetch";
    case Purpose::drain_dram: return "drain DRAM";
    case Purpose::stage: return "stage";
    case Purpose::drop_strays: return "drop strays";
    case Purpose::move_down: return "move down";
    case Purpose::prefetch_dram: return "prefetch into DRAM";
    case Purpose::prefetch_file: return "prefetch between file tiers";
    case Purpose::persist: return "persist";
    case Purpose::for_readers: return "for readers";
    case Purpose::write_behind: return "write-behind";
    case Purpose::copy_ahead: return "copy ahead";
  }
  return "?";
}

int fastest_copy(const Record& r, int last, int except) {
  for (int t = 0; t <= last; ++t)
    if ((r.copies & bit(t)) && t != except) return t;
  return -1;
}

bool needs_persist(const View& v, const Record& r) {
  return v.persistent && !(r.copies & bit(v.last())) && !(r.avoid & bit(v.last()));
}

namespace {

bool dram_fits(std::uint64_t bytes, std::uint64_t free) {
  // Compare before rounding: rounding a huge request up would wrap around.
  return bytes <= free && detail::round_up_block(bytes) <= free;
}

bool idle(const Record& r) { return !r.busy && !r.retired; }

/// Its DRAM copy may go: idle, or busy only with a copy between two file
/// tiers. A copy ahead from the fast tier to the slow one takes 80 ms at the
/// demo's caps; had it pinned the slot, the next write would wait for the
/// record that placement keeps instead to be written down (19 ms blocked
/// per write at micro ratio 16).
bool dram_copy_free(const Record& r) {
  return !r.retired && (!r.busy || (r.copying_on && !(r.copying_on & bit(0))));
}

/// DRAM holds the record, and its only file copy is one copy_ahead() made
/// from DRAM below its target while writes come down (scratch, LIFO without
/// a count): it is to get its target copy before its slot goes.
bool ahead_of_its_target(const View& v, const Record& r) {
  return v.copy_ahead && v.writing && (r.copies & bit(0)) && r.dir_target > 0 &&
         !(r.copies & ~bit(0) & (bit(r.dir_target + 1) - 1));
}

/// Reads under way, and DRAM holds a record placement does not want there
/// whose file copies are all below the fastest file tier: fetched up through
/// DRAM (fetch_via_dram()), or copied ahead from DRAM and left there. Its
/// DRAM copy is the fast way up: dropping it would have a slower tier, often
/// the bottleneck, read it again.
bool borrowed(const View& v, const Record& r) {
  return !v.writing && !r.want_mem && (r.copies & bit(0)) && fastest_copy(r, v.last(), 0) > 1;
}

Decision copy(Purpose why, std::size_t i, int src, int dst, std::vector<Drop> drops) {
  return Decision{why, i, src, dst, std::move(drops)};
}

/// The fastest file tier above `t` with free room for `r` (none evicted)
/// that has not failed for it and, with `untaken`, that no copy is writing
/// into now; 0 if none.
int free_tier_above(const View& v, const Record& r, int t, bool untaken = false) {
  for (int u = 1; u < t; ++u) {
    const TierView& tv = v.tiers[u];
    if (!tv.full_latched && tv.free_bytes >= r.plan_bytes() && !(r.avoid & bit(u)) &&
        !(untaken && tv.arrivals_in_flight))
      return u;
  }
  return 0;
}

/// Scratch, while a write waits for a slot or DRAM has none free for the
/// next: a DRAM-only record bound for `dst` while `dst` is busy goes to
/// the fastest tier above it with free room instead (none evicted), and
/// file_tier_moves() takes it on down from there (placement ignores a staged
/// copy). Its DRAM slot is then clean at the faster tier's speed, so writers
/// do not wait for the slower tier: the faster tiers' room and bandwidth
/// buffer the bottleneck's, which keeps working. Not via a tier another copy
/// is writing into: the two would share its bandwidth (one_at_a_time()).
/// Only via the fastest file tier, unless LIFO copies ahead: staged in a
/// middle tier, the record's move down later reads that tier while the
/// moves down out of the fastest write into it, the two share its
/// bandwidth, and the fastest tier's room comes back late while writes
/// wait for it (`mlbs_sim_check --machine three`, lifo:N and revolve: real
/// runs flipped between 0.62 and 0.76 s on whether the fourth record went
/// to the middle tier; 0.62 s every time since). LIFO copying ahead passes
/// every record through the fast tier, and there a middle tier's stage
/// helped (26 sweep points worse by up to 0.095 without the exception).
/// 0 if none.
int stage_tier(const View& v, const Record& r, int dst) {
  if (v.persistent || !v.writing || dst <= 1 || r.copies != bit(0) || !v.tiers[dst].copies_in_flight) return 0;
  if (!v.write_waits && dram_fits(r.size, v.tiers[0].free_bytes)) return 0;  // the next write has its slot
  const int via = free_tier_above(v, r, dst, true);
  return via == 1 || v.copy_ahead ? via : 0;
}

/// Drains a middle tier takes at once while the last one idles (one_at_a_time()).
constexpr std::uint32_t kMiddleTierDrains = 2;

/// A drain into `dst` waits for the one there (scratch: a persistent run's
/// drains share the journal's group commit). A second would share the
/// tier's bandwidth and hold both DRAM slots until both end, while the next
/// write waits for the first slot back; the helper takes another tier's
/// record instead, or the next once this one's last request is queued.
/// Into the last tier any copy in flight counts, reads out of it too. Into
/// a faster tier only copies writing into it, and not while LIFO copies
/// ahead: there a fast tier takes every record first and passes the oldest
/// on, and holding its drains back changes which records reach the slowest
/// tier (there: 30 sweep points better, 25 worse by up to 0.19; everywhere
/// else: 43 better by up to 0.10, 8 worse by up to 0.09).
///
/// Once reads began, into any tier a fetch comes up from too (Cao et al.'s
/// do no harm): a read may be waiting on that fetch, and the drain only
/// makes room for a later one. The sweep (a bounded fast tier 2x faster
/// with DRAM for two, where drains and fetches meet): whole records 16
/// points better by up to 0.062, none worse; all eight sweeps 62 better, 6
/// worse by up to 0.018. (Into the last tier the fetches count already.)
///
/// While LIFO copies ahead, a middle tier takes no more than
/// kMiddleTierDrains at once when the last tier idles (2026-12-07,
/// fifty-second sitting): a third adds no bandwidth there, and its helper is
/// the one that would feed the last tier, the run's bottleneck over
/// bounded tiers, by a copy ahead or a drain of a record placed there. In
/// parts the middle tier filled three drains at a time while the last
/// idled 0.42 s (`mlbs_sim_sweep --parts 4 --only
/// lifo/t3/n96/s2/fs0.25/bw2/f1.0`: 1.250x -> 1.164x the bound). Capped at
/// one drain, or on the fastest tier too, the sweeps lost up to 0.23 and
/// the model of `mlbs_sim_check --machine three --parts 2` 1.09x -> 1.19x
/// (architecture.md, "A middle tier's third drain waits").
bool one_at_a_time(const View& v, int dst) {
  if (v.persistent || dst <= 0) return false;
  const TierView& into = v.tiers[dst];
  if (dst == v.last()) return into.copies_in_flight > 0;
  if (!v.writing && into.fetches_in_flight > 0) return true;
  if (!v.copy_ahead) return into.arrivals_in_flight > 0;
  return dst > 1 && into.arrivals_in_flight >= kMiddleTierDrains && !v.tiers[v.last()].copies_in_flight;
}

}  // namespace

std::optional<std::vector<Drop>> dram_room(const View& v, std::uint64_t bytes, std::size_t except, Wishes wishes) {
  std::uint64_t free = v.tiers[0].free_bytes;
  std::vector<Drop> drops;
  // Copies at their target tier go first; then those still to be copied
  // there from DRAM (drain_dram's durable records), which would be filled
  // from a slower tier later instead.
  // Never one whose only file copy is a copy ahead below its target:
  // drain_dram() gives it its target copy first. A borrowed one (reads under
  // way, its file copies only below the fastest file tier) goes last of all.
  enum Pass { at_target, not_yet, borrowed_last };
  const auto pass_of = [&v](const Record& r) {
    if (borrowed(v, r)) return borrowed_last;
    return r.dir_target < 0 || (r.copies & bit(r.dir_target)) ? at_target : not_yet;
  };
  for (const Pass pass : {at_target, not_yet, borrowed_last})
    for (std::size_t i = v.ranked.size(); i-- > 0 && !dram_fits(bytes, free);) {
      const Record& r = *v.ranked[i];
      if (i == except || !dram_copy_free(r) || r.pins || (r.want_mem && wishes == Wishes::keep) || pass_of(r) != pass)
        continue;
      if (ahead_of_its_target(v, r)) continue;
      if ((r.copies & bit(0)) && (r.copies & ~bit(0))) {
        drops.push_back({i, 0});
        free += r.slot ? r.slot.capacity() : detail::round_up_block(r.size);  // no slot: a model's record (sim/)
      }
    }
  if (!dram_fits(bytes, free)) return std::nullopt;
  return drops;
}

std::optional<std::vector<Drop>> file_room(const View& v, int t, std::uint64_t bytes, std::size_t except,
                                           Notes& notes) {
  std::uint64_t free = v.tiers[t].free_bytes;
  if (free >= bytes) return std::vector<Drop>{};
  if (v.tiers[t].full_latched) return std::nullopt;
  std::vector<Drop> drops;
  if (!(v.persistent && t == v.last()))  // the durable copies are never evicted
    for (std::size_t i = v.ranked.size(); i-- > 0 && free < bytes;) {
      const Record& r = *v.ranked[i];
      if (i == except || !idle(r) || !(r.copies & bit(t)) || r.dir_target == t) continue;
      if (r.copies & ~bit(t)) {
        drops.push_back({i, t});
        free += r.file_bytes();
      }
    }
  if (free >= bytes) return drops;
  if (notes.stalls.size() < v.tiers.size()) notes.stalls.resize(v.tiers.size());
  ++notes.stalls[t];
  return std::nullopt;
}

std::optional<Decision> demand_fetch(const View& v, Notes&) {
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    if (!r.demand) break;  // demand records rank first
    if (!idle(r) || (r.copies & bit(0)) || r.error) continue;
    const int src = fastest_copy(r, v.last());
    if (src < 0) continue;
    if (auto drops = dram_room(v, r.size, i)) return copy(Purpose::demand_fetch, i, src, 0, std::move(*drops));
  }
  return std::nullopt;
}

namespace {

/// drain_dram(), for the records copied ahead from DRAM (`ahead`) or the others.
std::optional<Decision> drain(const View& v, Notes& notes, bool ahead) {
  for (std::size_t i = v.ranked.size(); i-- > 0;) {
    const Record& r = *v.ranked[i];
    if (!idle(r) || r.want_mem || !(r.copies & bit(0)) || r.dir_target < 0) continue;
    int dst = r.dir_target;
    const bool lent = borrowed(v, r);
    if (lent && (r.copies & ~bit(0) & (bit(dst + 1) - 1))) continue;  // its target is where its copy is: it stays
    const bool copied_ahead = !v.persistent && r.copies != bit(0) && (ahead_of_its_target(v, r) || lent);
    if (ahead != copied_ahead) continue;
    if (r.copies == bit(0)) {
      if (needs_persist(v, r)) dst = v.last();
    } else if (!copied_ahead && !(v.persistent && r.copies == (bit(0) | bit(v.last())) && dst < v.last())) {
      continue;
    }
    if (const int via = stage_tier(v, r, dst); via > 0) return copy(Purpose::stage, i, 0, via, {});
    if (one_at_a_time(v, dst)) continue;
    // Also a durable record whose only file copy is the durable one, placed
    // above it: its DRAM copy is the cheap source, before its slot is given
    // up (else the target is filled later by reading the last tier back).
    if (auto drops = file_room(v, dst, r.plan_bytes(), i, notes)) {
      // A borrowed record moves up, as it would have without DRAM between:
      // its copies below the target go (scratch holds one file copy).
      if (lent && !v.persistent)
        for (int u = dst + 1; u <= v.last(); ++u)
          if (r.copies & bit(u)) drops->push_back({i, u});
      return copy(Purpose::drain_dram, i, 0, dst, std::move(*drops));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Decision> drain_dram(const View& v, Notes& notes) {
  // A record copied ahead from DRAM has a file copy already: its slot is
  // the one DRAM gives last, so it waits for a write to need it, and a
  // helper free before then copies ahead first (drain_ahead()): the slower
  // tier's next copy is the one that cannot wait.
  if (auto d = drain(v, notes, false)) return d;
  return v.write_waits ? drain(v, notes, true) : std::nullopt;
}

std::optional<Decision> drain_ahead(const View& v, Notes& notes) { return drain(v, notes, true); }

std::optional<Decision> file_tier_moves(const View& v, Notes& notes) {
  for (std::size_t i = v.ranked.size(); i-- > 0;) {
    const Record& r = *v.ranked[i];
    if (!idle(r) || r.dir_target < 0) continue;
    const int t = r.dir_target;
    if (r.copies & bit(t)) {
      // Copies above the target go. Below it, the durable copy stays, and
      // so does a scratch copy_ahead() made: it lets the target tier give
      // this record up later without moving it (placement's `backing`).
      Decision strays{Purpose::drop_strays, i, -1, -1, {}};
      for (int u = 1; u < t; ++u)
        if (r.copies & bit(u)) strays.drops.push_back({i, u});
      if (!strays.drops.empty()) return strays;
      continue;
    }
    int above = -1;  // the slowest copy above the target
    for (int u = 1; u < t; ++u)
      if (r.copies & bit(u)) above = u;
    if (above < 0) continue;
    // From DRAM when it has the record (the faster source); the old copy then
    // goes as a stray. A staged record moves from its staged copy instead and
    // gives up its DRAM slot now: the slot is what staging was for.
    const bool staged = r.staged == above;
    // One at a time: a second copy into a busy tier adds no bandwidth and
    // would hold the helper that stages the next record.
    if (staged && v.tiers[t].copies_in_flight) continue;
    const int src = (r.copies & bit(0)) && !staged ? 0 : above;
    if (auto drops = file_room(v, t, r.file_bytes(), i, notes)) {
      if (staged && (r.copies & bit(0)) && !r.want_mem && !r.pins) drops->push_back({i, 0});
      return copy(Purpose::move_down, i, src, t, std::move(*drops));
    }
  }
  return std::nullopt;
}

std::optional<Decision> fetch_via_dram(const View& v, Notes&) {
  if (!v.prefetching || v.writing || v.last() < 2) return std::nullopt;
  const TierView& dram = v.tiers[0];
  // The soonest record placement leaves below DRAM whose copies are all
  // below the fastest file tier; every record placed in DRAM before it
  // comes from a faster tier than it does (it takes their slot for a while).
  std::optional<std::size_t> first;
  int src = 0;             // its fastest copy
  int slowest_wanted = 0;  // the slowest source of those placed in DRAM still to come up
  std::uint64_t wanted_bytes = 0;  // the soonest of those: the slot it needs
  bool read_frees = false;         // a record read before it holds a slot, which that read frees
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    if (borrowed(v, r)) return std::nullopt;  // one at a time: the other slots keep the faster tiers' records coming
    if (!wanted_bytes && ((r.copies & bit(0)) || (r.demand && r.busy))) read_frees = true;
    if (first || r.error || (r.copies & bit(0))) continue;
    const int from = fastest_copy(r, v.last());
    if (r.want_mem) {
      if (!wanted_bytes) wanted_bytes = detail::round_up_block(r.size);
      slowest_wanted = std::max(slowest_wanted, from);
    } else if (from > 1) {
      first = i;
      src = from;
    }
  }
  if (!first) return std::nullopt;
  const Record& r = *v.ranked[*first];
  const std::uint64_t slot = detail::round_up_block(r.size);
  if (!idle(r) || slowest_wanted >= src || v.tiers[src].fetches_in_flight || dram.capacity_bytes < 2 * slot ||
      !dram_fits(r.size, dram.free_bytes))
    return std::nullopt;
  // The slot must not be the one the next record placed in DRAM comes up
  // through: with no read before it to free another (DRAM's other slots
  // hold records read after it, or dirty ones waiting for their drain), it
  // would wait for the slow fetch, and a read waiting for it would take the
  // borrowed copy back, for the slow tier to read again.
  if (wanted_bytes && !read_frees && !dram_fits(r.size + wanted_bytes, dram.free_bytes)) return std::nullopt;
  // Not when a faster file tier has room for it: prefetch_file() moves it there.
  if (free_tier_above(v, r, src)) return std::nullopt;
  return copy(Purpose::prefetch_file, *first, src, 0, {});
}

std::optional<Decision> prefetch_dram(const View& v, Notes&) {
  if (!v.prefetching) return std::nullopt;
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    if (!r.want_mem || !idle(r) || (r.copies & bit(0)) || r.error) continue;
    const int src = fastest_copy(r, v.last());
    if (src < 0) continue;
    if (src > 0 && v.tiers[src].fetches_in_flight) continue;  // one fetch at a time per tier: soonest first
    auto drops = dram_room(v, r.size, i);
    // Keep the order (no overtaking), and a borrowed copy for the application's calls to take.
    if (!drops || std::ranges::any_of(*drops, [&](const Drop& d) { return borrowed(v, *v.ranked[d.record]); })) break;
    return copy(Purpose::prefetch_dram, i, src, 0, std::move(*drops));
  }
  return std::nullopt;
}

std::optional<Decision> prefetch_file(const View& v, Notes& notes) {
  // Do no harm: not while writes come down. They will fill the room, and a
  // record moved up now would send a newer one to the slower tier instead
  // (one more copy there, often the bottleneck).
  if (!v.prefetching || v.writing) return std::nullopt;
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    const int t = r.dir_target;
    if (t < 0 || !idle(r) || (r.copies & bit(t))) continue;
    const int src = fastest_copy(r, v.last(), 0);
    if (src <= t) continue;            // none below, or file_tier_moves' case
    if (r.copies & bit(0)) continue;   // DRAM has it: write-behind copies it from there
    if (v.tiers[src].fetches_in_flight) continue;
    if (auto drops = file_room(v, t, r.file_bytes(), i, notes)) return copy(Purpose::prefetch_file, i, src, t, std::move(*drops));
  }
  return std::nullopt;
}

std::optional<Decision> persist(const View& v, Notes& notes) {
  if (!v.persistent) return std::nullopt;
  std::optional<std::size_t> oldest;
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    if (!idle(r) || !needs_persist(v, r) || fastest_copy(r, v.last()) < 0) continue;
    bool due = r.gen <= v.flush_horizon;
    for (int t = 0; t < v.last() && !due; ++t) due = v.tiers[t].write_behind && (r.copies & bit(t));
    if (due && (!oldest || r.gen < v.ranked[*oldest]->gen)) oldest = i;
  }
  if (!oldest) return std::nullopt;
  const Record& r = *v.ranked[*oldest];
  if (auto drops = file_room(v, v.last(), r.plan_bytes(), *oldest, notes))
    return copy(Purpose::persist, *oldest, fastest_copy(r, v.last()), v.last(), std::move(*drops));
  return std::nullopt;
}

std::optional<Decision> for_readers(const View& v, Notes& notes) {
  std::optional<std::size_t> oldest;
  for (std::size_t i = 0; i < v.ranked.size(); ++i) {
    const Record& r = *v.ranked[i];
    if (!r.for_readers || !idle(r) || r.copies != bit(0) || r.dir_target < 0) continue;
    if (!oldest || r.gen < v.ranked[*oldest]->gen) oldest = i;
  }
  if (!oldest) return std::nullopt;
  const Record& r = *v.ranked[*oldest];
  if (auto drops = file_room(v, r.dir_target, r.plan_bytes(), *oldest, notes))
    return copy(Purpose::for_readers, *oldest, 0, r.dir_target, std::move(*drops));
  return std::nullopt;
}

std::optional<Decision> write_behind(const View& v, Notes& notes) {
  // With a known schedule placement already sends down what must leave DRAM
  // (drain_dram, one write ahead); copying the records it keeps there would
  // spend bandwidth and file room on copies never read. Early copies are for
  // an unknown schedule's sudden evictions, for readers (they read only file
  // tiers), and for flush().
  const bool over_mark = v.tiers[0].write_behind;
  if (!over_mark && v.flush_horizon == 0) return std::nullopt;
  for (std::size_t i = v.ranked.size(); i-- > 0;) {
    const Record& r = *v.ranked[i];
    if (!idle(r) || r.copies != bit(0) || r.dir_target < 0) continue;
    const bool due = r.gen <= v.flush_horizon || (over_mark && (!v.prefetching || r.watched));
    if (!due) continue;
    if (auto drops = file_room(v, r.dir_target, r.plan_bytes(), i, notes))
      return copy(Purpose::write_behind, i, 0, r.dir_target, std::move(*drops));
  }
  return std::nullopt;
}

namespace {

/// copy_ahead() into the fastest file tier: idle, it takes a copy of the
/// furthest record only DRAM holds and places there, straight from DRAM
/// (first opportunity), rather than when a write waits for the slot: the
/// drain the slot needs is then done, at the speed it would have had.
///
/// With one file tier there is no slower tier to copy ahead to, and DRAM is
/// the bounded tier: that record is the one a write sends down next, so it
/// copies or none does (`furthest_only`). With DRAM for 8 records, a
/// 32-record LIFO run left its one tier idle for the first 94 ms (1.12x the
/// bound in mlbs-sim; 1.03x with this).
///
/// Over two file tiers, once copy_ahead()'s slower tier has nothing to take
/// (busy: its copy ahead holds the furthest record), a bounded fast tier takes
/// the furthest record that is not busy: else it idled until DRAM was full,
/// and from then on each write waited for a drain slower than itself
/// (`mlbs-sim --dram 32MiB --tier 32MiB:512MiB --tier 0:128MiB --record 8MiB
/// --records 8 --compute-write 10ms`: 1.241x -> 1.022x). copy_ahead() says
/// where not.
std::optional<Decision> copy_into_fast_tier(const View& v, bool furthest_only) {
  const TierView& tv = v.tiers[1];
  if (!v.tiers[0].write_behind || tv.copies_in_flight || tv.full_latched) return std::nullopt;
  for (std::size_t i = v.ranked.size(); i-- > 0;) {
    const Record& r = *v.ranked[i];
    if (r.copies != bit(0) || r.retired) continue;
    if (!r.busy && !r.error && !r.ahead_failed && r.dir_target == 1 && !(r.avoid & bit(1)) &&
        tv.free_bytes >= r.plan_bytes())
      return copy(Purpose::copy_ahead, i, 0, 1, {});
    if (furthest_only) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Decision> copy_ahead(const View& v, Notes&) {
  // Only while writes come down (they are what fills the tiers above), and
  // in scratch mode (persistent records get their last-tier copy anyway).
  if (!v.writing || v.persistent || !v.copy_ahead) return std::nullopt;
  const int last = v.last();
  if (last == 1) return copy_into_fast_tier(v, true);
  // New writes give a backed record's room only to records more than half
  // its size (placement): the latest write's size is what to expect of them.
  const Record* newest = nullptr;
  for (const Record* r : v.ranked)
    if (!newest || r->gen > newest->gen) newest = r;
  if (!newest) return std::nullopt;
  const bool dram_holds_four = double_buffers(v.tiers[0].capacity_bytes, newest->plan_bytes());
  const bool write_room = v.tiers[0].free_bytes >= newest->plan_bytes();
  bool dram_only_before = false;  // a DRAM-only record ranked after this one: it leaves DRAM first
  for (std::size_t i = v.ranked.size(); i-- > 0;) {
    const Record& r = *v.ranked[i];
    const int t = r.dir_target;
    const bool dram_only = r.copies == bit(0) && !r.retired;
    const bool leaves_next = dram_only && !dram_only_before;
    dram_only_before |= dram_only;
    if (!idle(r) || r.error || r.ahead_failed || t <= 0 || t >= last) continue;
    // From DRAM while that is the record's only copy, not to be encoded (a
    // record's file copies are one frame, made on its way to its target),
    // DRAM writes behind (Tier's marks) and keeps room for the next write
    // beside it: the slower tier starts with the first record written, not
    // once the tier above has it and DRAM has let it go (60-70 ms into the
    // demo's run); drain_dram() still gives the record its copy on tier t.
    // Else from tier t, DRAM holding the record too or not: placement plans
    // without the slot of a record copied ahead (place_records()), so other
    // records make the next write's room. Without that room only the record
    // to leave DRAM next copies, and only to the last tier (below).
    const bool from_dram = dram_only && !r.expect && v.tiers[0].write_behind;
    if (from_dram ? !(write_room || leaves_next) : !(r.copies & bit(t))) continue;
    if (r.copies & ~(bit(t + 1) - 1)) continue;  // backed already
    if (r.plan_bytes() >= 2 * newest->plan_bytes()) continue;  // no write would take its room
    // Only below a bounded tier (an unlimited one never gives a record up),
    // from its first record on: the slower tier is often the bottleneck, and
    // every moment it idles while writes come down is lost to the run. The
    // price, when the run fits after all, is traffic on an idle tier
    // (Config::copy_ahead = false spares it).
    const TierView& above = v.tiers[t];
    if (!above.capacity_bytes || (!from_dram && above.free_bytes >= above.capacity_bytes)) continue;
    auto takes = [&](int below) {
      const TierView& tv = v.tiers[below];
      return !(tv.copies_in_flight || tv.full_latched || tv.free_bytes < r.plan_bytes() || (r.avoid & bit(below)));
    };
    // From a bounded tier above the middle one, past it to the last tier when that takes the copy: the
    // oldest records end there, and relayed one tier at a time each crossed the middle tier twice, which
    // made it the bottleneck (`lifo/t3/n32/s2/fs0.25/bw2/f1.0`: 1.389x -> 1.131x the bound; the six
    // uncounted sweeps 133 points better, 12 worse by up to 0.09; the real `mlbs_sim_check --machine
    // three` 0.72 -> 0.70 s; architecture.md, "... and past the middle tier"). Else to the tier below.
    if (!from_dram && t + 1 < last && takes(last)) return copy(Purpose::copy_ahead, i, t, last, {});
    if ((write_room || !from_dram) && takes(t + 1)) return copy(Purpose::copy_ahead, i, from_dram ? 0 : t, t + 1, {});
    // The tier below busy, the last one idle takes the copy from DRAM
    // instead, where DRAM holds kDoubleBufferSlots writes: copied ahead one
    // tier at a time, the last of three started only once the middle one
    // had copied a record, and idled while it did (uncounted LIFO over two
    // bounded tiers: mlbs-sim's sweep 10 points better by up to 0.062, none
    // worse; the real `mlbs_sim_check --machine three` 0.76 -> 0.72 s). With
    // DRAM for fewer, such a long copy holds a slot the next write wants.
    // (From tier t the copy goes to the last tier, above.) With DRAM full
    // the record to leave it next still goes: else, once DRAM filled, the
    // last tier idled until the middle one filled and passed records on
    // (`lifo/t3/n96/s8/fs0.25/bw20/f1.0`: idle 81 s of a 505 s bound,
    // 1.267x -> 1.074x). Any DRAM-only record there too: the last tier took
    // five records where the run forced four (that model 1.21x -> 1.35x).
    if (from_dram && dram_holds_four && t + 1 < last && takes(last)) return copy(Purpose::copy_ahead, i, 0, last, {});
  }
  // The fast tier starts too, over two file tiers with a bounded fast one
  // and DRAM for kDoubleBufferSlots writes. Not over three: the oldest
  // records, copied to the fast tier early, passed down through the middle
  // one later (the three-tier machine's model 1.21x -> 1.55x). Not over
  // unlimited tiers: spreading picks a record's tier as it leaves DRAM, and
  // a copy made early on the fastest tied it there (tiers 2x apart: up to
  // 0.76 worse over the sweep). Not with DRAM for fewer writes, where the
  // copy holds one of its few slots (the sweep's points with DRAM for two
  // records: 3 better without the rule there, 1 worse).
  if (last == 2 && dram_holds_four && v.tiers[1].capacity_bytes) return copy_into_fast_tier(v, false);
  return std::nullopt;
}

bool stops_at_turn(Purpose why, int src, const Record& r, bool persistent) {
  if (why == Purpose::copy_ahead) return true;
  const bool made_room = why == Purpose::drain_dram || why == Purpose::stage || why == Purpose::move_down;
  if (persistent || !made_room) return false;
  if (src == 0) return r.want_mem;
  // Between file tiers: a move down of a record placement now keeps where
  // it is or higher (a staged copy, once reads begin: place_records()).
  return why == Purpose::move_down && r.dir_target > 0 && r.dir_target <= src;
}

std::optional<Decision> next(const View& v, Notes& notes) {
  using Policy = std::optional<Decision> (*)(const View&, Notes&);
  static constexpr Policy kInOrder[] = {demand_fetch,  drain_dram, file_tier_moves, fetch_via_dram,
                                        prefetch_dram, prefetch_file, persist,       for_readers,
                                        write_behind,  copy_ahead,    drain_ahead};
  for (Policy p : kInOrder)
    if (auto d = p(v, notes)) return d;
  return std::nullopt;
}

}  // namespace mlbs::engine::policies
