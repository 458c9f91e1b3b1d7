# Compiler warnings (errors under HV_WERROR) and sanitizer flags, applied to every
# target of the project through hv_project_options(). Build features reach the code as
# -D flags of the targets (HV_SVM_CUDA=0/1, HV_TRAINER_CUDA, HV_HAVE_DNNL, ...), tested
# with #if; -Wundef makes a misspelt or missing one an error instead of a silent 0.
add_library(hv_project_options INTERFACE)
# POSIX.1-2008 (strdup, clock_gettime, nanosleep...) on top of strict C11.
target_compile_definitions(hv_project_options INTERFACE _DEFAULT_SOURCE _POSIX_C_SOURCE=200809L)
# HV_SIMULATED: 1 in the SimGrid build (cmake/hv_simgrid.cmake), where ranks are
# simulated processes: no background thread, no shared memory, MPI's own waits.
if(HV_SIMGRID)
  target_compile_definitions(hv_project_options INTERFACE HV_SIMULATED=1)
else()
  target_compile_definitions(hv_project_options INTERFACE HV_SIMULATED=0)
endif()
target_compile_options(hv_project_options INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                          -Wno-unused-parameter -Wformat=2 -Wvla -Wundef>)
if(HV_WERROR)
  target_compile_options(hv_project_options INTERFACE $<$<COMPILE_LANGUAGE:C>:-Werror>
                         $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
# HV_FUZZ: tests/fuzz links its targets with -fsanitize=fuzzer; everything they call is
# built with the fuzzer's coverage hooks (fuzzer-no-link) plus ASan and UBSan, through
# the same HV_SANITIZE path as the sanitizer builds. libFuzzer exists in clang only.
if(HV_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HV_FUZZ needs clang (libFuzzer): configure with CC=clang "
                        "(Debian: clang and libclang-rt-14-dev, tools/deps/fuzz.txt)")
  endif()
  if(NOT HV_BUILD_TESTS)
    message(FATAL_ERROR "HV_FUZZ builds tests/fuzz: it needs HV_BUILD_TESTS=ON")
  endif()
  if(HV_SANITIZE AND NOT HV_SANITIZE STREQUAL "address,undefined")
    message(FATAL_ERROR "HV_FUZZ uses address,undefined; HV_SANITIZE=${HV_SANITIZE} conflicts")
  endif()
  set(HV_SANITIZE "fuzzer-no-link,address,undefined")
endif()
if(HV_SANITIZE)
  target_compile_options(hv_project_options INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-fsanitize=${HV_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(hv_project_options INTERFACE -fsanitize=${HV_SANITIZE})
endif()
# hv_project_options is linked PRIVATE everywhere; it must still be exportable.
install(TARGETS hv_project_options EXPORT hvTargets)
