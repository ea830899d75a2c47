# run_and_check.cmake -- runs one command and checks its standard output against patterns:
# the CTest smoke tests of qmdb-bench's printed lines (the artifact's TEST_REPORT names and
# Results summary blocks, the fastest-rival column, rocksdb-blob's blob files, the readers
# beside the writer).
# Owns: those output assertions. Threads: one `cmake -P` process.
# Usage: cmake -DCMD=prog^arg^arg -DEXPECT=pat^N@pat -DLOG=file -P run_and_check.cmake
#   CMD and EXPECT are lists separated by '^'. A pattern "N@regex" must match at least N times,
#   a plain pattern at least once. The output is saved in LOG.
cmake_minimum_required(VERSION 3.20)
string(REPLACE "^" ";" cmd "${CMD}")
execute_process(COMMAND ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(LOG)
  file(WRITE "${LOG}" "${out}")
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "command failed (${rc}): ${CMD}\n${out}\n${err}")
endif()
string(REPLACE "^" ";" pats "${EXPECT}")
foreach(p IN LISTS pats)
  set(want 1)
  if(p MATCHES "^([0-9]+)@(.*)$")
    set(want ${CMAKE_MATCH_1})
    set(p "${CMAKE_MATCH_2}")
  endif()
  string(REGEX MATCHALL "${p}" hits "${out}")
  list(LENGTH hits got)
  if(got LESS want)
    message(FATAL_ERROR "expected ${want} match(es) of '${p}', found ${got}; output in ${LOG}")
  endif()
endforeach()
list(LENGTH pats n_pats)
message(STATUS "all ${n_pats} patterns matched")
