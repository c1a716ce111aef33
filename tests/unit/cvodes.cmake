# Independent check of the discrete adjoint against SUNDIALS CVODES's continuous adjoint
# (Van der Pol, dJ/dmu and dJ/dy0; see the comment at the top of test_cvodes.c).
rewind_unit_test(test_cvodes
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_cvodes.c
  LIBS ${REWIND_SUNDIALS_cvodes} SUNDIALS::nvecserial_shared SUNDIALS::sunmatrixdense_shared
       SUNDIALS::sunlinsoldense_shared)
