# Test helpers shared by every tests/ folder.
#   hv_add_mpi_test(NAME <name> NP <n> COMMAND <exe> [args...] [TIMEOUT s] [LABELS ...])
# runs the command under the real Open MPI mpirun with n ranks (oversubscribed, as
# CI has 2 cores), under a timeout so a hang fails the test instead of CI.
find_program(HV_MPIEXEC NAMES mpirun mpiexec REQUIRED)
set(HV_MPIRUN_FLAGS --oversubscribe --bind-to none --mca btl self,vader,tcp
    --mca btl_vader_single_copy_mechanism none CACHE STRING "Flags for mpirun in tests")
# Open MPI refuses to run as root unless told; CI runs as root.
set(HV_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1 PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe)

function(hv_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_NAME}
    COMMAND timeout --signal=KILL ${T_TIMEOUT} ${HV_MPIEXEC} ${HV_MPIRUN_FLAGS} -np ${T_NP} ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "mpi;${T_LABELS}"
    ENVIRONMENT "${HV_TEST_ENV};${T_ENVIRONMENT}" PROCESSORS ${T_NP})
endfunction()
