# The one-sided half of the UCP library (contrib/ucp/README.md): memory mapping and remote keys
# (ucp_mem.c), put/get and atomics (ucp_rma.c), active messages (ucp_am.c). Included by
# CMakeLists.txt, which links them into libucp.so.0.
set(SWY_UCP_RMA_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/ucp_mem.c
  ${CMAKE_CURRENT_LIST_DIR}/ucp_rma.c
  ${CMAKE_CURRENT_LIST_DIR}/ucp_am.c)
