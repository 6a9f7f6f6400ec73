// mlbs — directory tier through io_uring + O_DIRECT (compiled only with
// MLBS_ENABLE_IO_URING and liburing; chosen by tiers/directory/io_select).
#pragma once

#include <string>

#include "tiers/directory/directory_backend.hpp"
#include "tiers/uring/depth.hpp"

namespace mlbs::tiers::uring {

/// The directory tier's folders and file names, with record files moved by
/// io_uring requests on O_DIRECT descriptors: no page cache, hence no
/// fdatasync + drop-behind per record (a durable commit still fdatasyncs).
///
/// * Each chunk handed to write()/read() is split into requests of
///   Tier::io_request_bytes with up to requests_in_flight() in flight; a
///   plain call completes its requests before it returns, waiting in
///   io_uring_wait_cqe; a held one (write_held(), read_held()) returns once
///   they are submitted, and the object's next call waits for them.
/// * Rings are per thread (thread_local, created on first use and grown to
///   the largest queue depth asked for): helpers share no submission state,
///   so no lock is needed, and a ring's set-up cost is paid once per thread,
///   not per record.
/// * Alignment: requests go straight to and from buffers at 4096-aligned
///   addresses and offsets (slot-pool extents, staging, Store buffers). The
///   last partial block of a record goes through a 4096-byte bounce block:
///   written zero-padded, then the file is truncated to the record's size;
///   read whole, and only the record's bytes are copied out. Unaligned
///   buffers or offsets go through per-request bounce buffers. A writer
///   whose offsets are not sequential switches that file to buffered I/O.
/// * When created with `required` false (io_backend = auto), a failing ring
///   set-up or a file system that refuses O_DIRECT (probe()) makes it a
///   pread tier, with the reason in io_path().fallback; with `required` the
///   same is a TierError.
class UringDirectoryBackend final : public DirectoryBackend {
 public:
  UringDirectoryBackend(int index, const Tier& desc, bool required);

 private:
  void do_probe() override;
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  IoPath do_io_path() const override;

  /// Falls back to pread (auto) or throws TierError (required).
  void give_up(int err, std::string why);

  bool required_;
  bool direct_ = true;  ///< false: fell back to pread (settled before helpers start)
};

/// 0 if a ring of `entries` can be set up here and supports the read and
/// write opcodes, else the errno (or the one hooks::simulated_uring_failure() fakes).
int setup_error(unsigned entries) noexcept;

}  // namespace mlbs::tiers::uring
