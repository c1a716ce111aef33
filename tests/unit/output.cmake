rewind_unit_test(test_output SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_output.c LIBS rewind_io)
