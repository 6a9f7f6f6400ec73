// mlbs-bench — mode adios2: ADIOS2 as an external peer, built against the
// PyPI wheel (tools/CMakeLists.txt). The BP5 engine with AsyncWrite: EndStep
// hands a step's buffers to ADIOS2's own writer thread and returns, so the
// application computes while they go to disk — the same promise mlbs makes.
// Each snapshot is one step of one variable; reading opens the file for
// random access (any step, any order). ADIOS2 has no DRAM budget: it buffers
// every step until its writer thread has written it.
//
// Honesty as in sync: before the first read the file is closed (its writes
// finished), every file of it fdatasync'ed and dropped from the page cache,
// so reads come from the device; the time counts as the application's.
// Under --slow-bw the device is paced by the baselines' rule (pacer.hpp):
// each step reserves its time on the device's clock when EndStep hands it
// over (ADIOS2's thread writes behind, so nothing waits then), and closing
// the file completes no earlier than the last step's reservation; a read
// completes no earlier than its own.
#include "adios2_mode.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <adios2.h>

#include <mlbs/trace.hpp>

#include "pacer.hpp"

namespace mlbs_bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// fdatasync + POSIX_FADV_DONTNEED on every file under `dir`, then the folder:
/// what is read next comes from the device, as in mode sync.
void sync_and_drop(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + e.path().string());
    const bool ok = ::fdatasync(fd) == 0;
    const int err = errno;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (!ok) throw std::system_error(err, std::generic_category(), "fdatasync failed on " + e.path().string());
  }
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

class Adios2Mode final : public Mode {
 public:
  Adios2Mode(const Plan& plan, const Options& o, const fs::path& dir)
      : points_(plan.dims.points()), bytes_(plan.snapshot_bytes()), path_(dir / "snapshots.bp"),
        async_(std::getenv("MLBS_BENCH_ADIOS2_ASYNC") ? std::getenv("MLBS_BENCH_ADIOS2_ASYNC") : "guided"),
        buf_(std::make_unique_for_overwrite<float[]>(points_)), pacer_(o.slow.bandwidth_bytes_per_s) {
    io_ = adios_.DeclareIO("mlbs-bench");
    io_.SetEngine("BP5");
    // One aggregator, one data file: a single process on one device.
    io_.SetParameters({{"AsyncWrite", async_}, {"NumAggregators", "1"}});
    var_ = io_.DefineVariable<float>("u", {points_}, {0}, {points_}, adios2::ConstantDims);
    report_.name = "slow";
    report_.kind = "adios2";
    report_.path = dir.string();
    report_.io_backend = "ADIOS2 " + std::string(ADIOS2_VERSION_STR) + " BP5, AsyncWrite=" + async_;
    report_.bandwidth_cap_bytes_per_s = o.slow.bandwidth_bytes_per_s;
  }

  float* buffer() override { return buf_.get(); }

  void write(std::uint64_t id) override {
    mlbs::trace::Scope scope("write", "write_block");
    const auto t0 = Clock::now();
    if (reader_) close_reader();
    if (!writer_) {
      // After reads, new steps go on at the end of the same file.
      writer_ = io_.Open(path_.string(), steps_ == 0 ? adios2::Mode::Write : adios2::Mode::Append);
    }
    writer_.BeginStep();
    writer_.Put(var_, buf_.get(), adios2::Mode::Sync);  // copied: the buffer is the application's again
    writer_.EndStep();                                     // AsyncWrite: written behind by ADIOS2's thread
    written_by_ = pacer_.reserve(bytes_);
    step_of_[id] = steps_++;
    report_.bytes_in += bytes_;
    held_ += bytes_;
    report_.peak_used_bytes = std::max(report_.peak_used_bytes, held_);
    write_block_s_ += seconds(Clock::now() - t0);
  }

  void read(std::uint64_t id) override {
    mlbs::trace::Scope scope("read", "read_block");
    const auto t0 = Clock::now();
    const auto at = step_of_.find(id);
    if (at == step_of_.end()) throw std::runtime_error("adios2: snapshot " + std::to_string(id) + " was never written");
    if (writer_) close_writer();
    if (!reader_) {
      reader_io_ = adios_.DeclareIO("mlbs-bench-read-" + std::to_string(reopens_++));
      reader_io_.SetEngine("BP5");
      reader_ = reader_io_.Open(path_.string(), adios2::Mode::ReadRandomAccess);
    }
    adios2::Variable<float> v = reader_io_.InquireVariable<float>("u");
    if (!v) throw std::runtime_error("adios2: variable 'u' not found in " + path_.string());
    v.SetStepSelection({at->second, 1});
    const auto done = pacer_.reserve(bytes_);
    reader_.Get(v, buf_.get(), adios2::Mode::Sync);
    Pacer::wait_until(done);
    report_.bytes_out += bytes_;
    read_block_s_ += seconds(Clock::now() - t0);
  }

  void finish() override {
    const auto t0 = Clock::now();
    if (writer_) close_writer();
    if (reader_) close_reader();
    write_block_s_ += seconds(Clock::now() - t0);
  }

  ModeStats stats() const override {
    ModeStats s;
    s.write_block_s = write_block_s_;
    s.read_block_s = read_block_s_;
    s.tiers = {report_};
    // ADIOS2's writer thread's own time is not visible from here: the device
    // counts as busy while the application waited on it (so the model's
    // observed bandwidth flatters ADIOS2, never mlbs).
    s.tiers[0].busy_s = write_block_s_ + read_block_s_;
    s.extra = {{"adios2_version", ADIOS2_VERSION_STR}, {"engine", "BP5"}, {"async_write", async_},
               {"steps", steps_}, {"close_s", close_s_}};
    return s;
  }

 private:
  /// Waits for the writer thread, then makes the file durable and cold.
  void close_writer() {
    const auto t0 = Clock::now();
    writer_.Close();
    writer_ = adios2::Engine();
    sync_and_drop(path_);
    Pacer::wait_until(written_by_);
    close_s_ += seconds(Clock::now() - t0);
  }
  void close_reader() {
    reader_.Close();
    reader_ = adios2::Engine();
  }

  std::size_t points_;
  std::uint64_t bytes_;
  fs::path path_;
  std::string async_;
  std::unique_ptr<float[]> buf_;  ///< untouched: the workload's first step touches it (workloads.cpp, "alloc")
  Pacer pacer_;
  Pacer::Clock::time_point written_by_{};  ///< the device's clock after the last step
  adios2::ADIOS adios_;
  adios2::IO io_, reader_io_;
  adios2::Variable<float> var_;
  adios2::Engine writer_, reader_;
  std::map<std::uint64_t, std::size_t> step_of_;
  std::size_t steps_ = 0;
  unsigned reopens_ = 0;
  std::uint64_t held_ = 0;
  double write_block_s_ = 0, read_block_s_ = 0, close_s_ = 0;
  TierReport report_;
};

}  // namespace

std::unique_ptr<Mode> make_adios2_mode(const Plan& plan, const Options& o, const fs::path& dir) {
  return std::make_unique<Adios2Mode>(plan, o, dir);
}

}  // namespace mlbs_bench
