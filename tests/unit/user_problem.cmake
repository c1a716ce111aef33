# A user's own problem missing an op the adjoint needs: refused before the forward sweep.
rewind_unit_test(test_user_problem SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_user_problem.c)
