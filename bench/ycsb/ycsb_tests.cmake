# ycsb_tests.cmake -- CTest smoke tests of `qmdb-bench ycsb` (label bench-smoke), included from
# bench/ycsb/CMakeLists.txt inside if(BUILD_TESTING). ycsb_selftest checks the YCSB model (keys,
# properties, distributions; bench/ycsb/ycsb_selftest.c). Workloads A and E at recordcount 2000 /
# operationcount 2000, two runs each on a restored load image; check_ycsb_json.cmake then
# checks the JSON (E is "not applicable" for qmdb and runs for rocksdb and lmdb; every applicable
# engine has per-op-type p50/p99 per run and as medians; zero wrong reads).
# Owns: the ycsb CTest tests and the ycsb_selftest executable; configure-time only (the
# tests run single-threaded).
if(BENCH_HAVE_QMDB)
  set(YCSB_SMOKE_ENGINES qmdb,rocksdb,lmdb)
else()
  set(YCSB_SMOKE_ENGINES rocksdb,lmdb)
endif()
add_executable(ycsb_selftest ycsb_selftest.c)
target_link_libraries(ycsb_selftest PRIVATE bench_ycsb_wl ${MATH_LIB})
add_test(NAME bench_ycsb_selftest COMMAND ycsb_selftest)
set_tests_properties(bench_ycsb_selftest PROPERTIES LABELS bench-smoke TIMEOUT 60)
foreach(wl a e)
  set(json ${BENCH_BINARY_DIR}/ycsb-smoke-${wl}.json)
  add_test(NAME bench_ycsb_${wl}
    COMMAND $<TARGET_FILE:qmdb-bench> ycsb -P ${CMAKE_CURRENT_SOURCE_DIR}/workloads/workload${wl}
            -p recordcount=2000 -p operationcount=2000 --runs 2 --ops-per-block 200
            --engine ${YCSB_SMOKE_ENGINES} --db-dir ${BENCH_BINARY_DIR}/ycsb-smoke-db-${wl}
            --output ${json})
  set_tests_properties(bench_ycsb_${wl} PROPERTIES LABELS bench-smoke TIMEOUT 120
                       FIXTURES_SETUP bench_ycsb_${wl}_json)
  add_test(NAME bench_ycsb_${wl}_json
    COMMAND ${CMAKE_COMMAND} -DJSON=${json} -DWORKLOAD=${wl} -DENGINES=${YCSB_SMOKE_ENGINES}
            -DRUNS=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_ycsb_json.cmake)
  set_tests_properties(bench_ycsb_${wl}_json PROPERTIES LABELS bench-smoke
                       FIXTURES_REQUIRED bench_ycsb_${wl}_json)
endforeach()
