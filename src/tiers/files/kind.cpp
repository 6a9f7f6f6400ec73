// The files tier: an intercepted folder's files as the program named them,
// the last tier of mlbs-run's transparent mode (docs/transparent.md). Its
// backend lives in the interposition library (src/intercept/), which
// registers it; a program linked with mlbs that names this kind is told so.
#include "tiers/kinds.hpp"

namespace mlbs::tiers {

TierKind files_tier_kind() {
  TierKind kind;
  kind.name = "files";
  kind.spellings = {"files"};
  kind.noun = "the files tier";
  // The program's own files: where every record ends, durable by itself.
  kind.place = TierKind::Place::last;
  kind.has_path = true;
  kind.keys = {"path", "bandwidth"};
  // A record's copy there is the byte range of the program's file it
  // stands for: that file, not a journal, is what a later run finds.
  kind.journaled = false;
  // Configured by mlbs-run only: not offered where kinds are listed.
  kind.listed = false;
  kind.make = [](std::string path, std::uint64_t capacity) {
    Tier tier = Tier::directory(std::move(path), capacity);
    tier.kind = "files";
    return tier;
  };
  return kind;
}

}  // namespace mlbs::tiers
