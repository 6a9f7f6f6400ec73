#include "tiers/backend.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>

#include <fmt/format.h>

#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/layout.hpp"

namespace mlbs::tiers {

Backend::Backend(int index, Tier desc)
    : index_(index),
      desc_(std::move(desc)),
      label_(fmt::format("tier {} ({}{}{})", index, desc_.kind, desc_.path.empty() ? "" : " ",
                         desc_.path)) {}

void Backend::fail(int err, const std::string& what, const ObjectRef* ref) const {
  ErrorContext ctx{ref ? ref->store : std::string{}, {}, label_};
  if (ref) ctx.id = ref->id;
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      throw DeviceFullError(err, what, std::move(ctx));
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
      throw TierError(err, what, std::move(ctx));
    default:
      throw IoError(err, what, std::move(ctx));
  }
}

// ============================================================================
// accounting: the public layer wraps each object stream in a counting one
// ============================================================================

class Backend::CountingWriter final : public ObjectWriter {
 public:
  CountingWriter(Backend& owner, std::unique_ptr<ObjectWriter> inner) : owner_(owner), inner_(std::move(inner)) {}
  ~CountingWriter() override {
    inner_.reset();  // an uncommitted object is removed while the tier still counts as busy
    owner_.end_busy(bytes_, true, committed_, failed_);
  }
  void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    counted(bytes, [&] { inner_->write(offset, data, bytes); });
  }
  void write_held(std::uint64_t offset, const std::byte* data, std::size_t bytes) override {
    counted(bytes, [&] { inner_->write_held(offset, data, bytes); });
  }
  void commit(bool durable) override {
    try {
      inner_->commit(durable);
    } catch (...) {
      failed_ = true;
      throw;
    }
    committed_ = true;
  }

 private:
  template <class Write>
  void counted(std::size_t bytes, Write&& write) {
    try {
      write();
    } catch (...) {
      failed_ = true;
      throw;
    }
    bytes_ += bytes;
  }

  Backend& owner_;
  std::unique_ptr<ObjectWriter> inner_;
  std::uint64_t bytes_ = 0;
  bool committed_ = false, failed_ = false;
};

class Backend::CountingReader final : public ObjectReader {
 public:
  CountingReader(Backend& owner, std::unique_ptr<ObjectReader> inner, std::uint64_t size)
      : owner_(owner), inner_(std::move(inner)), size_(size) {}
  ~CountingReader() override {
    inner_.reset();
    owner_.end_busy(bytes_, false, !failed_ && bytes_ >= size_, failed_);
  }
  void read(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    counted(bytes, [&] { inner_->read(offset, data, bytes); });
  }
  void read_held(std::uint64_t offset, std::byte* data, std::size_t bytes) override {
    counted(bytes, [&] { inner_->read_held(offset, data, bytes); });
  }
  void wait_held() override {
    counted(0, [&] { inner_->wait_held(); });
  }

 private:
  template <class Read>
  void counted(std::size_t bytes, Read&& read) {
    try {
      read();
    } catch (...) {
      failed_ = true;
      throw;
    }
    bytes_ += bytes;
  }

  Backend& owner_;
  std::unique_ptr<ObjectReader> inner_;
  std::uint64_t size_;
  std::uint64_t bytes_ = 0;
  bool failed_ = false;
};

template <class F>
auto Backend::while_busy(bool in, F&& operation) {
  begin_busy();
  try {
    return operation();
  } catch (...) {
    end_busy(0, in, false, true);
    throw;
  }
}

std::unique_ptr<ObjectWriter> Backend::create(const ObjectRef& ref, std::uint64_t size) {
  auto inner = while_busy(true, [&] { return do_create(ref, size); });
  return std::make_unique<CountingWriter>(*this, std::move(inner));  // ends the busy interval when destroyed
}

std::unique_ptr<ObjectReader> Backend::open(const ObjectRef& ref, std::uint64_t size) {
  auto inner = while_busy(false, [&] { return do_open(ref, size); });
  return std::make_unique<CountingReader>(*this, std::move(inner), size);
}

void Backend::remove(const ObjectRef& ref) {
  while_busy(false, [&] { do_remove(ref); });
  end_busy(0, false, false, false);
}

void Backend::begin_busy() {
  std::lock_guard lock(acct_mu_);
  if (active_++ == 0) active_since_ = Clock::now();
}

void Backend::end_busy(std::uint64_t bytes, bool in, bool whole, bool failed) {
  std::lock_guard lock(acct_mu_);
  (in ? usage_.bytes_in : usage_.bytes_out) += bytes;
  if (whole) ++(in ? usage_.ops_in : usage_.ops_out);
  if (failed) ++usage_.errors;
  // Busy time is the union of the intervals with something in flight, not
  // the sum of their lengths: concurrent helpers must not count twice.
  if (--active_ == 0)
    usage_.busy_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - active_since_).count());
}

bool Backend::reserve(std::uint64_t bytes) {
  if (!do_reserve(bytes)) return false;
  adopt(bytes);
  return true;
}

void Backend::adopt(std::uint64_t bytes) {
  std::lock_guard lock(acct_mu_);
  usage_.used_bytes += bytes;
  usage_.peak_used_bytes = std::max(usage_.peak_used_bytes, usage_.used_bytes);
}

void Backend::release(std::uint64_t bytes) {
  {
    std::lock_guard lock(acct_mu_);
    usage_.used_bytes -= std::min(bytes, usage_.used_bytes);
  }
  do_release(bytes);
}

void Backend::set_used(std::uint64_t bytes) {
  std::lock_guard lock(acct_mu_);
  usage_.used_bytes = bytes;
  usage_.peak_used_bytes = std::max(usage_.peak_used_bytes, bytes);
}

std::uint64_t Backend::used() const {
  std::lock_guard lock(acct_mu_);
  return usage_.used_bytes;
}

Usage Backend::usage() const {
  std::lock_guard lock(acct_mu_);
  Usage u = usage_;
  if (active_) u.busy_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - active_since_).count());
  return u;
}

void Backend::count_error() {
  std::lock_guard lock(acct_mu_);
  ++usage_.errors;
}

void Backend::count_transfer(bool in, std::uint64_t bytes) {
  std::lock_guard lock(acct_mu_);
  (in ? usage_.bytes_in : usage_.bytes_out) += bytes;
  ++(in ? usage_.ops_in : usage_.ops_out);
}

std::uint64_t Backend::do_room() const { return std::numeric_limits<std::uint64_t>::max(); }

std::vector<std::pair<std::uint64_t, std::uint64_t>> Backend::do_list(const std::string& space) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const std::filesystem::path& p : list_stored_objects(space_path(space)))
    if (const auto name = parse_object_file_name(p.filename().string())) out.push_back(*name);
  return out;
}

}  // namespace mlbs::tiers
