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

}  // namespace

struct ReaderCore::Impl {
  Config cfg;
  std::string store;
  std::unique_ptr<catalog::live::View> view;
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
  std::string space_for(int tier) const {
    const auto& info = view->info();
    return info.persistent && tier == static_cast<int>(tiers.size()) - 1 ? info.persistent_space : info.space;
  }
  /// The record as published, or UnknownIdError (never written, or erased).
  RecordView entry(std::uint64_t id) const {
    const std::optional<RecordView> r = view->find(id);
    if (!r || r->state == RecordState::erased)
      throw UnknownIdError(ENOENT, "no such record in the writer's catalog (never written, or erased)", ctx(id));
    return *r;
  }
  void check_writer(std::optional<std::uint64_t> id) const {
    if (view->closed())
      throw ShutdownError(ESHUTDOWN, "the writer closed the store", ctx(id));
    if (!view->writer_alive())
      throw ShutdownError(ESHUTDOWN, fmt::format("the writer (pid {}) is gone", view->info().pid), ctx(id));
  }

  void check_config() const {
    const auto& info = view->info();
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
};

ReaderCore::ReaderCore(const Config& cfg, const std::string& store, int rank) : impl_(std::make_unique<Impl>()) {
  cfg.validate();
  Impl& m = *impl_;
  m.cfg = cfg;
  m.store = store;
  m.view = catalog::live::View::open(cfg.tiers.back().path, store, rank);
  m.check_config();
  m.view->attach_reader();
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
  std::vector<std::uint64_t> out;
  for (const RecordView& r : impl_->view->records())
    if (impl_->readable(r)) out.push_back(r.id);
  return out;
}

bool ReaderCore::wait(std::uint64_t id, std::chrono::nanoseconds timeout) const {
  const Impl& m = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::uint32_t seen = m.view->changes();
    if (const auto r = m.view->find(id); r && m.readable(*r)) return true;
    m.check_writer(id);
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) return false;
    // At most a second at a time: a writer that dies wakes nobody.
    m.view->wait_change(seen, std::min<std::chrono::milliseconds>(
                                  std::chrono::ceil<std::chrono::milliseconds>(left), std::chrono::seconds(1)));
  }
}

std::uint64_t ReaderCore::size_bytes(std::uint64_t id) const { return impl_->entry(id).size; }

std::chrono::system_clock::time_point ReaderCore::readable_since(std::uint64_t id) const {
  const RecordView r = impl_->entry(id);
  if (!r.filed_ns)
    throw UnknownIdError(EAGAIN, "record not readable yet: it has not reached a file tier", impl_->ctx(id));
  // filed_ns is CLOCK_REALTIME, which system_clock reads on Linux.
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(r.filed_ns)));
}

void ReaderCore::read(std::uint64_t id, std::byte* out, std::size_t bytes, std::size_t elem) const {
  const Impl& m = *impl_;
  // A record moves or goes between the catalog's word and the open: a few
  // rounds follow it; more mean it keeps moving faster than it can be read.
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    const RecordView r = m.entry(id);
    if (!m.readable(r)) {
      std::string where;
      for (std::size_t t = 0; t < m.tiers.size(); ++t)
        if (r.copies & catalog::bit(static_cast<int>(t)))
          where += fmt::format("{}tier {} ({})", where.empty() ? "" : ", ", t, m.why[t]);
      throw UnknownIdError(EAGAIN, fmt::format("record not readable yet: its copies are on {} (wait for it)",
                                               where.empty() ? "no tier" : where),
                           m.ctx(id));
    }
    if (r.size != bytes || r.size % elem != 0)
      throw SizeMismatchError(EINVAL,
                              fmt::format("record of {} bytes read into a buffer of {} bytes ({}-byte elements)",
                                          r.size, bytes, elem),
                              m.ctx(id));
    std::exception_ptr failure;
    int corrupt = -1;  ///< the tier whose copy did not match the checksum
    for (std::size_t t = 1; t < m.tiers.size(); ++t) {
      if (!(r.copies & catalog::bit(static_cast<int>(t))) || !m.tiers[t]) continue;
      try {
        const tiers::StoredRecord rec{r.size, r.stored, r.checksum, r.frame_checksum, r.has_checksum, r.checksum_kind};
        auto reader = m.tiers[t]->open({m.space_for(static_cast<int>(t)), id, r.generation, m.store}, rec.file_bytes());
        detail::Block frame;  // a compressed record's frame, decoded into `out`
        tiers::read_record(*reader, rec, out, frame, true, 1, {});  // a mismatch is reported below, with context
        m.view->acknowledge(id, r.generation);  // reader retention may let it go now
        return;
      } catch (const CorruptionError&) {
        corrupt = static_cast<int>(t);  // torn or replaced under us: another copy, or another round
      } catch (const Error&) {
        failure = std::current_exception();  // gone meanwhile (moved, erased): the catalog will say
      }
    }
    // Nothing read: if the catalog entry changed, follow it; if not, the copy is bad.
    const std::optional<RecordView> now = m.view->find(id);
    const bool changed = !now || now->generation != r.generation || now->copies != r.copies ||
                         now->state == RecordState::erased;
    if (changed) continue;
    if (corrupt > 0)
      throw CorruptionError(EBADMSG, "the record's copy does not match the writer's checksum", m.ctx(id, corrupt));
    std::rethrow_exception(failure);
  }
  throw IoError(EAGAIN, fmt::format("the record moved {} times while being read", kRounds), m.ctx(id));
}

}  // namespace mlbs::detail
