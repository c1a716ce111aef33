# A user's own Butcher tableau: accepted when complete, refused naming the missing field.
rewind_unit_test(test_user_tableau SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_user_tableau.c)
