# online_bound: exact dynamic program over a class of online checkpointing policies with
# c = 2, 3, 4 slots: the fewest lengths above an excess threshold any of them can reach (see
# the comment at the top of online_bound.c). Run by hand in a Release build, e.g.
#   build/rel/tests/bench/online_bound --c 3 --L 3000 --thr 0.005
# ctest runs only --check: the DP against a brute-force enumeration of every policy for
# small L, and the known property that an online policy optimal up to beta(c, 2) exists.
add_executable(online_bound ${CMAKE_CURRENT_SOURCE_DIR}/online_bound.c)
target_link_libraries(online_bound PRIVATE rewind rewind_flags m)
add_test(NAME online_bound_check COMMAND $<TARGET_FILE:online_bound> --check)
set_tests_properties(online_bound_check PROPERTIES LABELS "bench;smoke" TIMEOUT 60)
add_test(NAME online_bound_badflag
  COMMAND sh -c "\"$1\" --no-such-flag; test $? -eq 2" sh $<TARGET_FILE:online_bound>)
set_tests_properties(online_bound_badflag PROPERTIES LABELS "bench;smoke" TIMEOUT 60)
