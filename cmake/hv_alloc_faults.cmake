# HV_ALLOC_FAULTS: allocation-failure injection for tests (issue 27, tests/faults/
# alloc_faults.c). Every library and program linked with hv_project_options is linked
# with -Wl,--wrap for the allocation functions hv calls (nm -u of libhvcoll, the
# trainer, kernels and workload libraries: malloc, calloc, realloc, posix_memalign,
# strdup; aligned_alloc and strndup for good measure), so hv's own allocations, and only
# those, go through libhv_alloc_faults.so, which fails the K-th one when HV_FAIL_ALLOC=K.
# --wrap rewrites references at each final link, so static libraries are covered in the
# executables that link them and libhvcoll.so in its own link; the __wrap_* symbols
# live in the one shared library, so libhvcoll.so exports nothing new and the count is
# one per process. The ASan build of CI turns it on (tools/setup.sh); without
# HV_FAIL_ALLOC the wrappers only count.
option(HV_ALLOC_FAULTS "Link hv with the allocation-failure injector (tests; HV_FAIL_ALLOC=K)" OFF)
if(HV_ALLOC_FAULTS)
  if(HV_SIMGRID)
    message(FATAL_ERROR "HV_ALLOC_FAULTS is for native builds, not HV_SIMGRID")
  endif()
  add_library(hv_alloc_faults SHARED ${PROJECT_SOURCE_DIR}/tests/faults/alloc_faults.c)
  target_compile_options(hv_alloc_faults PRIVATE -Wall -Wextra $<$<BOOL:${HV_WERROR}>:-Werror>)
  target_link_libraries(hv_alloc_faults PRIVATE ${CMAKE_DL_LIBS})
  set(_hv_wrapped malloc calloc realloc posix_memalign aligned_alloc strdup strndup)
  list(TRANSFORM _hv_wrapped PREPEND "LINKER:--wrap=")
  target_link_options(hv_project_options INTERFACE ${_hv_wrapped})
  # BUILD_INTERFACE: hv_project_options is exported; the injector never is.
  target_link_libraries(hv_project_options INTERFACE $<BUILD_INTERFACE:hv_alloc_faults>)
  # An installed tree of such a build (the install and Slurm tests install it) needs the
  # injector beside libhvcoll, where the installed programs' RPATH looks.
  install(TARGETS hv_alloc_faults LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
