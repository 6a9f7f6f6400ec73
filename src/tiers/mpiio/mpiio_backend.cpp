#include "tiers/mpiio/mpiio_backend.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "mpi/group.hpp"
#include "tiers/directory/directory_backend.hpp"
#include "tiers/mpiio/agent.hpp"
#include "tiers/mpiio/space_index.hpp"
#include "tiers/tier_folder.hpp"

namespace mlbs::tiers {
namespace fs = std::filesystem;
using mpiio::Agent;
using mpiio::Extent;
using mpiio::IndexEntry;
using mpiio::SpaceIndex;
using mpiio::Transfer;

namespace {

constexpr char kMagic[8] = {'M', 'L', 'B', 'S', 'M', 'P', 'I', 'O'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kHeaderBytes = mpiio::kAlign;  // records start after it
constexpr const char* kPersistentFile = "records.mpiio";
constexpr const char* kScratchSuffix = ".scratch.mpiio";
constexpr const char* kIndexFile = "mpiio.index";

/// The first bytes of the shared file (the rest of the 4 KiB are zero).
struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t ranks;
};

/// What rank 0 found preparing the file, for every rank to act on alike.
struct Outcome {
  int err = 0;
  std::string what;
};

class MpiioBackend final : public Backend {
 public:
  MpiioBackend(int index, const Tier& desc, const core::Group* group)
      : Backend(index, desc), group_(dynamic_cast<const mpi::MpiGroup*>(group)), root_(normalised_tier_path(desc.path)) {}
  ~MpiioBackend() override {
    // Collective: every rank destroys its runtime (docs/mpiio.md, "Limits").
    if (agent_) do_shutdown();
    // A probe that failed part-way leaves these (and rank 0's lock) open.
    if (fd_ >= 0) ::close(fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  /// Runs a transfer in a round; a failure becomes the tier's typed error.
  void run(Transfer& t, const ObjectRef& ref) {
    if (!agent_) fail(ESHUTDOWN, "the mpiio tier is not open (probe() was not called or shutdown() was)", &ref);
    agent_->run(t);
    if (t.error) fail(t.error, fmt::format("{} ({})", t.what, data_path_.string()), &ref);
  }
  void committed(const ObjectRef& ref, const IndexEntry& entry, bool durable) {
    SpaceIndex& index = space(ref);
    if (int err = index.put(entry, durable))
      fail(err, fmt::format("cannot record the extent in {}", (root_ / ref.space / kIndexFile).string()), &ref);
  }
  /// Gives an extent's blocks back to the file system where it can (so
  /// quotas count live bytes); the file keeps its size. Best effort.
  void punch(const Extent& extent) noexcept {
    if (fd_ >= 0 && extent.allocated)
      ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(extent.offset),
                  static_cast<off_t>(extent.allocated));
  }
  SpaceIndex& space(const ObjectRef& ref) {
    std::lock_guard lock(mu_);
    auto it = spaces_.find(ref.space);
    if (it == spaces_.end()) fail(ENOENT, fmt::format("space {} was not created", ref.space), &ref);
    return *it->second;
  }

 private:
  void do_probe() override;
  void do_create_space(const std::string& space) override;
  void do_remove_space(const std::string& space) noexcept override;
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  void do_remove(const ObjectRef& ref) override;
  std::string do_space_path(const std::string& space) const override { return (root_ / space).string(); }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> do_list(const std::string& space) const override;
  IoPath do_io_path() const override { return {"mpiio (collective)", {}}; }
  void do_shutdown() noexcept override;

  bool persistent() const noexcept { return durability() == Durability::persistent; }
  /// Rank 0's share of probe(): the folder, the lock, the header.
  Outcome prepare(std::uint64_t& file_end);
  void remove_abandoned_scratch() noexcept;
  /// Collective: throws the same TierError on every rank when any rank failed.
  void agree(const Outcome& mine);

  const mpi::MpiGroup* group_;
  fs::path root_;
  fs::path data_path_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_File file_ = MPI_FILE_NULL;
  int fd_ = -1;       ///< POSIX view of the shared file (page cache, holes)
  int lock_fd_ = -1;  ///< rank 0: keeps a second job off the persistent file
  std::unique_ptr<Agent> agent_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<SpaceIndex>> spaces_;
};

class MpiioWriter final : public ObjectWriter {
 public:
  MpiioWriter(MpiioBackend& tier, const ObjectRef& ref, std::uint64_t size)
      : tier_(tier), space_(ref.space), store_(ref.store), id_(ref.id), generation_(ref.generation), size_(size) {}
  ~MpiioWriter() override {
    if (!committed_) tier_.punch(extent_);  // never indexed: nobody will read it
  }
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    if (offset > size_ || bytes > size_ - offset) {
      const ObjectRef r = ref();
      tier_.fail(EINVAL, fmt::format("write of {} bytes at {} past the record's {} bytes", bytes, offset, size_), &r);
    }
    // The whole record is placed at its first write: contiguous however it is chunked.
    Transfer t;
    t.kind = Transfer::Kind::write;
    t.extent = &extent_;
    t.allocate = mpiio::align_up(size_);
    t.offset = offset;
    t.data = const_cast<std::byte*>(data);  // only read from: MPI's buffer argument of a write is const
    t.bytes = bytes;
    tier_.run(t, ref());
  }
  void commit(bool durable) override {
    if (durable) {
      Transfer t;
      t.kind = Transfer::Kind::sync;
      tier_.run(t, ref());  // data first, then the index entry that names it
    }
    tier_.committed(ref(), {id_, generation_, size_, extent_}, durable);
    committed_ = true;
  }

 private:
  ObjectRef ref() const { return {space_, id_, generation_, store_}; }
  MpiioBackend& tier_;
  std::string space_, store_;
  std::uint64_t id_, generation_, size_;
  Extent extent_;
  bool committed_ = false;
};

class MpiioReader final : public ObjectReader {
 public:
  MpiioReader(MpiioBackend& tier, const ObjectRef& ref, const IndexEntry& entry)
      : tier_(tier), space_(ref.space), store_(ref.store), entry_(entry) {}
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    if (offset > entry_.size || bytes > entry_.size - offset) {
      const ObjectRef r = ref();
      tier_.fail(EIO, fmt::format("read of {} bytes at {} past the record's {} bytes", bytes, offset, entry_.size), &r);
    }
    Transfer t;
    t.kind = Transfer::Kind::read;
    t.extent = &entry_.extent;
    t.offset = offset;
    t.data = data;
    t.bytes = bytes;
    tier_.run(t, ref());
  }

 private:
  ObjectRef ref() const { return {space_, entry_.id, entry_.generation, store_}; }
  MpiioBackend& tier_;
  std::string space_, store_;
  IndexEntry entry_;
};

void MpiioBackend::agree(const Outcome& mine) {
  // The lowest failing rank's reason, broadcast: all ranks throw the same.
  int failing = mine.err ? group_->rank() : group_->size(), first = 0;
  mpi::check(MPI_Allreduce(&failing, &first, 1, MPI_INT, MPI_MIN, group_->comm()), "MPI_Allreduce");
  if (first == group_->size()) return;
  Outcome out = mine;
  int len = static_cast<int>(out.what.size());
  int head[2] = {out.err, len};
  mpi::check(MPI_Bcast(head, 2, MPI_INT, first, group_->comm()), "MPI_Bcast");
  out.err = head[0];
  out.what.resize(static_cast<std::size_t>(head[1]));
  mpi::check(MPI_Bcast(out.what.data(), head[1], MPI_CHAR, first, group_->comm()), "MPI_Bcast");
  if (first != group_->rank()) out.what += fmt::format(" (on rank {})", first);
  throw TierError(out.err, out.what, {{}, {}, label()});
}

void MpiioBackend::remove_abandoned_scratch() noexcept {
  // A scratch file rank 0 of a live job holds flock()ed; one we can lock was
  // left by a job that died. Shared tiers are left alone: flock() need not
  // be coherent across nodes.
  if (desc().shared) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= std::strlen(kScratchSuffix) || !name.ends_with(kScratchSuffix)) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(e.path().c_str()) == 0)
      std::fprintf(stderr, "mlbs: %s: removed %s, left by a job that died\n", label().c_str(), name.c_str());
    ::close(fd);
  }
}

Outcome MpiioBackend::prepare(std::uint64_t& file_end) {
  if (const FolderProblem problem = prepare_tier_folder(root_)) return {problem.err, problem.what};
  const std::uint32_t ranks = static_cast<std::uint32_t>(group_->size());
  int fd;
  if (persistent()) {
    // One job at a time on a persistent file: a second would place extents
    // over the first one's.
    const fs::path lock = root_ / (std::string(kPersistentFile) + ".lock");
    lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) return {errno, fmt::format("cannot open {}", lock.string())};
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
      return {EBUSY, fmt::format("{} is in use by another job (its lock {} is held)", data_path_.string(),
                                 lock.string())};
    fd = ::open(data_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  } else {
    remove_abandoned_scratch();
    // Created and locked under another name, then renamed: another job's
    // scan for abandoned scratch files never sees it unlocked.
    const fs::path fresh = data_path_.string() + ".new";
    fd = ::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 && (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::rename(fresh.c_str(), data_path_.c_str()) != 0)) {
      const int err = errno;
      ::close(fd);
      ::unlink(fresh.c_str());
      return {err, fmt::format("cannot create {}", data_path_.string())};
    }
  }
  if (fd < 0) return {errno, fmt::format("cannot create {}", data_path_.string())};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return {err, fmt::format("cannot stat {}", data_path_.string())};
  }
  Outcome out;
  if (st.st_size == 0) {
    std::vector<char> block(kHeaderBytes, 0);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kVersion;
    h.ranks = ranks;
    std::memcpy(block.data(), &h, sizeof h);
    if (::pwrite(fd, block.data(), block.size(), 0) != static_cast<ssize_t>(block.size()) || ::fsync(fd) != 0)
      out = {errno ? errno : EIO, fmt::format("cannot write the header of {}", data_path_.string())};
    file_end = kHeaderBytes;
  } else {
    Header h{};
    if (::pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
      out = {EINVAL, fmt::format("{} is not an mlbs mpiio file", data_path_.string())};
    else if (h.version != kVersion)
      out = {EINVAL, fmt::format("{} has format version {}, this mlbs reads {}", data_path_.string(), h.version,
                                 kVersion)};
    else if (h.ranks != ranks)
      out = {EINVAL, fmt::format("{} was written by {} MPI ranks and this run has {}: recover it with {} ranks",
                                 data_path_.string(), h.ranks, ranks, h.ranks)};
    file_end = mpiio::align_up(std::max<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), kHeaderBytes));
  }
  if (!persistent() && !out.err) {
    lock_fd_ = fd;  // locked since its creation, while the job runs: a later job sees it is alive
  } else {
    ::close(fd);
  }
  return out;
}

void MpiioBackend::do_probe() {
  // Consistent on every rank (no collective yet): every rank throws alike.
  if (!group_)
    throw TierError(EINVAL,
                    "the mpiio tier needs MPI: call MPI_Init_thread(MPI_THREAD_MULTIPLE) before creating the Runtime",
                    {{}, {}, label()});
  if (group_->thread_level() < MPI_THREAD_MULTIPLE)
    throw TierError(EINVAL,
                    fmt::format("the mpiio tier needs MPI_THREAD_MULTIPLE (helper threads hand it transfers), "
                                "MPI provides thread level {}: use MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)",
                                group_->thread_level()),
                    {{}, {}, label()});
  if (agent_) return;  // probed already
  // Every rank must name the same file: the job tag is agreed by all.
  data_path_ = root_ / (persistent() ? std::string(kPersistentFile) : group_->job_tag() + kScratchSuffix);
  std::uint64_t file_end = 0;
  Outcome mine;
  if (group_->rank() == 0) mine = prepare(file_end);
  agree(mine);
  mpi::check(MPI_Bcast(&file_end, 1, MPI_UINT64_T, 0, group_->comm()), "MPI_Bcast");

  // The agent's own communicator: its requests and commands match nothing else.
  mpi::check(MPI_Comm_dup(group_->comm(), &comm_), "MPI_Comm_dup");
  Outcome opened;
  if (int rc = MPI_File_open(comm_, data_path_.c_str(), MPI_MODE_RDWR, MPI_INFO_NULL, &file_); rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    opened = {EIO, fmt::format("MPI_File_open of {} failed: {}", data_path_.string(), std::string(text, len))};
    file_ = MPI_FILE_NULL;
  } else if ((fd_ = ::open(data_path_.c_str(), O_RDWR | O_CLOEXEC)) < 0) {
    opened = {errno, fmt::format("cannot open {}", data_path_.string())};
  }
  try {
    agree(opened);
  } catch (...) {
    // A file some ranks opened stays open: closing it is collective and the
    // others would not join.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw;
  }
  agent_ = std::make_unique<Agent>(comm_, file_, fd_, file_end, !desc().page_cache);
}

void MpiioBackend::do_shutdown() noexcept {
  if (!agent_) return;
  if (!mpi::active()) {
    // The application finalized MPI with the runtime alive: the agent sits in
    // an MPI call nobody will answer. Leaked, not joined, so exit does not hang.
    std::fprintf(stderr, "mlbs: %s: MPI was finalized before the Runtime was destroyed\n", label().c_str());
    (void)agent_.release();
    return;
  }
  agent_->stop();  // returns once every rank has stopped: no round runs any more
  agent_.reset();
  if (int rc = MPI_File_close(&file_); rc != MPI_SUCCESS)
    std::fprintf(stderr, "mlbs: %s: MPI_File_close failed (%d)\n", label().c_str(), rc);
  if (!persistent()) {
    // Every rank has closed it before rank 0 deletes it.
    MPI_Barrier(comm_);
    if (group_->rank() == 0) ::unlink(data_path_.c_str());
  }
  MPI_Comm_free(&comm_);
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  fd_ = lock_fd_ = -1;
}

void MpiioBackend::do_create_space(const std::string& space) {
  std::lock_guard lock(mu_);
  if (spaces_.count(space)) return;
  auto index = std::make_unique<SpaceIndex>();
  if (persistent()) {
    // A real folder: the engine keeps the store's LOCK and journal in it,
    // and this rank's index of the shared file beside them.
    const fs::path dir = root_ / space;
    std::error_code ec;
    if (fs::create_directories(dir, ec)) sync_directory(root_);
    if (ec) fail(ec.value(), fmt::format("cannot create {}", dir.string()), nullptr);
    if (int err = index->open(dir / kIndexFile)) fail(err, fmt::format("cannot open {}", (dir / kIndexFile).string()), nullptr);
  }
  spaces_[space] = std::move(index);
}

void MpiioBackend::do_remove_space(const std::string& space) noexcept {
  std::unique_ptr<SpaceIndex> index;
  {
    std::lock_guard lock(mu_);
    auto it = spaces_.find(space);
    if (it == spaces_.end()) return;
    index = std::move(it->second);
    spaces_.erase(it);
  }
  for (const IndexEntry& e : index->entries()) punch(e.extent);
  index.reset();
  if (persistent()) {
    std::error_code ec;
    fs::remove_all(root_ / space, ec);
  }
}

std::unique_ptr<ObjectWriter> MpiioBackend::do_create(const ObjectRef& ref, std::uint64_t size) {
  space(ref);  // exists
  return std::make_unique<MpiioWriter>(*this, ref, size);
}

std::unique_ptr<ObjectReader> MpiioBackend::do_open(const ObjectRef& ref, std::uint64_t size) {
  const auto entry = space(ref).find(ref.id, ref.generation);
  if (!entry) fail(ENOENT, fmt::format("no such record in {}", data_path_.string()), &ref);
  if (entry->size != size)
    fail(EIO, fmt::format("the record has {} bytes in {}, the catalog says {}", entry->size, data_path_.string(), size),
         &ref);
  return std::make_unique<MpiioReader>(*this, ref, *entry);
}

void MpiioBackend::do_remove(const ObjectRef& ref) {
  SpaceIndex* index;
  {
    std::lock_guard lock(mu_);
    auto it = spaces_.find(ref.space);
    if (it == spaces_.end()) return;
    index = it->second.get();
  }
  int err = 0;
  const auto extent = index->erase(ref.id, ref.generation, err);
  if (err) fail(err, fmt::format("cannot record the removal in {}", (root_ / ref.space / kIndexFile).string()), &ref);
  if (extent) punch(*extent);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> MpiioBackend::do_list(const std::string& space) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  if (auto it = spaces_.find(space); it != spaces_.end())
    for (const IndexEntry& e : it->second->entries()) out.emplace_back(e.id, e.generation);
  return out;
}

}  // namespace

std::unique_ptr<Backend> make_mpiio_backend(int index, const Tier& desc, const core::Group* group) {
  return std::make_unique<MpiioBackend>(index, desc, group);
}

}  // namespace mlbs::tiers
