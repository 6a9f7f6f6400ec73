// mlbs — one error model: every failure is an mlbs::Error carrying errno and
// the store, record id and tier it concerns (DESIGN §3, §6).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "mlbs/export.h"

namespace mlbs {

/// Where an error happened. Empty fields are simply not printed.
struct ErrorContext {
  std::string store;                  ///< store name
  std::optional<std::uint64_t> id;    ///< record id
  std::string tier;                   ///< tier label, e.g. "tier 1 (directory /nvme/run)"
};

/// Base of every mlbs exception. what() reads
/// "mlbs: <message> [store 'u', id 7, tier 1 (directory /x)]: <strerror(errno)>".
class MLBS_API Error : public std::runtime_error {
 public:
  Error(int errno_value, std::string message, ErrorContext ctx = {});
  int error_code() const noexcept { return errno_; }   ///< positive errno value
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return ctx_; }

 protected:
  /// For errors whose what() is not "<message>: <strerror>" (ConfigError).
  Error(int errno_value, std::string what, std::string message, ErrorContext ctx);

 private:
  int errno_;
  std::string message_;
  ErrorContext ctx_;
};

/// A configuration value is invalid: names the field and, for files, the line.
class MLBS_API ConfigError : public Error {
 public:
  ConfigError(std::string field, std::string message, std::string source = {},
              std::uint32_t line = 0);
  const std::string& field() const noexcept { return field_; }
  const std::string& source() const noexcept { return source_; }   ///< file or variable
  std::uint32_t line() const noexcept { return line_; }            ///< 0 = unknown

 private:
  std::string field_;
  std::string source_;
  std::uint32_t line_;
};

/// An argument is malformed (bad store name, element count overflow, ...). EINVAL.
class MLBS_API InvalidArgumentError : public Error { public: using Error::Error; };
/// read/erase/info of an id the store does not hold. ENOENT.
class MLBS_API UnknownIdError : public Error { public: using Error::Error; };
/// write of an id the store already holds (erase it first). EEXIST.
class MLBS_API DuplicateIdError : public Error { public: using Error::Error; };
/// A record's byte size does not fit the element type or its catalog entry. EMSGSIZE.
class MLBS_API SizeMismatchError : public Error { public: using Error::Error; };
/// A tier cannot be used: path missing, not a directory, not writable. ENOENT/EACCES/ENOTDIR.
class MLBS_API TierError : public Error { public: using Error::Error; };
/// No tier quota can hold the record, now or after the schedule frees space. ENOSPC.
class MLBS_API CapacityError : public Error { public: using Error::Error; };
/// The device under a tier reported ENOSPC/EDQUOT.
class MLBS_API DeviceFullError : public Error { public: using Error::Error; };
/// Any other I/O failure (EIO, ...), with the failing errno.
class MLBS_API IoError : public Error { public: using Error::Error; };
/// Bytes read back do not match their checksum. EBADMSG.
class MLBS_API CorruptionError : public Error { public: using Error::Error; };
/// A persistent store is open in another runtime or process. EBUSY.
class MLBS_API StoreBusyError : public Error { public: using Error::Error; };
/// The runtime is stopped or its helper engine failed. ESHUTDOWN.
class MLBS_API ShutdownError : public Error { public: using Error::Error; };
/// An MPI call failed, or MPI is not in the state a call needs (not
/// initialized, too low a thread level); the message names the MPI call.
class MLBS_API MpiError : public Error { public: using Error::Error; };

}  // namespace mlbs
