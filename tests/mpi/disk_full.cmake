# A result that does not fit on its file system fails cleanly (skipped where tmpfs cannot
# be mounted).
add_test(NAME output_disk_full
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_full.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:rewind-grayscott> -N 128 -tf 30 -output_every 2)
set_tests_properties(output_disk_full PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
  SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)

# A disk already full, and one that another writer fills while the result is written: exit 1
# with a message on every rank, no crash, no hang, no partial file (skipped like the above).
foreach(np 1 2)
  add_test(NAME output_disk_fills_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_fills.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-grayscott> -N 128 -tf 100 -output_every 1)
  set_tests_properties(output_disk_fills_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    SKIP_RETURN_CODE 77 TIMEOUT 600 PROCESSORS ${np})
endforeach()

# Disk checkpoints on a full disk leave no empty files; a restart from an empty one is refused
# naming it and changes no file (skipped like the above).
foreach(np 1 2)
  add_test(NAME ckpt_disk_full_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/ckpt_disk_full.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-grayscott> -N 64 -tf 200 -checkpoint_slots 3
            -checkpoint_disk_slots 8 -checkpoint_write_cost 0.1 -checkpoint_read_cost 0.1)
  set_tests_properties(ckpt_disk_full_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS ${np})
endforeach()
