// mlbs — what Store<T>'s collectives need from MPI (built with MPI only).
#pragma once

#include <mpi.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "mlbs/export.h"

namespace mlbs::detail {

template <class T>
inline constexpr bool always_false_v = false;

/// The MPI datatype of an element of a Store<T> that reduce/all_reduce accept.
template <class T>
MPI_Datatype mpi_datatype() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, long double>) return MPI_LONG_DOUBLE;
  else if constexpr (std::is_same_v<U, bool>) return MPI_C_BOOL;
  else if constexpr (std::is_same_v<U, char>) return MPI_CHAR;
  else if constexpr (std::is_same_v<U, signed char>) return MPI_SIGNED_CHAR;
  else if constexpr (std::is_same_v<U, unsigned char>) return MPI_UNSIGNED_CHAR;
  else if constexpr (std::is_same_v<U, wchar_t>) return MPI_WCHAR;
  else if constexpr (std::is_same_v<U, short>) return MPI_SHORT;
  else if constexpr (std::is_same_v<U, unsigned short>) return MPI_UNSIGNED_SHORT;
  else if constexpr (std::is_same_v<U, int>) return MPI_INT;
  else if constexpr (std::is_same_v<U, unsigned>) return MPI_UNSIGNED;
  else if constexpr (std::is_same_v<U, long>) return MPI_LONG;
  else if constexpr (std::is_same_v<U, unsigned long>) return MPI_UNSIGNED_LONG;
  else if constexpr (std::is_same_v<U, long long>) return MPI_LONG_LONG;
  else if constexpr (std::is_same_v<U, unsigned long long>) return MPI_UNSIGNED_LONG_LONG;
  else if constexpr (std::is_same_v<U, std::complex<float>>) return MPI_C_FLOAT_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<double>>) return MPI_C_DOUBLE_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<long double>>) return MPI_C_LONG_DOUBLE_COMPLEX;
  else static_assert(always_false_v<T>, "Store<T>::reduce/all_reduce need an arithmetic T or std::complex");
}

/// Element-wise reduction of `count` elements at `data` over `comm`, in place:
/// into root's buffer (all = false) or every rank's (all = true). Checks that
/// every rank passes the same count (InvalidArgumentError naming `store`, on
/// every rank), splits counts beyond INT_MAX, turns MPI failures into MpiError.
MLBS_API void reduce_elements(void* data, std::size_t count, std::size_t elem_bytes, MPI_Datatype type, MPI_Op op,
                     int root, bool all, MPI_Comm comm, const std::string& store);

}  // namespace mlbs::detail
