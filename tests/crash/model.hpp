// mlbs_crash: what the parent may expect of a recovered store.
//
// Per id it keeps the state the last acknowledged flush (or the last
// recovery) left — a version (its salt) or absent — and the operations the
// child announced since. The library persists each id's operations in order,
// so a crash may leave any prefix of them applied: the allowed states are the
// acknowledged one and the state after each announced operation. With none
// announced since the acknowledgement, the expectation is exact.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "records.hpp"

namespace mlbs::crash {

class Model {
 public:
  using State = std::optional<std::uint64_t>;  ///< salt of the live version; nullopt = absent

  struct Verdict {
    State state;          ///< what was found (valid when problem is empty)
    std::string problem;  ///< empty: allowed
    bool exact = false;   ///< no operation pending: the acknowledged state was required
    bool newer = false;   ///< allowed, and later than the acknowledged state (an unacknowledged op landed)
  };

  /// The child is about to write version `salt` of `id`.
  void announce_write(std::uint64_t id, std::uint64_t salt) {
    Entry& e = ids_[id];
    e.pending.push_back(salt);
    e.history.push_back(salt);
    dirty_.insert(id);
  }
  /// The write of `id` just announced was refused: it never happened.
  void refuse_write(std::uint64_t id) {
    Entry& e = ids_[id];
    if (!e.pending.empty() && e.pending.back()) e.pending.pop_back();
    if (e.pending.empty()) dirty_.erase(id);
  }
  /// The child is about to erase `id`.
  void announce_erase(std::uint64_t id) {
    ids_[id].pending.push_back(std::nullopt);
    dirty_.insert(id);
  }
  /// A flush() returned: everything announced before it is acknowledged.
  void acknowledge() {
    for (std::uint64_t id : dirty_) {
      Entry& e = ids_[id];
      e.acked = e.pending.back();
      e.pending.clear();
    }
    dirty_.clear();
  }

  /// Judges what recovery shows for `id`: present with `data` (n bytes), or absent.
  Verdict judge(std::uint64_t id, bool present, const std::byte* data, std::size_t n) const {
    const auto it = ids_.find(id);
    if (it == ids_.end())
      return {std::nullopt, present ? fmt::format("id {} was recovered ({} bytes) but never written", id, n) : "",
              true};
    const Entry& e = it->second;
    std::vector<State> allowed{e.acked};
    allowed.insert(allowed.end(), e.pending.begin(), e.pending.end());
    const bool exact = e.pending.empty();
    if (!present) {
      if (std::find(allowed.begin(), allowed.end(), std::nullopt) != allowed.end())
        return {std::nullopt, "", exact, e.acked.has_value()};
      return {std::nullopt, fmt::format("id {}: acknowledged version (salt {:#x}, {} bytes) is missing", id,
                                        *e.acked, record_size(id, *e.acked)),
              exact};
    }
    for (const State& s : allowed)
      if (s && matches(id, *s, data, n)) return {s, "", exact, s != e.acked};
    // Not allowed: say whether it is an older version (an acknowledged erase
    // or rewrite undone) or bytes no write ever produced.
    for (std::uint64_t salt : e.history)
      if (matches(id, salt, data, n))
        return {salt, fmt::format("id {}: superseded version (salt {:#x}) came back; allowed: {}", id, salt,
                                  describe(allowed)),
                exact};
    std::string closest;
    for (const State& s : allowed)
      if (s && record_size(id, *s) == n)
        closest = fmt::format("; first byte differing from salt {:#x} at offset {}", *s,
                              first_difference(id, *s, data, n));
    return {std::nullopt, fmt::format("id {}: wrong bytes ({} bytes) matching no version written for it; "
                                      "allowed: {}{}", id, n, describe(allowed), closest),
            exact};
  }

  /// Recovery found `s` for `id`: it is on disk now, so the next recovery must find it too.
  void settle(std::uint64_t id, State s) {
    auto it = ids_.find(id);
    if (it == ids_.end()) return;
    it->second.acked = s;
    it->second.pending.clear();
    dirty_.erase(id);
  }

  /// (id, salt) of every record whose acknowledged version nothing has followed since.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> settled_present() const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const auto& [id, e] : ids_)
      if (e.pending.empty() && e.acked) out.emplace_back(id, *e.acked);
    return out;
  }

  /// Every id ever announced.
  std::vector<std::uint64_t> ids() const {
    std::vector<std::uint64_t> out;
    for (const auto& [id, e] : ids_) out.push_back(id);
    return out;
  }

 private:
  struct Entry {
    State acked;                       ///< nullopt until a write is acknowledged
    std::vector<State> pending;        ///< announced since: a salt (write) or nullopt (erase)
    std::vector<std::uint64_t> history;  ///< every salt ever written under this id
  };

  static bool matches(std::uint64_t id, std::uint64_t salt, const std::byte* data, std::size_t n) {
    return record_size(id, salt) == n && first_difference(id, salt, data, n) == n;
  }
  static std::string describe(const std::vector<State>& states) {
    std::string out;
    for (const State& s : states)
      out += (out.empty() ? "" : ", ") + (s ? fmt::format("salt {:#x}", *s) : std::string("absent"));
    return out;
  }

  std::map<std::uint64_t, Entry> ids_;
  std::set<std::uint64_t> dirty_;
};

}  // namespace mlbs::crash
