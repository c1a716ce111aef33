# A restart from another app's checkpoint files is refused naming the file and what differs.
foreach(np 1 2)
  add_test(NAME disk_foreign_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_foreign.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-heat> $<TARGET_FILE:rewind-grayscott>)
  set_tests_properties(disk_foreign_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    TIMEOUT 120 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()
