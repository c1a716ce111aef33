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

# rewind-plan refuses, with exit status 2 and at once, a length it cannot plan within seconds
# (the apps take up to 10^12 steps; iterating that many would take hours) and an option given
# twice (the last value used to win silently) or contradicting another.
if(TARGET rewind-plan)
  function(plan_expect name rc regex)
    string(REPLACE ";" "|" args "${ARGN}")
    add_test(NAME plan_${name}
      COMMAND ${CMAKE_COMMAND} -DPLAN=$<TARGET_FILE:rewind-plan> "-DARGS=${args}" -DRC=${rc}
              "-DREGEX=${regex}" -P ${PROJECT_SOURCE_DIR}/apps/plan/check_exit.cmake)
    set_tests_properties(plan_${name} PROPERTIES TIMEOUT 60)
  endfunction()
  plan_expect(steps_beyond_limit 2
    "--steps 1000000000000: this tool plans the binomial schedule for at most 100000000 steps"
    --steps 1000000000000 --ram-slots 3)
  plan_expect(steps_beyond_limit_online 2
    "--steps 2000000: this tool plans the online schedule for at most 1000000 steps"
    --steps 2000000 --ram-slots 3 --online)
  plan_expect(steps_beyond_limit_two_level 2
    "--steps 2000000: this tool plans the two_level schedule for at most 1000000 steps"
    --steps 2000000 --ram-slots 3 --disk-slots 4)
  plan_expect(steps_beyond_limit_store_all 2 "store_all schedule for at most 10000000 steps"
    --steps 20000000 --schedule store-all)
  plan_expect(steps_within_limit 0 "advances +3817896 +\\(optimum with 100 slots: t = 3817896"
    --steps 1000000 --ram-slots 100)
  plan_expect(steps_twice 2 "option --steps is given twice \\('10', then '20'\\); give it once"
    --steps 10 --ram-slots 3 --steps 20)
  plan_expect(steps_twice_with_equals 2 "option --steps is given twice \\('10', then '20'\\)"
    --steps=10 --ram-slots 3 --steps=20)
  plan_expect(ram_slots_twice 2 "option --ram-slots is given twice \\('3', then '4'\\)"
    --steps 10 --ram-slots 3 --ram-slots 4)
  plan_expect(online_twice 2 "option --online is given twice" --steps 10 --ram-slots 3 --online
    --online)
  plan_expect(online_contradicts_schedule 2 "--online contradicts --schedule fixed"
    --steps 10 --schedule fixed --interval 2 --online)
  plan_expect(schedule_contradicts_online 2 "--schedule binomial contradicts --online"
    --steps 10 --ram-slots 3 --online --schedule binomial)
  # the flag that chose the online schedule is named as given (it said "--schedule online"
  # when the command line had --online)
  plan_expect(host_slots_with_online 2
    "host slots \\(--host-slots\\) need the binomial schedule \\(the three-tier schedule is offline\\); not --online.Run"
    --steps 10 --ram-slots 3 --host-slots 2 --online)
  plan_expect(host_slots_with_schedule_online 2 "not --schedule online.Run"
    --steps 10 --ram-slots 3 --host-slots 2 --schedule online)
  plan_expect(online_and_schedule_online 0 "online schedule, 10 steps"
    --steps 10 --ram-slots 3 --online --schedule online)
endif()
