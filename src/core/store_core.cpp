#include "mlbs/detail/store_core.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.hpp"
#include "engine/policies/parts.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/runtime.hpp"

#if MLBS_HAVE_MPI
#include "mpi/group.hpp"
#endif

namespace mlbs::detail {

namespace {
codec::Element codec_element(ElementKind k) {
  switch (k) {
    case ElementKind::float32: return codec::Element::float32;
    case ElementKind::float64: return codec::Element::float64;
    default: return codec::Element::any;
  }
}

/// The elements the options say, where the type leaves it open.
ElementKind resolve(ElementKind from_type, StoreOptions::Elements given, const std::string& store) {
  if (given == StoreOptions::Elements::from_type) return from_type;
  const ElementKind said = given == StoreOptions::Elements::float32 ? ElementKind::float32 : ElementKind::float64;
  if (from_type != ElementKind::bytes && from_type != said)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("StoreOptions::elements says {} but the store's elements are {}",
                                           said == ElementKind::float32 ? "float32" : "float64",
                                           from_type == ElementKind::float32   ? "float"
                                           : from_type == ElementKind::float64 ? "double"
                                                                               : "of another type"),
                               {store, {}, {}});
  return said;
}

/// A persistent store in parts, its parts just recovered: a record some part
/// lacks cannot be read whole, and is dropped from the parts holding it
/// (named on stderr, as recovery names what it skips). Its parts are each
/// durable, but the record was not until all were: a crash between them
/// came before any flush() acknowledged it. A part that failed verification
/// leaves its record so too; the part's own copy stays where recovery left it.
void drop_partial_records(engine::Engine& e, const std::vector<std::uint32_t>& handles, const std::string& store) {
  std::vector<std::vector<std::uint64_t>> held;  // each part's ids, sorted
  std::vector<std::uint64_t> any;
  for (std::uint32_t h : handles) {
    held.push_back(e.ids(h));
    std::vector<std::uint64_t> more;
    std::set_union(any.begin(), any.end(), held.back().begin(), held.back().end(), std::back_inserter(more));
    any = std::move(more);
  }
  for (std::uint64_t id : any) {
    std::vector<std::size_t> missing;
    for (std::size_t j = 0; j < held.size(); ++j)
      if (!std::binary_search(held[j].begin(), held[j].end(), id)) missing.push_back(j);
    if (missing.empty()) continue;
    std::fprintf(stderr,
                 "mlbs: store '%s': record %llu lacks part%s %s of %zu at recovery (a crash between its parts, "
                 "before any flush() returned, or a part that failed verification): its other parts are dropped\n",
                 store.c_str(), static_cast<unsigned long long>(id), missing.size() > 1 ? "s" : "",
                 fmt::format("{}", fmt::join(missing, ", ")).c_str(), handles.size());
    for (std::size_t j = 0; j < held.size(); ++j)
      if (std::binary_search(held[j].begin(), held[j].end(), id)) e.erase(handles[j], id);
  }
}

/// StoreOptions::kAutoParts: the count a persistent store recorded, else
/// what the policy gives for this record size and DRAM budget.
std::uint32_t choose_parts(const engine::Engine& e, const std::string& store, std::size_t record_bytes) {
  if (const std::optional<std::uint32_t> recorded = e.recorded_parts(store)) return *recorded;
  return engine::policies::auto_parts(record_bytes, e.config().tiers.front().capacity_bytes, StoreOptions::kMaxParts);
}

}  // namespace

StoreCore::StoreCore(Runtime& rt, std::string name, ElementKind element, std::uint32_t plane_nx,
                     std::uint32_t plane_ny)
    : StoreCore(rt, std::move(name), element, StoreOptions{{}, plane_nx, plane_ny}) {}

StoreCore::StoreCore(Runtime& rt, std::string name, ElementKind element, const StoreOptions& given,
                     std::size_t record_bytes)
    : engine_(rt.engine_), name_(std::move(name)) {
  StoreOptions options = given;
  if (options.parts == StoreOptions::kAutoParts) options.parts = choose_parts(*engine_, name_, record_bytes);
  if (options.parts == 0 || options.parts > StoreOptions::kMaxParts)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("StoreOptions::parts is {}: give 1 (whole records) to {}, or kAutoParts",
                                           options.parts, StoreOptions::kMaxParts),
                               {name_, {}, {}});
  const ElementKind kind = resolve(element, options.elements, name_);
  const std::size_t elem = kind == ElementKind::float32 ? 4 : kind == ElementKind::float64 ? 8 : 1;
  granule_ = options.plane_nx ? std::size_t{options.plane_nx} * std::max<std::uint32_t>(1, options.plane_ny) * elem
                              : kBlockAlign;
  handles_.reserve(options.parts);
  try {
    for (std::uint32_t j = 0; j < options.parts; ++j)
      handles_.push_back(engine_->open_store(name_, codec_element(kind), {options.plane_nx, options.plane_ny},
                                             options.codec, {j, options.parts}));
    if (options.parts > 1 && engine_->config().durability == Durability::persistent)
      drop_partial_records(*engine_, handles_, name_);
  } catch (...) {
    close_parts();
    throw;
  }
}

StoreCore::~StoreCore() { close_parts(); }

void StoreCore::close_parts() noexcept {
  // Last part first: part 0 holds a persistent store's name until the rest are closed.
  if (engine_)
    for (auto h = handles_.rbegin(); h != handles_.rend(); ++h) engine_->close_store(*h);
}

StoreCore::StoreCore(StoreCore&& o) noexcept
    : engine_(std::move(o.engine_)), handles_(std::move(o.handles_)), granule_(o.granule_), name_(std::move(o.name_)) {}

StoreCore& StoreCore::operator=(StoreCore&& o) noexcept {
  if (this != &o) {
    close_parts();
    engine_ = std::move(o.engine_);
    handles_ = std::move(o.handles_);
    granule_ = o.granule_;
    name_ = std::move(o.name_);
  }
  return *this;
}

namespace {
engine::Engine& live(const std::shared_ptr<engine::Engine>& e, const std::string& name) {
  if (!e) throw InvalidArgumentError(EBADF, "store was moved from", {name, {}, {}});
  return *e;
}

void refuse_lending(std::uint32_t parts, const std::string& name) {
  if (parts > 1)
    throw InvalidArgumentError(EINVAL, fmt::format("a store in {} parts has no one DRAM slot to lend: write() it", parts),
                               {name, {}, {}});
}

std::size_t sum(const std::vector<std::size_t>& sizes) {
  std::size_t n = 0;
  for (std::size_t s : sizes) n += s;
  return n;
}

/// A record in parts: its parts' sizes (UnknownIdError naming the store
/// unless every part is there).
std::vector<std::size_t> part_sizes(engine::Engine& e, const std::vector<std::uint32_t>& handles,
                                    const std::string& store, std::uint64_t id) {
  std::vector<std::size_t> sizes;
  sizes.reserve(handles.size());
  for (std::uint32_t h : handles) {
    if (!e.contains(h, id)) throw UnknownIdError(ENOENT, "no such record", {store, id, {}});
    sizes.push_back(e.info(h, id).size_bytes);
  }
  return sizes;
}

/// Reads the parts of record `id` into `dst`, in the order the schedule reads them.
void read_parts(engine::Engine& e, const std::vector<std::uint32_t>& handles, std::uint64_t id, std::byte* dst,
                const std::vector<std::size_t>& sizes) {
  const auto k = static_cast<std::uint32_t>(handles.size());
  std::vector<std::size_t> offsets(k, 0);
  for (std::uint32_t j = 1; j < k; ++j) offsets[j] = offsets[j - 1] + sizes[j - 1];
  // LIFO reads what was written last first: the last part, as placement ranks the parts.
  const bool newest_first = e.schedule_kind() == Schedule::Kind::lifo;
  auto part = [&](std::uint32_t i) { return newest_first ? k - 1 - i : i; };
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint32_t j = part(i);
    try {
      // Once the first part is read (released, in scratch), another record's
      // failure waits for the next call: it must not stop this read half-way.
      e.read_into(handles[j], id, dst + offsets[j], 0, sizes[j], i > 0);
    } catch (...) {
      // This part's own copy failed on every tier (or the runtime stops): the
      // record can no longer be read whole, and what is left of it goes.
      if (i > 0) try {
          for (std::uint32_t h : handles)
            if (e.contains(h, id)) e.erase(h, id);
        } catch (...) {  // the runtime is failing: the read's own error says enough
        }
      throw;
    }
  }
}

/// The parts of record `id` into `buf`, reallocated (only once they are all read) when too small.
void gather(engine::Engine& e, const std::vector<std::uint32_t>& handles, std::uint64_t id, Block& buf,
            const std::vector<std::size_t>& sizes) {
  if (buf.capacity() >= sum(sizes)) return read_parts(e, handles, id, buf.data(), sizes);
  Block fresh = Block::allocate(sum(sizes));
  read_parts(e, handles, id, fresh.data(), sizes);
  buf = std::move(fresh);
}

}  // namespace

void StoreCore::write(std::uint64_t id, const std::byte* data, std::size_t bytes) {
  engine::Engine& e = live(engine_, name_);
  const std::uint32_t k = parts();
  if (k == 1) return e.write(handles_[0], id, data, bytes);
  // Equal parts of whole granules; the last takes what is left (it may be empty).
  const std::size_t per = ((bytes + k - 1) / k + granule_ - 1) / granule_ * granule_;
  std::uint32_t done = 0;
  try {
    for (; done < k; ++done) {
      const std::size_t offset = std::min(bytes, std::size_t{done} * per);
      e.write(handles_[done], id, data + offset, std::min(per, bytes - offset));
    }
  } catch (...) {
    // All or nothing: a write refused (no room, a duplicate) leaves no parts behind.
    for (std::uint32_t j = 0; j < done; ++j) try {
        e.erase(handles_[j], id);
      } catch (...) {  // the write's own error says what went wrong
      }
    throw;
  }
}

std::size_t StoreCore::read(std::uint64_t id, Block& buf, std::size_t elem_size) {
  engine::Engine& e = live(engine_, name_);
  if (parts() == 1) return e.read(handles_[0], id, buf, elem_size);
  const std::vector<std::size_t> sizes = part_sizes(e, handles_, name_, id);
  const std::size_t total = sum(sizes);
  if (elem_size == 0 || total % elem_size != 0)
    throw SizeMismatchError(EMSGSIZE,
                            fmt::format("record of {} bytes is not a whole number of {}-byte elements", total,
                                        elem_size),
                            {name_, id, {}});
  gather(e, handles_, id, buf, sizes);
  return total;
}

void StoreCore::read_exact(std::uint64_t id, Block& buf, std::size_t bytes) {
  engine::Engine& e = live(engine_, name_);
  if (parts() == 1) return static_cast<void>(e.read(handles_[0], id, buf, 1, bytes));
  const std::vector<std::size_t> sizes = part_sizes(e, handles_, name_, id);
  if (const std::size_t total = sum(sizes); total != bytes)
    throw SizeMismatchError(EMSGSIZE, fmt::format("record of {} bytes, expected {}", total, bytes), {name_, id, {}});
  gather(e, handles_, id, buf, sizes);
}

std::size_t StoreCore::read_into(std::uint64_t id, std::byte* dst, std::size_t offset, std::size_t len) {
  engine::Engine& e = live(engine_, name_);
  if (parts() == 1) return e.read_into(handles_[0], id, dst, offset, len);
  const std::vector<std::size_t> sizes = part_sizes(e, handles_, name_, id);
  const std::size_t total = sum(sizes);
  if (offset != 0 || len < total)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("bytes [{}, +{}) of a record of {}: a store in parts reads whole records",
                                           offset, len, total),
                               {name_, id, {}});
  read_parts(e, handles_, id, dst, sizes);
  return total;
}

std::optional<Block> StoreCore::lend_slot(std::size_t bytes) {
  engine::Engine& e = live(engine_, name_);
  refuse_lending(parts(), name_);
  return e.lend_slot(bytes);
}

void StoreCore::write_lent(std::uint64_t id, Block& slot, std::size_t bytes) {
  engine::Engine& e = live(engine_, name_);
  refuse_lending(parts(), name_);
  e.write_lent(handles_[0], id, slot, bytes);
}

void StoreCore::return_slot(Block slot) noexcept {
  if (engine_) engine_->return_slot(std::move(slot));
}

bool StoreCore::contains(std::uint64_t id) const {
  engine::Engine& e = live(engine_, name_);
  return std::all_of(handles_.begin(), handles_.end(), [&](std::uint32_t h) { return e.contains(h, id); });
}

void StoreCore::erase(std::uint64_t id) {
  engine::Engine& e = live(engine_, name_);
  if (parts() == 1) return e.erase(handles_[0], id);
  bool any = false;
  for (std::uint32_t h : handles_)
    if (e.contains(h, id)) {
      e.erase(h, id);
      any = true;
    }
  if (!any) throw UnknownIdError(ENOENT, "no such record", {name_, id, {}});
}

std::vector<std::uint64_t> StoreCore::ids() const {
  engine::Engine& e = live(engine_, name_);
  std::vector<std::uint64_t> out = e.ids(handles_[0]);
  for (std::size_t j = 1; j < handles_.size(); ++j) {  // records whole in every part
    const std::vector<std::uint64_t> more = e.ids(handles_[j]);
    std::vector<std::uint64_t> both;
    std::set_intersection(out.begin(), out.end(), more.begin(), more.end(), std::back_inserter(both));
    out = std::move(both);
  }
  return out;
}

void StoreCore::flush() {
  engine::Engine& e = live(engine_, name_);
  for (std::uint32_t h : handles_) e.flush(h);
}

RecordInfo StoreCore::info(std::uint64_t id) const {
  engine::Engine& e = live(engine_, name_);
  if (parts() == 1) return e.info(handles_[0], id);
  RecordInfo out;
  out.id = id;
  out.durable = true;
  bool encoded = false;
  for (std::uint32_t h : handles_) {
    if (!e.contains(h, id)) throw UnknownIdError(ENOENT, "no such record", {name_, id, {}});
    RecordInfo p = e.info(h, id);
    out.size_bytes += p.size_bytes;
    out.stored_bytes += p.stored_bytes ? p.stored_bytes : p.size_bytes;
    encoded |= p.stored_bytes != 0;
    out.durable &= p.durable;
    for (int t : p.tiers)
      if (std::find(out.tiers.begin(), out.tiers.end(), t) == out.tiers.end()) out.tiers.push_back(t);
    out.lineage.insert(out.lineage.end(), p.lineage.begin(), p.lineage.end());
    out.part_tiers.push_back(std::move(p.tiers));
    out.part_bytes.push_back(p.size_bytes);
  }
  if (!encoded) out.stored_bytes = 0;
  std::sort(out.tiers.begin(), out.tiers.end());
  std::stable_sort(out.lineage.begin(), out.lineage.end(),
                   [](const RecordInfo::Move& a, const RecordInfo::Move& b) { return a.time_ns < b.time_ns; });
  return out;  // no checksum: each part is checked on its own
}

#if MLBS_HAVE_MPI
MPI_Comm StoreCore::runtime_comm() const {
  const auto* g = dynamic_cast<const mpi::MpiGroup*>(live(engine_, name_).group());
  return g ? g->user_comm() : MPI_COMM_NULL;
}
#endif

}  // namespace mlbs::detail
