# MLBS_SANITIZE=thread|address applies to every target of the build, so the
# library and the tests are instrumented alike.
if(MLBS_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -g -O1)
  add_link_options(-fsanitize=thread)
elseif(MLBS_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g -O1)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT MLBS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "MLBS_SANITIZE must be '', 'thread' or 'address', not '${MLBS_SANITIZE}'")
endif()
