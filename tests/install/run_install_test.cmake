# Install test driver (cmake -P). Inputs:
#   MLBS_BUILD_DIR  a configured and built mlbs build tree
#   SOURCE_DIR      this folder (the consumer project)
#   WORK_DIR        scratch folder: prefix/, build/ and data/ go here
#   GENERATOR       the CMake generator of the mlbs build
#   CAPI_SOURCE     a C program of the C API (tests/capi/test_capi.c)
#   FORTRAN_EXAMPLE a Fortran program using the module (examples/fortran/rtm.f90)
# Steps: install MLBS_BUILD_DIR into WORK_DIR/prefix; configure SOURCE_DIR
# against it with find_package(mlbs), build it, run it against the shared and
# the static library; compile CAPI_SOURCE with `pkg-config --cflags --libs`
# mlbs and mlbs-static and run both; compile FORTRAN_EXAMPLE against the
# installed Fortran module (when built) and run it. Any failure is fatal.
cmake_minimum_required(VERSION 3.22)

foreach(var MLBS_BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CAPI_SOURCE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install test: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
set(data ${WORK_DIR}/data)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR} ${data})

# Settings of the mlbs build the consumer must match: compiler, build type
# and sanitizer (a sanitized static library needs a sanitized link).
function(read_cache_entry name out)
  set(value "")
  if(EXISTS ${MLBS_BUILD_DIR}/CMakeCache.txt)
    file(STRINGS ${MLBS_BUILD_DIR}/CMakeCache.txt lines REGEX "^${name}:[A-Z]+=")
    if(lines)
      list(GET lines 0 line)
      string(REGEX REPLACE "^${name}:[A-Z]+=" "" value "${line}")
    endif()
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()
read_cache_entry(CMAKE_CXX_COMPILER cxx)
read_cache_entry(CMAKE_C_COMPILER cc)
read_cache_entry(CMAKE_BUILD_TYPE build_type)
read_cache_entry(MLBS_SANITIZE sanitize)
read_cache_entry(MLBS_BUILD_SHARED shared)
read_cache_entry(PKG_CONFIG_EXECUTABLE pkg_config)

set(consumer_args -G "${GENERATOR}" -S ${SOURCE_DIR} -B ${build}
                  -DCMAKE_PREFIX_PATH=${prefix}
                  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(cxx)
  list(APPEND consumer_args -DCMAKE_CXX_COMPILER=${cxx})
endif()
if(build_type)
  list(APPEND consumer_args -DCMAKE_BUILD_TYPE=${build_type})
endif()
set(sanitize_flags "")
if(sanitize STREQUAL "thread")
  set(sanitize_flags -fsanitize=thread)
elseif(sanitize STREQUAL "address")
  set(sanitize_flags -fsanitize=address,undefined)
endif()
if(sanitize_flags)
  list(APPEND consumer_args "-DCMAKE_CXX_FLAGS=${sanitize_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags}")
endif()
if(shared)
  list(APPEND consumer_args -DEXPECT_SHARED=ON)
endif()

function(step what)
  message(STATUS "install test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc})")
  endif()
endfunction()

step("install ${MLBS_BUILD_DIR} into ${prefix}"
     ${CMAKE_COMMAND} --install ${MLBS_BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/include/mlbs/mlbs.hpp OR NOT EXISTS ${prefix}/include/mlbs/version.hpp)
  message(FATAL_ERROR "install test: headers missing under ${prefix}/include/mlbs")
endif()

# The shared library exports the public API only: the C functions and the
# classes of include/mlbs, none of the engine's, tiers' or catalog's.
read_cache_entry(CMAKE_NM nm)
if(shared)
  file(GLOB so ${prefix}/lib*/libmlbs.so ${prefix}/lib/*/libmlbs.so)
  execute_process(COMMAND ${nm} -D -C --defined-only ${so} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${nm} -D ${so} failed (${rc})")
  endif()
  foreach(public "mlbs_runtime_create" "mlbs::Runtime::Runtime" "typeinfo for mlbs::CorruptionError")
    string(FIND "${symbols}" "${public}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "install test: ${so} does not export ${public}")
    endif()
  endforeach()
  foreach(internal "mlbs::engine::" "mlbs::tiers::" "mlbs::catalog::" "mlbs::core::")
    string(FIND "${symbols}" "${internal}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "install test: ${so} exports internal symbols (${internal}...)")
    endif()
  endforeach()
endif()

# An MPI build refuses, with its message, a program compiled without MPI's
# flags or against another MPI (a stand-in <mpi.h> of the other family).
file(STRINGS ${prefix}/include/mlbs/features.hpp mpi_line REGEX "^#define MLBS_HAVE_MPI 1")
if(mpi_line)
  file(WRITE ${WORK_DIR}/uses_mlbs.cpp "#include <mlbs/mlbs.hpp>\nint main() {}\n")
  file(STRINGS ${prefix}/include/mlbs/features.hpp open_mpi REGEX "^#define MLBS_MPI_OPEN_MPI 1")
  if(open_mpi)
    file(WRITE ${WORK_DIR}/other-mpi/mpi.h "#pragma once\n#define MPICH_VERSION \"4.0\"\ntypedef int MPI_Comm;\n")
  else()
    file(WRITE ${WORK_DIR}/other-mpi/mpi.h "#pragma once\n#define OPEN_MPI 1\ntypedef int MPI_Comm;\n")
  endif()
  # (Where <mpi.h> is on the compiler's default path, no flags are needed.)
  file(WRITE ${WORK_DIR}/has_mpi.cpp "#include <mpi.h>\n")
  execute_process(COMMAND ${cxx} -fsyntax-only ${WORK_DIR}/has_mpi.cpp RESULT_VARIABLE mpi_on_default_path
                  OUTPUT_QUIET ERROR_QUIET)
  set(cases "against another MPI|-I${WORK_DIR}/other-mpi")
  if(NOT mpi_on_default_path EQUAL 0)
    list(PREPEND cases "without MPI's flags|")
  endif()
  foreach(case IN LISTS cases)
    string(REPLACE "|" ";" case "${case}")
    list(GET case 0 what)
    list(GET case 1 flag)
    execute_process(COMMAND ${cxx} -std=c++20 -fsyntax-only ${flag} -I${prefix}/include ${WORK_DIR}/uses_mlbs.cpp
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(rc EQUAL 0 OR NOT err MATCHES "mlbs was built with")
      message(FATAL_ERROR "install test: a program compiled ${what} was not refused with mlbs's message:\n${err}")
    endif()
    message(STATUS "install test: a program compiled ${what} is refused")
  endforeach()
endif()

step("configure the consumer against ${prefix}" ${CMAKE_COMMAND} ${consumer_args})

# The consumer must have found the installed package, not some other mlbs.
file(STRINGS ${build}/CMakeCache.txt found REGEX "^mlbs_DIR:")
string(REGEX REPLACE "^mlbs_DIR:[A-Z]+=" "" found "${found}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${found}" real_found)
string(FIND "${real_found}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "install test: find_package(mlbs) used '${found}', not the package in ${prefix}")
endif()

step("build the consumer" ${CMAKE_COMMAND} --build ${build})
step("run the consumer (mlbs::mlbs)" ${build}/mlbs_install_test ${data}/cmake)
step("run the consumer (mlbs::mlbs_static)" ${build}/mlbs_install_test_static ${data}/cmake-static)

# Without CMake: a C program with pkg-config's flags, as a makefile would.
file(GLOB pcdirs LIST_DIRECTORIES true ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
list(JOIN pcdirs ":" pcpath)
set(ENV{PKG_CONFIG_PATH} "${pcpath}")
set(packages mlbs-static)
if(shared)
  list(PREPEND packages mlbs)
endif()
foreach(pc IN LISTS packages)
  execute_process(COMMAND ${pkg_config} --cflags --libs ${pc} OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: pkg-config --cflags --libs ${pc} failed (${rc}) with PKG_CONFIG_PATH=${pcpath}")
  endif()
  message(STATUS "install test: pkg-config ${pc}: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  # The shared library is found at run time through the program's rpath, as
  # a module system's LD_LIBRARY_PATH would.
  set(rpath "")
  foreach(f IN LISTS flags)
    if(f MATCHES "^-L(.+)")
      list(APPEND rpath "-Wl,-rpath,${CMAKE_MATCH_1}")
    endif()
  endforeach()
  step("compile the C API test with pkg-config ${pc}"
       ${cc} -std=c11 ${sanitize_flags} ${CAPI_SOURCE} -o ${build}/capi-${pc} ${flags} ${rpath})
  step("run the C API test built with ${pc}" ${build}/capi-${pc} ${data}/${pc})
endforeach()
# Fortran: the installed module and libmlbs_fortran, as a user's build would
# use them (examples/fortran/rtm.f90).
read_cache_entry(CMAKE_Fortran_COMPILER fc)
if(fc AND FORTRAN_EXAMPLE AND EXISTS ${prefix}/include/mlbs/fortran/mlbs.mod)
  file(GLOB fortran_lib ${prefix}/lib*/libmlbs_fortran.a ${prefix}/lib/*/libmlbs_fortran.a)
  get_filename_component(libdir "${fortran_lib}" DIRECTORY)
  set(cxx_runtime "")
  if(NOT shared)
    execute_process(COMMAND ${pkg_config} --libs mlbs-static OUTPUT_VARIABLE cxx_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    separate_arguments(cxx_runtime UNIX_COMMAND "${cxx_runtime}")
  endif()
  step("compile a Fortran program against the installed module"
       ${fc} ${sanitize_flags} ${FORTRAN_EXAMPLE} -o ${build}/fortran-rtm -I${prefix}/include/mlbs/fortran
       -L${libdir} -lmlbs_fortran -lmlbs -Wl,-rpath,${libdir} ${cxx_runtime})
  if(sanitize STREQUAL "address")
    # As for ctest's fortran test: libgfortran's strndup of Fortran strings
    # (no NUL at their end) trips ASan's strict string checks.
    set(ENV{ASAN_OPTIONS} "detect_stack_use_after_return=1")
  endif()
  step("run the Fortran program" ${build}/fortran-rtm ${data}/fortran)
endif()
message(STATUS "install test: passed")
