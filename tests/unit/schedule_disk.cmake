# The two-level (RAM + disk) schedule: pure, no solver.
rewind_unit_test(test_schedule_disk SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_disk.c)
