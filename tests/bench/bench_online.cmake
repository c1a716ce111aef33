# bench_online: the online schedule's excess over the offline optimum, first at every length
# l = 2 .. 10^5 for c = 3 .. 20 (the dense table), then on a grid of lengths (c = 3, 5, 10,
# 20; both end announcements), each against a comparator for online Revolve (see the comment
# at the top of bench_online.c). Run by hand in a Release build:
#   build/release/tests/bench/bench_online [--lmax 100000] [--dense-only | --grid-only]
add_executable(bench_online ${CMAKE_CURRENT_SOURCE_DIR}/bench_online.c)
target_link_libraries(bench_online PRIVATE rewind rewind_flags)
# Smoke run: the dense table's model of the forward steps (held checkpoints tracked from the
# actions, reversal by its own program) must equal full runs of the schedule (every 997
# lengths and the last); it exits 1 when they differ. Small lengths only: not a measurement.
add_test(NAME bench_online_dense_smoke COMMAND bench_online --dense-only --lmax 3000)
set_tests_properties(bench_online_dense_smoke PROPERTIES LABELS "bench;smoke" TIMEOUT 300)
