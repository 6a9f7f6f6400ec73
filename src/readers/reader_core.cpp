// mlbs — the reader behind Reader<T>: the writer's live catalog says which
// records are readable and where; their bytes come straight from the copies
// on the file tiers, checked against the catalog's checksum. A copy that goes
// (moved down, erased) while it is read is noticed by its changed catalog
// entry: read again, or a typed error; never other bytes.
#include "mlbs/reader.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "catalog/live.hpp"
#include "tiers/backend.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/registry.hpp"
#include "tiers/tier_folder.hpp"
#include "tiers/transfer.hpp"

namespace mlbs::detail {

using catalog::RecordState;
using catalog::live::RecordView;

namespace {

std::string describe(const std::string& kind, const std::string& path) {
  return path.empty() ? kind : kind + " " + path;
}

std::string normalised(const std::string& path) {
  return path.empty() ? path : tiers::normalised_tier_path(path).string();
}

/// The writer's live catalogs of `store`: its own, or, for a store the
/// writer keeps in parts (docs/parts.md), one per part, part 0 first.
std::vector<std::unique_ptr<catalog::live::View>> open_views(const std::string& last_tier, const std::string& store,
                                                             int rank) {
  using catalog::live::View;
  std::vector<std::unique_ptr<View>> views;
  try {
    views.push_back(View::open(last_tier, store, rank));
    return views;
  } catch (const UnknownIdError&) {
    try {
      views.push_back(View::open(last_tier, store + "#0", rank));  // part 0 says how many there are
    } catch (const UnknownIdError&) {
    }
    if (views.empty() || views[0]->info().parts < 2) throw;  // no such store, as first said
  }
  const std::uint32_t k = views[0]->info().parts;
  for (std::uint32_t j = 1; j < k; ++j) {
    try {
      views.push_back(View::open(last_tier, fmt::format("{}#{}", store, j), rank));
    } catch (const UnknownIdError&) {
      throw UnknownIdError(ENOENT,
                           fmt::format("the writer keeps the store in {} parts and has not published part {} (yet: "
                                       "try again)",
                                       k, j),
                           {store, {}, {}});
    }
    const auto& info = views.back()->info();
    if (info.part != j || info.parts != k || info.pid != views[0]->info().pid)
      throw InvalidArgumentError(EINVAL,
                                 fmt::format("the live catalog of part {} of {} is part {} of {} of writer pid {}, "
                                             "not of writer pid {}",
                                             j, k, info.part, info.parts, info.pid, views[0]->info().pid),
                                 {store, {}, {}});
  }
  return views;
}

}  // namespace

struct ReaderCore::Impl {
  using View = catalog::live::View;

  Config cfg;
  std::string store;
  /// The store's live catalog, or its parts' (part 0 first): records are
  /// then read part by part into one buffer.
  std::vector<std::unique_ptr<View>> views;
  /// Per tier: a backend to read its copies, or null (DRAM: private to the
  /// writer; a layout or kind readers cannot read yet: `why`).
  std::vector<std::unique_ptr<tiers::Backend>> tiers;
  std::vector<std::string> why;
  catalog::TierMask readable_tiers = 0;

  /// `tier`: the file tier whose copy the error is about (it has a backend), or none.
  ErrorContext ctx(std::optional<std::uint64_t> id, int tier = -1) const {
    return {store, id, tier > 0 ? tiers[tier]->label() : std::string()};
  }
  bool readable(const RecordView& r) const {
    return r.state != RecordState::erased && (r.copies & readable_tiers) != 0;
  }
  std::string space_for(const View& v, int tier) const {
    const auto& info = v.info();
    return info.persistent && tier == static_cast<int>(tiers.size()) - 1 ? info.persistent_space : info.space;
  }
  /// The record (or part) as published, or UnknownIdError (never written, or erased).
  RecordView entry(const View& v, std::uint64_t id) const {
    const std::optional<RecordView> r = v.find(id);
    if (!r || r->state == RecordState::erased)
      throw UnknownIdError(ENOENT, "no such record in the writer's catalog (never written, or erased)", ctx(id));
    return *r;
  }
  void check_writer(const View& v, std::optional<std::uint64_t> id) const {
    if (v.closed())
      throw ShutdownError(ESHUTDOWN, "the writer closed the store", ctx(id));
    if (!v.writer_alive())
      throw ShutdownError(ESHUTDOWN, fmt::format("the writer (pid {}) is gone", v.info().pid), ctx(id));
  }
  /// Until record `id` of `v` is readable (true) or `deadline` passes.
  bool wait(const View& v, std::uint64_t id, std::chrono::steady_clock::time_point deadline) const {
    for (;;) {
      const std::uint32_t seen = v.changes();
      if (const auto r = v.find(id); r && readable(*r)) return true;
      check_writer(v, id);
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) return false;
      // At most a second at a time: a writer that dies wakes nobody.
      v.wait_change(seen, std::min<std::chrono::milliseconds>(std::chrono::ceil<std::chrono::milliseconds>(left),
                                                              std::chrono::seconds(1)));
    }
  }
  /// Copies one record of `v` (a whole record, or a part of one) into `out`, which holds `bytes`
  /// (acknowledged to the writer: `v` is not const).
  void read(View& v, std::uint64_t id, std::byte* out, std::size_t bytes) const {
    // A record moves or goes between the catalog's word and the open: a few
    // rounds follow it; more mean it keeps moving faster than it can be read.
    constexpr int kRounds = 8;
    for (int round = 0; round < kRounds; ++round) {
      const RecordView r = entry(v, id);
      if (!readable(r)) {
        std::string where;
        for (std::size_t t = 0; t < tiers.size(); ++t)
          if (r.copies & catalog::bit(static_cast<int>(t)))
            where += fmt::format("{}tier {} ({})", where.empty() ? "" : ", ", t, why[t]);
        throw UnknownIdError(EAGAIN, fmt::format("record not readable yet: its copies are on {} (wait for it)",
                                                 where.empty() ? "no tier" : where),
                             ctx(id));
      }
      if (r.size != bytes)  // rewritten since its size was taken
        throw SizeMismatchError(EINVAL, fmt::format("record of {} bytes read into {} bytes", r.size, bytes), ctx(id));
      std::exception_ptr failure;
      int corrupt = -1;  ///< the tier whose copy did not match the checksum
      for (std::size_t t = 1; t < tiers.size(); ++t) {
        if (!(r.copies & catalog::bit(static_cast<int>(t))) || !tiers[t]) continue;
        try {
          const tiers::StoredRecord rec{r.size, r.stored, r.checksum, r.frame_checksum, r.has_checksum, r.checksum_kind};
          auto reader = tiers[t]->open({space_for(v, static_cast<int>(t)), id, r.generation, v.info().store},
                                       rec.file_bytes());
          detail::Block frame;  // a compressed record's frame, decoded into `out`
          tiers::read_record(*reader, rec, out, frame, true, 1, {});  // a mismatch is reported below, with context
          v.acknowledge(id, r.generation);  // reader retention may let it go now
          return;
        } catch (const CorruptionError&) {
          corrupt = static_cast<int>(t);  // torn or replaced under us: another copy, or another round
        } catch (const Error&) {
          failure = std::current_exception();  // gone meanwhile (moved, erased): the catalog will say
        }
      }
      // Nothing read: if the catalog entry changed, follow it; if not, the copy is bad.
      const std::optional<RecordView> now = v.find(id);
      const bool changed = !now || now->generation != r.generation || now->copies != r.copies ||
                           now->state == RecordState::erased;
      if (changed) continue;
      if (corrupt > 0)
        throw CorruptionError(EBADMSG, "the record's copy does not match the writer's checksum", ctx(id, corrupt));
      std::rethrow_exception(failure);
    }
    throw IoError(EAGAIN, fmt::format("the record moved {} times while being read", kRounds), ctx(id));
  }
  void check_config() const;
};

void ReaderCore::Impl::check_config() const {
  const auto& info = views[0]->info();
  const bool persistent = cfg.durability == Durability::persistent;
  if (info.persistent != persistent)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("the writer runs the store {}, this reader's configuration says {}",
                                           info.persistent ? "persistent" : "scratch",
                                           persistent ? "persistent" : "scratch"),
                               ctx({}));
  if (info.tier_paths.size() != cfg.tiers.size())
    throw InvalidArgumentError(EINVAL,
                               fmt::format("the writer has {} tiers, this reader's configuration {}",
                                           info.tier_paths.size(), cfg.tiers.size()),
                               ctx({}));
  for (std::size_t t = 0; t < cfg.tiers.size(); ++t) {
    const Tier& mine = cfg.tiers[t];
    if (info.tier_kinds[t] != mine.kind || normalised(info.tier_paths[t]) != normalised(mine.path))
      throw InvalidArgumentError(
          EINVAL,
          fmt::format("tier {} differs: the writer's is {}, this reader's {}", t,
                      describe(info.tier_kinds[t], info.tier_paths[t]), describe(mine.kind, mine.path)),
          ctx({}));
  }
}

ReaderCore::ReaderCore(const Config& cfg, const std::string& store, int rank) : impl_(std::make_unique<Impl>()) {
  cfg.validate();
  Impl& m = *impl_;
  m.cfg = cfg;
  m.store = store;
  m.views = open_views(cfg.tiers.back().path, store, rank);
  m.check_config();
  for (auto& v : m.views) v->attach_reader();
  m.tiers.resize(cfg.tiers.size());
  m.why.resize(cfg.tiers.size());
  m.why[0] = "DRAM is the writer's own memory";
  for (std::size_t t = 1; t < cfg.tiers.size(); ++t) {
    Tier desc = cfg.tiers[t];
    if (desc.kind != "directory") {
      m.why[t] = fmt::format("readers do not read {} tiers yet", desc.kind);
      continue;
    }
    if (!desc.layout) desc.layout = tiers::hooks::test_layout().value_or(cfg.layout);
    if (*desc.layout != Layout::file_per_record) {
      m.why[t] = "the log layout's index lives in the writer: readers read file-per-record tiers";
      continue;
    }
    // The reader's own I/O: plain preads (no ring to set up, any buffer),
    // none of the writer's test faults or pacing.
    desc.io_backend = IoBackend::pread;
    desc.faults.clear();
    desc.bandwidth_bytes_per_s = 0;
    desc.page_cache = desc.page_cache || cfg.page_cache;
    m.tiers[t] = tiers::make_backend(static_cast<int>(t), desc, nullptr);
    m.readable_tiers |= catalog::bit(static_cast<int>(t));
  }
}

ReaderCore::~ReaderCore() = default;
ReaderCore::ReaderCore(ReaderCore&&) noexcept = default;
ReaderCore& ReaderCore::operator=(ReaderCore&&) noexcept = default;

std::vector<std::uint64_t> ReaderCore::ids() const {
  const Impl& m = *impl_;
  std::vector<std::uint64_t> out;
  for (const RecordView& r : m.views[0]->records())
    if (m.readable(r)) out.push_back(r.id);
  for (std::size_t j = 1; j < m.views.size(); ++j)  // a record in parts: readable once every part is
    std::erase_if(out, [&](std::uint64_t id) {
      const auto r = m.views[j]->find(id);
      return !r || !m.readable(*r);
    });
  return out;
}

bool ReaderCore::wait(std::uint64_t id, std::chrono::nanoseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  return std::all_of(impl_->views.begin(), impl_->views.end(),
                     [&](const auto& v) { return impl_->wait(*v, id, deadline); });
}

std::uint64_t ReaderCore::size_bytes(std::uint64_t id) const {
  std::uint64_t bytes = 0;
  for (const auto& v : impl_->views) bytes += impl_->entry(*v, id).size;
  return bytes;
}

std::chrono::system_clock::time_point ReaderCore::readable_since(std::uint64_t id) const {
  std::uint64_t filed_ns = 0;  // a record in parts: once its last part was filed
  for (const auto& v : impl_->views) {
    const RecordView r = impl_->entry(*v, id);
    if (!r.filed_ns)
      throw UnknownIdError(EAGAIN, "record not readable yet: it has not reached a file tier", impl_->ctx(id));
    filed_ns = std::max(filed_ns, r.filed_ns);
  }
  // filed_ns is CLOCK_REALTIME, which system_clock reads on Linux.
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(filed_ns)));
}

void ReaderCore::read(std::uint64_t id, std::byte* out, std::size_t bytes, std::size_t elem) const {
  const Impl& m = *impl_;
  std::vector<std::size_t> sizes;
  for (const auto& v : m.views) sizes.push_back(m.entry(*v, id).size);
  std::size_t total = 0;
  for (std::size_t n : sizes) total += n;
  if (total != bytes || total % elem != 0)
    throw SizeMismatchError(EINVAL,
                            fmt::format("record of {} bytes read into a buffer of {} bytes ({}-byte elements)", total,
                                        bytes, elem),
                            m.ctx(id));
  for (std::size_t j = 0; j < m.views.size(); ++j) {
    m.read(*m.views[j], id, out, sizes[j]);
    out += sizes[j];
  }
}

}  // namespace mlbs::detail
