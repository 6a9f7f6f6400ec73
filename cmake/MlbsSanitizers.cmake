# MLBS_SANITIZE=thread|address applies to every target of the build, so the
# library and the tests are instrumented alike. -g1: line tables, all a
# sanitizer's report needs, without the full debug information that took a
# fifth of each compile (the debug preset is the one for a debugger); these
# builds are most of the test command's time.
if(MLBS_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -g1 -O1)
  add_link_options(-fsanitize=thread)
elseif(MLBS_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g1 -O1)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT MLBS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "MLBS_SANITIZE must be '', 'thread' or 'address', not '${MLBS_SANITIZE}'")
endif()

# MLBS_BUILD_FUZZERS: libFuzzer with ASan + UBSan, clang only. Every target is
# instrumented for coverage (fuzzer-no-link) so the fuzzers see the library's
# branches; only the fuzz targets link libFuzzer itself (fuzz/CMakeLists.txt).
if(MLBS_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MLBS_BUILD_FUZZERS needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "use 'cmake --preset fuzz' or CC=clang CXX=clang++ (scripts/setup.sh --fuzz installs them)")
  endif()
  if(NOT MLBS_SANITIZE STREQUAL "")
    message(FATAL_ERROR "MLBS_BUILD_FUZZERS brings its own sanitizers (address, undefined): leave MLBS_SANITIZE empty")
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
  check_cxx_source_compiles(
    "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
    MLBS_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT MLBS_HAVE_LIBFUZZER)
    message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer: the libFuzzer runtime is missing "
                        "(Debian: libclang-rt-dev; scripts/setup.sh --fuzz installs it)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined -g -O1)
  add_link_options(-fsanitize=address,undefined)
endif()
