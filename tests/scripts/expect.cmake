# Runs CMD (a ;-list), then checks its exit status (RC = zero | nonzero | any: not checked) and that its
# combined output matches REGEX (when given) and does not match FORBID (when given).
# Usage: cmake -DRC=nonzero "-DREGEX=..." "-DCMD=a;b;c" -P expect.cmake
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 600)
set(all "${out}${err}")
if(RC STREQUAL "zero" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit status 0, got ${rc}\n${all}")
elseif(RC STREQUAL "nonzero" AND rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit status, got 0\n${all}")
endif()
if(DEFINED REGEX AND NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${all}")
endif()
if(DEFINED FORBID AND all MATCHES "${FORBID}")
  message(FATAL_ERROR "output matches forbidden '${FORBID}':\n${all}")
endif()
message(STATUS "exit ${rc}; output:\n${all}")
