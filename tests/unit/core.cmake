rewind_unit_test(test_gradients SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gradients.c)
rewind_unit_test(test_vjp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_vjp.c)
rewind_unit_test(test_checkpoint SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_checkpoint.c)
rewind_unit_test(test_adaptive SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_adaptive.c)
