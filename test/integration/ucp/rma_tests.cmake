# The one-sided half of the UCP library's tests (label `ucp`; included by CMakeLists.txt here,
# whose swy_ucp_add_test asserts every rank's SWY_UCP_VERBOSE line):
#   - MPICH (ch4:ucx) running the MPI suite's one-sided programs (test/integration/mpi/rma_*.c)
#     twice: with ucp_mem_map supported (MPI RMA on ucp_put/get) and with SWY_UCP_MEM_MAP=0
#     (ucp_mem_map refused: MPICH runs MPI RMA over ucp_am_send_nb);
#   - Open MPI's `osc ucx` (over `pml ucx`) running the same programs;
#   - OpenSHMEM (Open MPI's `spml ucx`) running contrib/ucp/test/shmem_rma.c.
#
# What MPICH 4.0.2 and Open MPI 4.1.4 themselves make of these programs (over real UCX, so that
# a failure is not mistaken for one of the library): MPICH passes every program but
# rma_contention (a fetch_and_op counter fetched twice) and has no range checks (rma_errors);
# osc ucx fails matrix dynamic and rma_edge (see mpi/rma_tests.cmake). Over the library
# matrix dynamic passes (so it is tested) and rma_edge fails cleanly with an error instead of
# a segfault (a put through a key of no memory: osc ucx's own bug, so not tested); oshmem's fetching
# bitwise atomics and 32-bit compare_swap overrun its stack (shmem_rma.c leaves them out).

set(rma_progs rma_matrix rma_ops rma_datatypes rma_flush rma_edge)

# ---- The UCP calls themselves (two forked processes; contrib/ucp/test/ucp_rma_test.c) -------
# Not through swy_ucp_add_test: the program provokes the library's error lines on purpose
# (bad keys, ranges, flags); it checks every status itself. run_check.cmake still asserts both
# processes' SWY_UCP_VERBOSE line.
add_executable(ucp_rma_test ${CMAKE_SOURCE_DIR}/contrib/ucp/test/ucp_rma_test.c)
target_link_libraries(ucp_rma_test PRIVATE swy_ucp swy_ucs)
target_include_directories(ucp_rma_test SYSTEM PRIVATE ${SWY_UCX_INCLUDE_DIR})
target_compile_options(ucp_rma_test PRIVATE ${SWY_WARNINGS})
set_target_properties(ucp_rma_test PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
foreach(variant shm tcp)
  set(env SWY_UCP_VERBOSE=1)
  if(variant STREQUAL "tcp")
    list(APPEND env SWY_TLS=tcp,self UCP_RMA_TEST_TCP=1)
  endif()
  add_test(NAME ucp.rma_calls.${variant}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:ucp_rma_test>" -DNP=2 -P ${check})
  set_tests_properties(ucp.rma_calls.${variant} PROPERTIES LABELS ucp TIMEOUT 60 PROCESSORS 2
                       ENVIRONMENT "${env}")
endforeach()

# ---- MPICH --------------------------------------------------------------------------------
if(SWY_MPICC_MPICH AND SWY_MPIRUN_MPICH)
  set(outs)
  foreach(p ${rma_progs})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/mpich_${p})
    # No -Werror: MPICH's MPI_STATUSES_IGNORE trips gcc's -Wstringop-overflow in MPI_Waitall.
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${SWY_MPICC_MPICH} -O2 -std=gnu11 -Wall -o ${out} ${mpi_src}/${p}.c
      DEPENDS ${mpi_src}/${p}.c ${mpi_src}/mpitest.h ${mpi_src}/rmatest.h
      COMMENT "mpicc.mpich ${p}.c")
    list(APPEND outs ${out})
  endforeach()
  add_custom_target(swy_ucp_mpich_rma_programs ALL DEPENDS ${outs})
  set(run ${SWY_MPIRUN_MPICH})
  set(d ${CMAKE_CURRENT_BINARY_DIR})

  # mode "map": ucp_mem_map supported; "am": refused (SWY_UCP_MEM_MAP=0). Every program at 2
  # ranks; at 4 the ones whose traffic differs most between the two paths.
  foreach(mode map am)
    set(env)
    if(mode STREQUAL "am")
      set(env SWY_UCP_MEM_MAP=0)
    endif()
    foreach(flavour create allocate shared dynamic)
      swy_ucp_add_test(mpich.rma.${mode}.matrix.${flavour}.2 2
                       CMD ${run} -np 2 ${d}/mpich_rma_matrix ${flavour} ENV ${env})
    endforeach()
    foreach(p ops datatypes flush edge)
      swy_ucp_add_test(mpich.rma.${mode}.${p}.2 2 CMD ${run} -np 2 ${d}/mpich_rma_${p} ENV ${env})
    endforeach()
    foreach(flavour create dynamic)
      swy_ucp_add_test(mpich.rma.${mode}.matrix.${flavour}.4 4
                       CMD ${run} -np 4 ${d}/mpich_rma_matrix ${flavour} ENV ${env})
    endforeach()
    foreach(p ops flush edge)
      swy_ucp_add_test(mpich.rma.${mode}.${p}.4 4 CMD ${run} -np 4 ${d}/mpich_rma_${p} ENV ${env})
    endforeach()
  endforeach()
  # Eight ranks on the paths with the most traffic between them.
  swy_ucp_add_test(mpich.rma.map.matrix.allocate.8 8
                   CMD ${run} -np 8 ${d}/mpich_rma_matrix allocate)
  swy_ucp_add_test(mpich.rma.am.flush.8 8 CMD ${run} -np 8 ${d}/mpich_rma_flush
                   ENV SWY_UCP_MEM_MAP=0)
endif()

# ---- Open MPI osc ucx -----------------------------------------------------------------------
if(TARGET mpi_rma_matrix AND MPIEXEC_EXECUTABLE)
  set(run ${MPIEXEC_EXECUTABLE} --oversubscribe --mca pml ucx --mca btl self --mca osc ucx,sm)
  set(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  foreach(flavour create allocate dynamic)
    swy_ucp_add_test(ompi.osc.matrix.${flavour}.2 2
                     CMD ${run} -np 2 $<TARGET_FILE:mpi_rma_matrix> ${flavour} ENV ${env})
  endforeach()
  foreach(p ops datatypes contention flush)
    swy_ucp_add_test(ompi.osc.${p}.2 2 CMD ${run} -np 2 $<TARGET_FILE:mpi_rma_${p}> ENV ${env})
  endforeach()
  swy_ucp_add_test(ompi.osc.matrix.allocate.4 4
                   CMD ${run} -np 4 $<TARGET_FILE:mpi_rma_matrix> allocate ENV ${env})
  foreach(p contention flush)
    swy_ucp_add_test(ompi.osc.${p}.4 4 CMD ${run} -np 4 $<TARGET_FILE:mpi_rma_${p}> ENV ${env})
  endforeach()
endif()

# ---- OpenSHMEM spml ucx ---------------------------------------------------------------------
find_program(SWY_OSHCC oshcc)
find_program(SWY_OSHRUN oshrun)
if(SWY_OSHCC AND SWY_OSHRUN)
  set(src ${CMAKE_SOURCE_DIR}/contrib/ucp/test/shmem_rma.c)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/shmem_rma)
  add_custom_command(OUTPUT ${out}
                     COMMAND ${SWY_OSHCC} -O2 -std=gnu11 -Wall -Wextra -Werror -o ${out} ${src}
                     DEPENDS ${src} COMMENT "oshcc shmem_rma.c")
  add_custom_target(swy_ucp_shmem_rma ALL DEPENDS ${out})
  set(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  # osc rdma is left out: at finalize it frees memory through a release hook that a UCX
  # component registered and whose library is already unloaded (SIGSEGV at exit over real UCX
  # as well, even for a program that only calls shmem_init and shmem_finalize).
  foreach(np 2 4)
    swy_ucp_add_test(shmem.rma.${np} ${np}
                     CMD ${SWY_OSHRUN} --oversubscribe -np ${np} --mca spml ucx --mca osc ^rdma
                         ${out} ENV ${env})
  endforeach()
else()
  message(STATUS "ucp tests: OpenSHMEM (oshcc, oshrun) not found; OpenSHMEM part skipped")
endif()
