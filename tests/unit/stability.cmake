# Explicit stability limits (real stability intervals from the tableaux, the problems'
# eigenvalue bounds) and the blow-up test (solvers/problems/rw_stability.c).
rewind_unit_test(test_stability SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_stability.c)
