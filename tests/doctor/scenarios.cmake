# The doctor scenarios (issue 22): doctor_worker produces each hang of the issue on real
# ranks (a rank stuck in user code, a skipped tensor, one name with two shapes, ordered
# calls in different orders, a stopped, slow, dead rank, an early hv_shutdown, a node
# cut off), and scenario_*.sh check that `hvrun --status` during the hang and
# `hvrun --analyze` on the dumps afterwards name the right rank(s), tensor(s) and cause.
# Each scenario is one test, label 'doctor'; under mpirun, some also through hvrun, and
# the node cut off on the emulated cluster (root, network namespaces: label 'cluster',
# skipped with 77 otherwise). A few seconds each (HV_STALL_* and HV_TIMEOUT small).
add_executable(doctor_worker doctor_worker.c)
target_link_libraries(doctor_worker PRIVATE hvcoll hvworkload_common MPI::MPI_C hv_project_options)
target_include_directories(doctor_worker PRIVATE ${PROJECT_SOURCE_DIR}/collectives)
# The ordered (GPU-style) calls on host buffers need the engine's test entry
# hv_bench_ordered_call (hv_internal_bench.h); without it the scenario is skipped.
file(STRINGS ${PROJECT_SOURCE_DIR}/collectives/hv_internal_bench.h _doctor_ordered REGEX "hv_bench_ordered_call")
if(_doctor_ordered)
  target_compile_definitions(doctor_worker PRIVATE HV_DOCTOR_HAVE_ORDERED=1)
endif()

# They read the verdicts of hvrun --status / --analyze, which need jansson (without it
# doctor.no_jansson checks hvrun says so); the straggler report's test needs neither.
if(JANSSON_FOUND)
  set(_doctor_mpirun ${HV_MPIEXEC} ${HV_MPIRUN_FLAGS} -np 4)
  set(_doctor_hvrun $<TARGET_FILE:hvrun> -np 4)
  set(_doctor_env "${HV_TEST_ENV}" "HVRUN=$<TARGET_FILE:hvrun>" "DOCTOR_WORKER=$<TARGET_FILE:doctor_worker>"
      HV_TIMEOUT=60 FAULTS_TIMEOUT=100)
  # doctor_scenario(NAME SCRIPT LAUNCH...): tests doctor.NAME running scenario_SCRIPT.sh
  function(doctor_scenario name script)
    add_test(NAME doctor.${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scenario_${script}.sh ${ARGN})
    set_tests_properties(doctor.${name} PROPERTIES TIMEOUT 120 LABELS "mpi;doctor" PROCESSORS 4
                         SKIP_RETURN_CODE 77 ENVIRONMENT "${_doctor_env}")
  endfunction()
  doctor_scenario(stuck.mpirun stuck ${_doctor_mpirun})
  doctor_scenario(stuck.hvrun stuck ${_doctor_hvrun})
  doctor_scenario(skip.mpirun skip ${_doctor_mpirun})
  doctor_scenario(shape.mpirun shape ${_doctor_mpirun})
  doctor_scenario(ordered.mpirun ordered ${_doctor_mpirun})
  doctor_scenario(stop.mpirun stop ${_doctor_mpirun})
  doctor_scenario(slow.mpirun slow ${_doctor_mpirun})
  doctor_scenario(dead.mpirun dead ${_doctor_mpirun})
  doctor_scenario(dead.hvrun dead ${_doctor_hvrun})
  doctor_scenario(shutdown.mpirun shutdown ${_doctor_mpirun})
  # stop: the stall reports (2 s) write the others' dumps; HV_TIMEOUT stays above the stop.
  set_tests_properties(doctor.stop.mpirun PROPERTIES ENVIRONMENT "${_doctor_env};HV_STALL_CHECK_TIME=2")
  # dead: the survivors linger in user code for `hvrun --status`; without this mpirun
  # kills them as soon as the victim dies.
  set_tests_properties(doctor.dead.mpirun doctor.dead.hvrun PROPERTIES ENVIRONMENT
                       "${_doctor_env};OMPI_MCA_orte_abort_on_non_zero_status=0")

  # On the emulated cluster (root, network namespaces HV_NS=hvd; scenario_cluster.sh): a
  # node cut off (mpirun), a rank stuck on the other node (hvrun); and under 'slow' the
  # rest of the pairs, label slow only (the label doctor stays within about 3 minutes).
  foreach(case_how netdown.mpirun stuck.hvrun netdown.hvrun stuck.mpirun dead.mpirun dead.hvrun)
    string(REPLACE "." ";" _parts ${case_how})
    list(GET _parts 0 _case)
    list(GET _parts 1 _how)
    add_test(NAME doctor.cluster.${case_how}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scenario_cluster.sh ${CMAKE_BINARY_DIR} ${_case} ${_how})
    set(_labels "doctor;cluster;netns")
    if(NOT case_how MATCHES "^(netdown.mpirun|stuck.hvrun)$")
      set(_labels "cluster;netns;slow")
    endif()
    set_tests_properties(doctor.cluster.${case_how} PROPERTIES TIMEOUT 180 LABELS "${_labels}" PROCESSORS 4
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK hv_netns_doctor ENVIRONMENT "${_doctor_env}")
  endforeach()
endif()

# The straggler report changes no result (cifar_ddp, mnist_svm, mnist_nn, 2 ranks).
string(REPLACE ";" " " _doctor_mpirun_line "${HV_MPIEXEC};${HV_MPIRUN_FLAGS}")
add_test(NAME doctor.straggler_equivalence COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/straggler_equiv.sh)
set_tests_properties(doctor.straggler_equivalence PROPERTIES TIMEOUT 180 LABELS "mpi;doctor" PROCESSORS 2
  ENVIRONMENT "${HV_TEST_ENV};CIFAR_DDP=$<TARGET_FILE:cifar_ddp>;MAKE_TINY=$<TARGET_FILE:make_tiny_cifar>;MNIST_SVM=$<TARGET_FILE:mnist_svm>;MNIST_NN=$<TARGET_FILE:mnist_nn>;DOCTOR_WORKER=$<TARGET_FILE:doctor_worker>;MPIRUN=${_doctor_mpirun_line}")
