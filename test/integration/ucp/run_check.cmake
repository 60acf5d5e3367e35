# Runs one MPI job over the UCP shim and checks that it passed AND really ran on Switchyard:
#   cmake -DCMD="a^^b^^c" -DNP=<ranks> [-DFORBID=<regex>] -P run_check.cmake
# The exit status must be 0 and at least NP processes must have printed the SWY_UCP_VERBOSE
# line ("... running on Switchyard"): a job that quietly loaded the real libucp prints none.
if(NOT CMD OR NOT NP)
  message(FATAL_ERROR "run_check.cmake needs -DCMD=... and -DNP=...")
endif()
string(REPLACE "^^" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "command exited with ${rc}")
endif()
string(REGEX MATCHALL "ucp\\(switchyard\\): pid [0-9]+ on [^\n]* running on Switchyard" lines
       "${all}")
list(LENGTH lines n)
if(n LESS NP)
  message(FATAL_ERROR "${n} of ${NP} processes said they ran on Switchyard (SWY_UCP_VERBOSE)")
endif()
if(FORBID AND all MATCHES "${FORBID}")
  message(FATAL_ERROR "output matches the forbidden '${FORBID}'")
endif()
