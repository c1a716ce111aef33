# The reversible Heun stepper (issue 8): inverse step, order, adjoint against finite
# differences and Taylor remainders, store / checkpoint / reversible agreement.
rewind_unit_test(test_revheun SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_revheun.c)
