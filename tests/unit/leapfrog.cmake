# The leapfrog stepper on its own (issue 4): convergence order, adjoint against finite
# differences, Taylor remainder, argument checks.
rewind_unit_test(test_leapfrog SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_leapfrog.c)
