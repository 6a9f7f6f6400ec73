# Install test driver (cmake -P). Inputs:
#   MLBS_BUILD_DIR  a configured and built mlbs build tree
#   SOURCE_DIR      this folder (the consumer project)
#   WORK_DIR        scratch folder: prefix/, build/ and data/ go here
#   GENERATOR       the CMake generator of the mlbs build
# Steps: install MLBS_BUILD_DIR into WORK_DIR/prefix, configure SOURCE_DIR
# against it with find_package(mlbs), build it, run it. Any failure is fatal.
cmake_minimum_required(VERSION 3.22)

foreach(var MLBS_BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
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
read_cache_entry(CMAKE_BUILD_TYPE build_type)
read_cache_entry(MLBS_SANITIZE sanitize)

set(consumer_args -G "${GENERATOR}" -S ${SOURCE_DIR} -B ${build}
                  -DCMAKE_PREFIX_PATH=${prefix}
                  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(cxx)
  list(APPEND consumer_args -DCMAKE_CXX_COMPILER=${cxx})
endif()
if(build_type)
  list(APPEND consumer_args -DCMAKE_BUILD_TYPE=${build_type})
endif()
if(sanitize STREQUAL "thread")
  list(APPEND consumer_args "-DCMAKE_CXX_FLAGS=-fsanitize=thread"
                            "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread")
elseif(sanitize STREQUAL "address")
  list(APPEND consumer_args "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined"
                            "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
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
step("run the consumer" ${build}/mlbs_install_test ${data})
message(STATUS "install test: passed")
