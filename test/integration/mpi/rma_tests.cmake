# The one-sided (RMA) part of the MPI suite: rma_*.c, plain MPI programs registered as CTest
# tests with the labels `mpi` and `rma`. Run only these with
#   ctest --test-dir build -L rma
# They run over Open MPI's `osc swy` (contrib/ompi/osc) by default; -DSWY_MPI_TEST_OSC=rdma,
# pt2pt or ucx runs the same programs over Open MPI's own components instead, to check the
# tests themselves (each with the PML it needs: ob1 + vader for rdma and pt2pt, ucx for ucx).
# Included from CMakeLists.txt in this directory, after the MPI C compiler was found.
#
# What Open MPI 4.1.4's own components (Debian) make of them, at 2 and 4 ranks, so that a
# failure there is not mistaken for a bug in a test (shared windows go to osc sm in all three):
#   pt2pt: matrix (all flavours), ops, contention, flush, edge pass; datatypes crashes (pt2pt
#          segfaults applying derived-datatype accumulates at the target); no range checks.
#   ucx:   matrix create/allocate, ops, datatypes, contention, flush pass; matrix dynamic
#          (a 1 MiB get unfinished after flush_all) and edge (segfault) fail; no range checks.
#   rdma:  flush, edge, errors (create, allocate) pass; matrix (get_accumulate of 8193 longs
#          loses the last one; compare_and_swap on allocated windows segfaults in vader),
#          ops (MPI_LOR) and contention (segfault) fail.
# Each program is therefore checked by at least one of them; rma_errors by rdma only.

set(SWY_MPI_RMA_PROGRAMS rma_matrix rma_ops rma_datatypes rma_contention rma_flush rma_edge
  rma_errors)
foreach(p ${SWY_MPI_RMA_PROGRAMS})
  add_executable(mpi_${p} ${p}.c)
  target_link_libraries(mpi_${p} PRIVATE MPI::MPI_C)
  target_compile_options(mpi_${p} PRIVATE ${SWY_WARNINGS})
  set_target_properties(mpi_${p} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
endforeach()

set(SWY_MPI_TEST_OSC swy CACHE STRING
    "OSC component the one-sided MPI tests run over: swy (needs contrib/ompi/osc), or rdma / pt2pt / ucx to check the tests")
set_property(CACHE SWY_MPI_TEST_OSC PROPERTY STRINGS swy rdma pt2pt ucx)

# Called at the end of the top-level CMakeLists.txt (as swy_mpi_register_tests), once
# contrib/ompi has said whether the components are built.
function(swy_mpi_register_rma_tests programs)
  set(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  # Each list restricts the osc framework to what is under test, so a window the component
  # cannot serve fails instead of quietly going to another one. Open MPI's rdma, pt2pt and
  # ucx decline MPI_Win_allocate_shared, which Open MPI serves with osc sm.
  if(SWY_MPI_TEST_OSC STREQUAL "swy")
    if(NOT SWY_OMPI_FOUND OR NOT TARGET mca_pml_swy OR NOT TARGET mca_osc_swy)
      message(STATUS "MPI one-sided tests skipped: osc swy is not built; "
                     "-DSWY_MPI_TEST_OSC=rdma runs them over Open MPI's osc rdma")
      return()
    endif()
    set(path "${SWY_OMPI_COMPONENT_DIR}:${SWY_MPI_OMPI_PKGLIBDIR}")
    if(SWY_OMPI_MCA_PATH)
      set(path "${SWY_OMPI_MCA_PATH}")
    endif()
    set(args --mca pml swy --mca btl self --mca osc swy --mca mca_base_component_path "${path}")
  elseif(SWY_MPI_TEST_OSC STREQUAL "rdma" OR SWY_MPI_TEST_OSC STREQUAL "pt2pt")
    set(args --mca pml ob1 --mca btl self,vader --mca osc ${SWY_MPI_TEST_OSC},sm)
  elseif(SWY_MPI_TEST_OSC STREQUAL "ucx")
    set(args --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx,sm)
    list(APPEND env UCX_TLS=sm,self)
  else()
    message(FATAL_ERROR "SWY_MPI_TEST_OSC must be swy, rdma, pt2pt or ucx")
  endif()
  if(SWY_WITH_SANITIZERS)
    list(APPEND env ASAN_OPTIONS=detect_leaks=0) # Open MPI does not free everything
  endif()
  message(STATUS "MPI one-sided tests: run over osc ${SWY_MPI_TEST_OSC}")

  # mpi.rma.<name>: `np` ranks of `prog` with the arguments that follow.
  function(swy_mpi_add_rma_test name np prog)
    add_test(NAME mpi.rma.${name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe ${args}
                     $<TARGET_FILE:mpi_${prog}> ${ARGN})
    set_tests_properties(mpi.rma.${name} PROPERTIES LABELS "mpi;rma" TIMEOUT 120
                         PROCESSORS ${np} ENVIRONMENT "${env}")
  endfunction()

  # One entry per flavour for the matrix (every mode x op x size inside), one per program for
  # the rest; each at 2, 4 and 8 ranks.
  foreach(np 2 4 8)
    foreach(flavour create allocate shared dynamic)
      swy_mpi_add_rma_test(matrix.${flavour}.${np} ${np} rma_matrix ${flavour})
    endforeach()
    foreach(prog ${programs})
      if(prog STREQUAL "rma_matrix" OR prog STREQUAL "rma_errors")
        continue()
      endif()
      string(REPLACE "rma_" "" short ${prog})
      swy_mpi_add_rma_test(${short}.${np} ${np} ${prog})
    endforeach()
    # Out-of-window access must fail cleanly. Open MPI's pt2pt and ucx do not check ranges at
    # all (they write out of bounds); rdma checks them except across the end of a dynamic
    # window's region, and leaves shared windows to osc sm, which does not check.
    if(SWY_MPI_TEST_OSC STREQUAL "swy")
      swy_mpi_add_rma_test(errors.${np} ${np} rma_errors)
    elseif(SWY_MPI_TEST_OSC STREQUAL "rdma")
      swy_mpi_add_rma_test(errors.${np} ${np} rma_errors create allocate)
    endif()
  endforeach()
endfunction()

cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY \"${CMAKE_SOURCE_DIR}\"
                                         CALL swy_mpi_register_rma_tests \"${SWY_MPI_RMA_PROGRAMS}\")")
