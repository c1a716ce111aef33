# Runs rewind-plan with ARGS (a |-separated list) and checks its exit status (RC, a number)
# and that its combined output matches REGEX; the run must end within SECONDS (default 20).
# Usage:
#   cmake -DPLAN=/path/to/rewind-plan "-DARGS=--steps|10" -DRC=2 "-DREGEX=..." -P check_exit.cmake
if(NOT DEFINED SECONDS)
  set(SECONDS 20)
endif()
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" " " shown "${ARGS}")
execute_process(COMMAND ${PLAN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT ${SECONDS})
set(all "${out}${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "rewind-plan ${shown}: expected exit status ${RC} within ${SECONDS} s, got "
                      "'${rc}'\n${all}")
endif()
if(DEFINED REGEX AND NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "rewind-plan ${shown}: output does not match '${REGEX}':\n${all}")
endif()
message(STATUS "rewind-plan ${shown}: exit ${rc}\n${all}")
