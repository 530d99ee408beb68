# Runs PROGRAM, prints what it wrote, and fails when it did not exit with 0 (an abort included).
#   cmake -DPROGRAM=<path> -P run_program.cmake
execute_process(COMMAND "${PROGRAM}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${PROGRAM}: ${rc}")
endif()
