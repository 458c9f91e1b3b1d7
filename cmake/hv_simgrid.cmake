# The simulated build (-DHV_SIMGRID=ON, configured with CC=smpicc): hv's algorithms
# and engine, and hvbench, compiled against SimGrid's SMPI, so that every rank runs
# as a simulated process on a simulated platform (smpirun; tools/sim/hvsim drives it).
# The engine runs threadless (collectives/engine/engine_threadless.c), without
# shared memory or the node-local fault watcher (fault_simulated.c), and waits with
# MPI's own calls (algo/wait_mpi.c). Nothing else of the project is built here: the
# trainer, topology and GPU code are not what a network simulation measures.
get_filename_component(_hv_cc_name "${CMAKE_C_COMPILER}" NAME)
if(NOT _hv_cc_name MATCHES "smpicc")
  message(FATAL_ERROR "HV_SIMGRID=ON compiles with SimGrid's wrapper: "
                      "CC=smpicc cmake -S . -B build-sim -DHV_SIMGRID=ON (Debian: libsimgrid-dev)")
endif()
set(HV_ENABLE_CUDA OFF)
set(HV_ENABLE_NCCL OFF)
find_package(Threads REQUIRED)
# smpicc brings SMPI's mpi.h and library itself: MPI is an empty target here.
add_library(MPI::MPI_C INTERFACE IMPORTED)
include(${PROJECT_SOURCE_DIR}/cmake/hv_warnings.cmake)
add_subdirectory(workloads/common)
add_subdirectory(collectives)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_subdirectory(tools/hvbench)
# Every algorithm alone with exact values (tests/algo), run by the sim tests.
add_executable(algo_test ${PROJECT_SOURCE_DIR}/tests/algo/algo_test.c)
target_include_directories(algo_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/collectives ${PROJECT_SOURCE_DIR}/tests/common)
target_link_libraries(algo_test PRIVATE hvalgo Threads::Threads hv_project_options)
# The negotiation rounds at scale (tools/sim/negotiation_sim.c).
add_executable(negotiation_sim ${PROJECT_SOURCE_DIR}/tools/sim/negotiation_sim.c)
target_link_libraries(negotiation_sim PRIVATE hvcoll hv_project_options)
message(STATUS "hv ${PROJECT_VERSION}: simulated build (SimGrid SMPI, ${CMAKE_C_COMPILER})")
