#include "tiers/transfer.hpp"

#include <algorithm>

#include "catalog/checksum.hpp"

namespace mlbs::tiers {

std::uint64_t transfer(const Source& from, const Sink& to, std::uint64_t size, detail::Block* staging, bool hash) {
  catalog::Checksummer sum;
  if (from.memory && to.writer && !to.memory) {
    // DRAM to a tier: the bytes are hashed while the device writes them (the
    // caller's commit() waits for the last requests).
    if (size > 0) to.writer->write_held(0, from.memory, size);
    if (hash) sum.update(from.memory, size);
    return hash ? sum.digest() : 0;
  }
  const bool whole = from.memory || to.memory;
  const std::uint64_t chunk = whole ? std::max<std::uint64_t>(size, 1) : staging->capacity();
  for (std::uint64_t off = 0; off < size; off += chunk) {
    const std::size_t n = static_cast<std::size_t>(std::min(chunk, size - off));
    const std::byte* bytes;
    if (from.memory) {
      bytes = from.memory + off;
    } else {
      std::byte* into = to.memory ? to.memory + off : staging->data();
      from.reader->read(off, into, n);
      bytes = into;
    }
    if (hash) sum.update(bytes, n);
    if (to.writer) to.writer->write(off, bytes, n);
  }
  return hash ? sum.digest() : 0;
}

}  // namespace mlbs::tiers
