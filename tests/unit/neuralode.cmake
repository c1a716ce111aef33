# The neural-ODE problem (issue 9): vectorised tanh, dot-product and finite-difference tests
# of the MLP's VJPs, Taylor remainders of the loss gradient, checkpointed = store bit for bit;
# and the reference-format files' readers (rewind_io).
rewind_unit_test(test_neuralode SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_neuralode.c
  LIBS rewind_io)
# The hidden layers' small products through LIBXSMM (solvers/rw_smallgemm.c).
rewind_unit_test(test_smallgemm SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_smallgemm.c)
if(REWIND_HAVE_LIBXSMM)
  target_compile_definitions(test_smallgemm PRIVATE REWIND_HAVE_LIBXSMM)
endif()
