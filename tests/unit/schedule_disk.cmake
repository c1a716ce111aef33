# The two-level (RAM + disk) schedule: pure, no solver.
rewind_unit_test(test_schedule_disk SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_disk.c)
# The online schedule with a disk tier (periodic disk checkpoints + binomial RAM reversal).
rewind_unit_test(test_schedule_online_disk SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_online_disk.c)
# The tiered schedule (fast, host and disk tiers): pure, no solver.
rewind_unit_test(test_schedule_tiered SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_tiered.c)
