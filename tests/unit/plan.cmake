# rewind-plan (issue 3): its output checked by a Criterion test that runs it, and its JSON
# parsed by CMake's own JSON reader.
if(TARGET rewind-plan)
  rewind_unit_test(test_schedule_plan SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_schedule_plan.c)
  target_compile_definitions(test_schedule_plan PRIVATE
    REWIND_PLAN_EXE="$<TARGET_FILE:rewind-plan>")
  add_dependencies(test_schedule_plan rewind-plan)
  add_test(NAME plan_json
    COMMAND ${CMAKE_COMMAND} -DPLAN=$<TARGET_FILE:rewind-plan>
            -P ${PROJECT_SOURCE_DIR}/apps/plan/check_json.cmake)
endif()
