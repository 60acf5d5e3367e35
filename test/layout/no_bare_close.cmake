cmake_minimum_required(VERSION 3.16)
# Descriptors the library owns are held by common::UniqueFd, so no error path leaks one and
# none is closed twice. A bare close() is allowed only where listed below, with its reason.
# Run: cmake -DROOT=<repo> -P this.
set(allowed
  src/common/unique_fd.h                # the one place that closes
  src/common/cost_figures.cpp        # checks close() when writing the calibration file
)
file(GLOB_RECURSE sources ${ROOT}/src/*.cpp ${ROOT}/src/*.h)
set(bad "")
foreach(f ${sources})
  file(RELATIVE_PATH rel ${ROOT} ${f})
  if(rel IN_LIST allowed)
    continue()
  endif()
  # close( as a call of its own: not fclose, dlclose, finish_close, x.close() or a declaration.
  file(STRINGS ${f} hits REGEX "(^|[^A-Za-z0-9_.>])(::)?close[ \t]*\\(")
  foreach(line ${hits})
    if(line MATCHES "void[ \t]+close[ \t]*\\(")
      continue()
    endif()
    string(STRIP "${line}" line)
    string(APPEND bad "\n  ${rel}: ${line}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "bare close() (hold the descriptor in common::UniqueFd):${bad}")
endif()
