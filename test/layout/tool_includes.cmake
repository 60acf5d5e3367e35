cmake_minimum_required(VERSION 3.16)
# Tools see the library through its public headers (switchyard/*) and the one introspection
# header (src/introspect/introspect.h) only, so what they depend on is listed in one place.
# A tool's own headers (no directory in the name) are fine. Run: cmake -DROOT=<repo> -P this.
file(GLOB_RECURSE sources ${ROOT}/tools/*.cpp ${ROOT}/tools/*.h)
set(bad "")
foreach(f ${sources})
  file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][a-z_]+/")
  foreach(line ${includes})
    string(REGEX MATCH "[\"<]([^\">]+)[\">]" _ "${line}")
    set(path "${CMAKE_MATCH_1}")
    if(path STREQUAL "introspect/introspect.h" OR path MATCHES "^switchyard/")
      continue()
    endif()
    if(EXISTS ${ROOT}/src/${path})  # an internal header (system headers are not in src/)
      file(RELATIVE_PATH rel ${ROOT} ${f})
      string(APPEND bad "\n  ${rel}: #include ${path}")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "tools include internal headers (use introspect/introspect.h, and add "
                      "what is missing there with a line saying why):${bad}")
endif()
