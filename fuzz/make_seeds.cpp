// Writes the binary seeds of the fuzz corpora with the library itself, so
// they are what mlbs writes: journals (corpus/journal/) and a log index
// (corpus/log_index/). The text seeds of the other corpora are written by
// hand. Run from the repository root after `cmake --build --preset fuzz`:
//   build/fuzz/fuzz/mlbs_fuzz_seeds fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "catalog/journal.hpp"
#include "mlbs/config.hpp"
#include "tiers/registry.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::catalog::Journal;
using mlbs::catalog::JournalEntry;

void write_journals(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path full = dir / "puts_and_erases.mlbs";
  fs::remove(full);
  {
    Journal j(full.string(), 0);
    j.append({JournalEntry::Op::put, 1, 1, 4096, 0x1111});
    j.append({JournalEntry::Op::put, 2, 2, 65536, 0x2222});
    j.append({JournalEntry::Op::erase, 1, 1, 0, 0});
    j.append({JournalEntry::Op::put, 1, 3, 100, 0x3333});
    j.append({JournalEntry::Op::put, 3, 5, 0, 0x4444});
    j.append({JournalEntry::Op::put, 3, 4, 8, 0x5555});  // an older generation journaled late
  }
  const fs::path header = dir / "header_only.mlbs";
  fs::remove(header);
  { Journal j(header.string(), 0); }
  // A torn tail: half of an entry after the valid ones.
  const fs::path torn = dir / "torn_tail.mlbs";
  fs::copy_file(full, torn, fs::copy_options::overwrite_existing);
  fs::resize_file(torn, Journal::kHeaderBytes + 2 * Journal::kEntryBytes + Journal::kEntryBytes / 2);
}

void write_log_index(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path root = fs::temp_directory_path() / ("mlbs-fuzz-seeds-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  {
    mlbs::Tier desc = mlbs::Tier::directory(root.string());
    desc.layout = mlbs::Layout::log;
    desc.io_backend = mlbs::IoBackend::pread;
    auto tier = mlbs::tiers::make_backend(1, desc);
    tier->probe();
    const std::string space = "s.space", store = "s";
    tier->create_space(space);
    const std::vector<std::size_t> sizes = {5000, 1, 4096, 0};
    for (std::size_t id = 0; id < sizes.size(); ++id) {
      std::vector<std::byte> data(sizes[id], std::byte{0x5a});
      auto w = tier->create({space, id, 1, store}, data.size());
      if (!data.empty()) w->write(0, data.data(), data.size());
      w->commit(false);
    }
    tier->remove({space, 1, 1, store});
    fs::copy_file(root / space / "log-0.idx", dir / "puts_and_erase.idx", fs::copy_options::overwrite_existing);
  }
  fs::remove_all(root);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path corpus = argv[1];
  write_journals(corpus / "journal");
  write_log_index(corpus / "log_index");
  std::printf("mlbs_fuzz_seeds: wrote %s/journal and %s/log_index\n", argv[1], argv[1]);
  return 0;
}
