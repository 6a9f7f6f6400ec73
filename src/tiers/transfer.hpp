// mlbs — the one routine that moves a record's bytes: from a DRAM block or a
// tier's reader, to a DRAM block and/or a tier's writer, hashing what passes.
// Helpers' copies, direct reads and recovery's verification all use it, so
// chunking, staging and checksums are decided in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlbs/detail/block.hpp"
#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// Where the bytes come from: memory (a DRAM slot) or a tier's reader.
struct Source {
  const std::byte* memory = nullptr;
  ObjectReader* reader = nullptr;
};

/// Where they go: memory (a DRAM block), a tier's writer, both (a read into
/// DRAM that also writes a copy), or neither (only hashing, as recovery does).
struct Sink {
  std::byte* memory = nullptr;
  ObjectWriter* writer = nullptr;
};

/// Moves `size` bytes from `from` to `to`. A side in memory is whole, so the
/// record goes in one call (io_uring then keeps its queue depth in flight
/// across the record); between two tiers, or from a tier to nowhere, the
/// bytes pass through `staging` (needed only then), its capacity at a time.
/// Returns the xxHash3 of the bytes when `hash` (else 0). Throws as the
/// reader or writer does. From memory to a writer the bytes may still be in
/// flight when it returns (ObjectWriter::write_held, hashed meanwhile): the
/// memory stays unchanged until the writer's commit() or destruction.
std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash);

}  // namespace mlbs::tiers
