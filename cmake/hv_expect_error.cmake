# hv_expect_error.cmake: runs CMD (a ;-list) and passes only when it exits non-zero and
# prints exactly one error line on stderr matching REGEX (a clear message, not a crash
# trace). Used by the workloads' bad-input tests:
#   cmake -DCMD=<exe>;<args> -DREGEX=<regex> -P cmake/hv_expect_error.cmake
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
string(STRIP "${err}" err)
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "expected an exit status, got '${rc}' (crash or timeout)\nstderr: ${err}")
endif()
if(NOT err MATCHES "${REGEX}")
  message(FATAL_ERROR "stderr does not match '${REGEX}':\n${err}")
endif()
string(REGEX MATCHALL "\n" lines "${err}")
list(LENGTH lines nl)
if(nl GREATER 0)
  message(FATAL_ERROR "expected one error line, got ${nl} more:\n${err}")
endif()
message(STATUS "exit ${rc}: ${err}")
