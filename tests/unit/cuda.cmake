add_executable(test_cuda ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda.c)
target_link_libraries(test_cuda PRIVATE rewind rewind_flags)
add_test(NAME test_cuda COMMAND test_cuda)
set_tests_properties(test_cuda PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${REWIND_TEST_ENV}")
