# A result that does not fit on its file system fails cleanly (skipped where tmpfs cannot
# be mounted).
add_test(NAME output_disk_full
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_full.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:rewind-grayscott> -N 128 -tf 30 -output_every 2)
set_tests_properties(output_disk_full PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
  SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)
