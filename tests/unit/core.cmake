rewind_unit_test(test_gradients SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gradients.c)
rewind_unit_test(test_vjp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_vjp.c)
rewind_unit_test(test_checkpoint SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_checkpoint.c)
rewind_unit_test(test_adaptive SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_adaptive.c)
rewind_unit_test(test_alloc_failures SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_alloc_failures.c)
rewind_unit_test(test_store SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_store.c LIBS HDF5::HDF5)
rewind_unit_test(test_fpenv SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fpenv.c)
# AddressSanitizer builds (the CI's): a group's blocks are fenced by hand (rw_calloc_whole_many).
# An in-bounds write goes through; one past a block's end and a read after rw_free are reported.
if(REWIND_SANITIZE)
  add_executable(asan_group ${CMAKE_CURRENT_SOURCE_DIR}/asan_group.c)
  target_link_libraries(asan_group PRIVATE rewind rewind_flags)
  add_test(NAME asan_group_in_bounds COMMAND asan_group 0)
  add_test(NAME asan_group_overrun COMMAND asan_group 1)
  add_test(NAME asan_group_after_free COMMAND asan_group 2)
  set_tests_properties(asan_group_in_bounds PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "no report" FAIL_REGULAR_EXPRESSION "AddressSanitizer")
  set_tests_properties(asan_group_overrun asan_group_after_free PROPERTIES
    ENVIRONMENT "${REWIND_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "AddressSanitizer: use-after-poison" FAIL_REGULAR_EXPRESSION "no report")
endif()
