# The CTest run of the fuzzer (tests/fuzz/CMakeLists.txt: the test fuzz.smart_array, the preset
# fuzz): fuzzes for $FUZZ_SECONDS (default 60) on the host backend, from the corpus in
# tests/fuzz/corpus, which is only read; new inputs go to WORK, emptied first. Inputs of up to
# 1 KiB (about 200 operations) from the start (-len_control=0), and 60 s per input, so that a
# deadlock is a finding too. $FUZZ_ARGS adds libFuzzer flags. A divergence from the model, a
# sanitizer report, a leak or a hang saves the input under ARTIFACTS and fails the test, with the
# report's first lines; libFuzzer's whole output is in LOG. Ends with libFuzzer's run count and the
# target's own totals.
#   cmake -DFUZZER=<binary> -DCORPUS=<seeds> -DWORK=<folder> -DARTIFACTS=<folder/> -DLOG=<file>
#         -P run_fuzzer.cmake
cmake_minimum_required(VERSION 3.22)
set(seconds 60)
if(DEFINED ENV{FUZZ_SECONDS})
  set(seconds $ENV{FUZZ_SECONDS})
endif()
separate_arguments(extra UNIX_COMMAND "$ENV{FUZZ_ARGS}")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${ARTIFACTS})
execute_process(COMMAND ${FUZZER} ${WORK} ${CORPUS} -max_total_time=${seconds} -max_len=1024
    -len_control=0 -timeout=60 -rss_limit_mb=4096 -artifact_prefix=${ARTIFACTS}
    -print_final_stats=1 ${extra}
  RESULT_VARIABLE rc OUTPUT_FILE ${LOG} ERROR_FILE ${LOG})
file(READ ${LOG} text)

if(NOT rc EQUAL 0)
  # The first report, from the start of its line, 200 lines at most.
  set(first -1)
  foreach(pattern "divergence from the model" "ERROR: " "runtime error:" "ALARM" "deadly signal")
    string(FIND "${text}" "${pattern}" at)
    if(at GREATER -1 AND (first EQUAL -1 OR at LESS first))
      set(first ${at})
    endif()
  endforeach()
  if(first GREATER -1)
    string(SUBSTRING "${text}" 0 ${first} before)
    string(FIND "${before}" "\n" start REVERSE)
    math(EXPR start "${start} + 1")
    string(SUBSTRING "${text}" ${start} -1 rest)
    set(excerpt "")
    foreach(line RANGE 1 200)
      string(FIND "${rest}" "\n" end)
      if(end EQUAL -1)
        string(APPEND excerpt "${rest}")
        break()
      endif()
      math(EXPR end "${end} + 1")
      string(SUBSTRING "${rest}" 0 ${end} part)
      string(APPEND excerpt "${part}")
      string(SUBSTRING "${rest}" ${end} -1 rest)
    endforeach()
    message("${excerpt}")
  endif()
endif()

message("==== fuzz (host backend, ${seconds} s) ====")
if(text MATCHES "\n(Done [0-9]+ runs[^\n]*)")
  message("${CMAKE_MATCH_1}")
else()
  message("fuzz: libFuzzer did not finish (exit ${rc})")
endif()
if(text MATCHES "\n(fuzz_smart_array: [^\n]*)")
  message("${CMAKE_MATCH_1}")
endif()
message("fuzz: exit ${rc}; log ${LOG}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz: failed; the input is under ${ARTIFACTS} (replay: ${FUZZER} <input>)")
endif()
