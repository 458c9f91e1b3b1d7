# Compiler warnings (errors under HV_WERROR) and sanitizer flags, applied to every
# target of the project through hv_project_options().
add_library(hv_project_options INTERFACE)
# POSIX.1-2008 (strdup, clock_gettime, nanosleep...) on top of strict C11.
target_compile_definitions(hv_project_options INTERFACE _DEFAULT_SOURCE _POSIX_C_SOURCE=200809L)
target_compile_options(hv_project_options INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                          -Wno-unused-parameter -Wformat=2 -Wvla>)
if(HV_WERROR)
  target_compile_options(hv_project_options INTERFACE $<$<COMPILE_LANGUAGE:C>:-Werror>
                         $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
if(HV_SANITIZE)
  target_compile_options(hv_project_options INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-fsanitize=${HV_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(hv_project_options INTERFACE -fsanitize=${HV_SANITIZE})
endif()
# hv_project_options is linked PRIVATE everywhere; it must still be exportable.
install(TARGETS hv_project_options EXPORT hvTargets)
