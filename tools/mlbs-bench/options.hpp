// mlbs-bench — the command line, parsed into plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mlbs/config.hpp>

namespace mlbs_bench {

enum class Workload { micro, rtm, writeonly, readafterwrite, insitu };
enum class ReadOrder { lifo, fifo };

std::string to_string(Workload w);
std::optional<Workload> parse_workload(const std::string& name);

/// A directory tier given on the command line: --fast DIR:QUOTA, --slow DIR.
struct DirTier {
  std::string path;
  std::uint64_t quota_bytes = 0;          ///< 0 = unlimited
  std::uint64_t bandwidth_bytes_per_s = 0;  ///< 0 = uncapped
};

struct Options {
  std::vector<Workload> workloads{Workload::micro};
  std::vector<std::string> modes;         ///< as given, validated, without duplicates
  std::uint64_t grid_bytes = 16ull << 20;
  unsigned steps = 64;                    ///< per phase
  std::vector<unsigned> io_ratios{2};     ///< --io-ratio, or the --sweep-io-ratio list
  unsigned repeat = 1;                    ///< runs of every (workload, mode, io_ratio), interleaved
  ReadOrder order = ReadOrder::lifo;      ///< micro's backward phase
  bool compute = true;                    ///< --compute none: no kernel
  std::uint64_t dram_bytes = 64ull << 20;
  std::optional<DirTier> fast;
  DirTier slow;
  /// Tier::kind of the mlbs modes' slow tier (--slow-kind): "directory", or
  /// "mpiio" (one shared file, collective MPI-IO) where the library has it.
  /// The baselines write files in the slow dir whatever the kind.
  std::string slow_kind = "directory";
  unsigned helper_threads = 2;
  /// --helper-core: the mlbs modes' Config::helper_core (-1 auto, -2 none, or a core).
  int helper_core = -1;
  mlbs::Durability durability = mlbs::Durability::scratch;
  mlbs::Layout layout = mlbs::Layout::file_per_record;  ///< mlbs's directory tiers (--layout)
  /// The mlbs modes' Config::reader_retention (--reader-retention): what the
  /// insitu workload's writer keeps for its reader, alone and with it.
  mlbs::ReaderRetention reader_retention = mlbs::ReaderRetention::none;
  /// --hint-records: the mlbs modes' schedule carries the snapshot count
  /// (Schedule::lifo(N), "lifo:N"; with --order fifo Schedule::fifo(N)), as an RTM
  /// code that knows its time steps can.
  bool hint_records = false;
  /// --no-copy-ahead: the mlbs modes' Config::copy_ahead off.
  bool no_copy_ahead = false;
  /// --codec: the mlbs mode's Config::codec (docs/codecs.md); "none" by default.
  std::string codec = "none";
  /// --codec-when: the mlbs mode's Config::codec_when.
  mlbs::CodecWhen codec_when = mlbs::CodecWhen::needed;
  /// --codec-layout: what the mlbs mode's store tells its codec of the grid
  /// (StoreOptions::plane_nx/ny): ZFP codes rows in 2-D, planes in 3-D, flat
  /// records in 1-D. Rows by default: docs/codecs.md, "Layout".
  enum class CodecLayout : std::uint8_t { flat, rows, planes };
  CodecLayout codec_layout = CodecLayout::rows;
  /// The codec is lossy (ZFP): the mlbs mode's snapshots come back close, not
  /// equal; rtm reports image_rel_l2_error against an exact mode's image.
  bool lossy() const { return codec.rfind("zfp", 0) == 0; }
  std::uint64_t io_chunk_bytes = 8ull << 20;  ///< largest single pread/pwrite of the baselines
  std::string out_dir = "./mlbs-bench-out";
  std::string json_path;
  std::string trace_path;
  int threads = 0;                        ///< OpenMP threads; 0 = OpenMP's default
  bool quiet = false;
};

}  // namespace mlbs_bench
