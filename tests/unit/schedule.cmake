# Schedules (issue 3): pure, no solver.
rewind_unit_test(test_schedule SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule.c)
