# Runs a command and checks both its exit status and its output, which CTest's
# PASS_REGULAR_EXPRESSION alone cannot do (it ignores the exit status).
#   cmake -DCMD="a^^b^^c" -DEXPECT=<regex> [-DFORBID=<regex>] -P check_output.cmake
# Used to prove which PML Open MPI selected: `--mca pml_base_verbose 10` makes every rank
# print "select: component <name> selected".
if(NOT CMD OR NOT EXPECT)
  message(FATAL_ERROR "check_output.cmake needs -DCMD=... and -DEXPECT=...")
endif()
string(REPLACE "^^" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "command exited with ${rc}")
endif()
if(NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match '${EXPECT}'")
endif()
if(FORBID AND all MATCHES "${FORBID}")
  message(FATAL_ERROR "output matches the forbidden '${FORBID}'")
endif()
