# The accumulate code against hostile messages (osc/test/acc_target_test.c): the target's
# decoder and apply engine, and the origin's reply handling, built into a test program whose Switchyard calls are recorders, so
# every reply can be checked. Included from osc/CMakeLists.txt (needs its _incdirs,
# SWY_OMPI_INTERNAL_INCLUDE_DIR, _ompi_libs, _cas128).
add_executable(osc_swy_acc_target_test
  ${CMAKE_CURRENT_SOURCE_DIR}/osc/test/acc_target_test.c
  ${CMAKE_CURRENT_SOURCE_DIR}/osc/osc_swy_acc_target.c
  ${CMAKE_CURRENT_SOURCE_DIR}/osc/osc_swy_acc_op.c
  ${CMAKE_CURRENT_SOURCE_DIR}/osc/osc_swy_acc_apply.c)
target_include_directories(osc_swy_acc_target_test SYSTEM PRIVATE ${_incdirs}
  ${SWY_OMPI_INTERNAL_INCLUDE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/osc/compat)
target_include_directories(osc_swy_acc_target_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/osc
  $<TARGET_PROPERTY:switchyard,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_options(osc_swy_acc_target_test PRIVATE ${SWY_WARNINGS})
if(_cas128 AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(osc_swy_acc_target_test PRIVATE -mcx16)
endif()
# Open MPI only: the Switchyard calls are the test's own recorders.
target_link_libraries(osc_swy_acc_target_test PRIVATE ${_ompi_libs})
set_target_properties(osc_swy_acc_target_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
# Registered as CTest test mpi.osc_swy_acc_target by test/integration/mpi/CMakeLists.txt
# (this directory is configured before enable_testing()).
