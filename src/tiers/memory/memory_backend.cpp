#include "tiers/memory/memory_backend.hpp"

#include <cerrno>
#include <cstring>

namespace mlbs::tiers {

MemoryBackend::MemoryBackend(int index, Tier desc) : Backend(index, desc), pool_(desc.capacity_bytes, false) {}

// Without the lock: it touches only the arena (thread-safe) and a flag no
// other call reads, and its first step may take a while.
void MemoryBackend::start_prefault() { pool_.start_prefault(); }

detail::Block MemoryBackend::scratch(std::size_t bytes) {
  std::lock_guard lock(mu_);
  return pool_.scratch(bytes);
}

std::uint64_t MemoryBackend::free_bytes() const {
  std::lock_guard lock(mu_);
  return pool_.free_bytes();
}

bool MemoryBackend::fits(std::size_t bytes) const {
  std::lock_guard lock(mu_);
  return pool_.fits(bytes);
}

std::optional<detail::Block> MemoryBackend::allocate_slot(std::size_t bytes) {
  std::lock_guard lock(mu_);
  auto block = pool_.allocate(bytes);
  if (block) sync_used();
  return block;
}

void MemoryBackend::release_slot(detail::Block block) noexcept {
  std::lock_guard lock(mu_);
  pool_.release(std::move(block));
  sync_used();
}

void MemoryBackend::exchange_slot(std::size_t capacity, detail::Block replacement) noexcept {
  std::lock_guard lock(mu_);
  pool_.exchange(capacity, std::move(replacement));
  sync_used();
}

std::uint64_t MemoryBackend::fallback_allocations() const {
  std::lock_guard lock(mu_);
  return pool_.fallback_allocations();
}

// --- the object interface: objects in slots of the same pool ---

class MemoryBackend::SlotWriter final : public ObjectWriter {
 public:
  SlotWriter(MemoryBackend& owner, Key key, detail::Block block, std::uint64_t size)
      : owner_(owner), key_(std::move(key)), block_(std::move(block)), size_(size) {}
  ~SlotWriter() override {
    if (block_) owner_.release_slot(std::move(block_));  // never committed
  }
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    if (offset > size_ || bytes > size_ - offset)
      owner_.fail(EINVAL, "write past the end of the object", nullptr);
    if (bytes) std::memcpy(block_.data() + offset, data, bytes);
  }
  void commit(bool) override {
    std::lock_guard lock(owner_.mu_);
    auto [it, fresh] = owner_.objects_.try_emplace(key_);
    if (!fresh) owner_.pool_.release(std::move(it->second));
    it->second = std::move(block_);
    owner_.sync_used();
  }

 private:
  MemoryBackend& owner_;
  Key key_;
  detail::Block block_;
  std::uint64_t size_;
};

class MemoryBackend::SlotReader final : public ObjectReader {
 public:
  SlotReader(MemoryBackend& owner, Key key, std::uint64_t size) : owner_(owner), key_(std::move(key)), size_(size) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    if (offset > size_ || bytes > size_ - offset)
      owner_.fail(EIO, "read past the end of the object", nullptr);
    // Copied under the lock: a removal meanwhile cannot free the slot under us.
    std::lock_guard lock(owner_.mu_);
    auto it = owner_.objects_.find(key_);
    if (it == owner_.objects_.end()) owner_.fail(ENOENT, "object removed while being read", nullptr);
    if (bytes) std::memcpy(data, it->second.data() + offset, bytes);
  }

 private:
  MemoryBackend& owner_;
  Key key_;
  std::uint64_t size_;
};

std::unique_ptr<ObjectWriter> MemoryBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  auto block = allocate_slot(size);
  if (!block) fail(ENOSPC, "the memory tier's budget has no room for the object", &ref);
  return std::make_unique<SlotWriter>(*this, Key{ref.space, ref.id, ref.generation}, std::move(*block), size);
}

std::unique_ptr<ObjectReader> MemoryBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  std::lock_guard lock(mu_);
  auto it = objects_.find({ref.space, ref.id, ref.generation});
  if (it == objects_.end()) fail(ENOENT, "no such object", &ref);
  if (it->second.capacity() < size) fail(EIO, "object is shorter than the record", &ref);
  return std::make_unique<SlotReader>(*this, it->first, size);
}

void MemoryBackend::do_remove(const ObjectRef& ref) {
  std::lock_guard lock(mu_);
  if (auto it = objects_.find({ref.space, ref.id, ref.generation}); it != objects_.end()) {
    pool_.release(std::move(it->second));
    objects_.erase(it);
    sync_used();
  }
}

void MemoryBackend::do_remove_space(const std::string& space) noexcept {
  std::lock_guard lock(mu_);
  for (auto it = objects_.begin(); it != objects_.end();) {
    if (std::get<0>(it->first) != space) {
      ++it;
      continue;
    }
    pool_.release(std::move(it->second));
    it = objects_.erase(it);
  }
  sync_used();
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> MemoryBackend::do_list(const std::string& space) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& [key, block] : objects_)
    if (std::get<0>(key) == space) out.emplace_back(std::get<1>(key), std::get<2>(key));
  return out;
}

}  // namespace mlbs::tiers
