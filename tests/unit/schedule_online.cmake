# The online schedule (unknown length): streams, optimality to beta(c, 2), excess bound and
# the online-Revolve comparator on a moderate grid.
rewind_unit_test(test_schedule_online SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_online.c)
