# bench_online: the online schedule's excess over the offline optimum on a dense grid of
# lengths (c = 3, 5, 10, 20; l up to 10^5; both end announcements) and against a
# comparator for online Revolve (see the comment at the top of bench_online.c). Run by
# hand in a Release build:  build/online-rel/tests/bench/bench_online [--lmax 100000]
add_executable(bench_online ${CMAKE_CURRENT_SOURCE_DIR}/bench_online.c)
target_link_libraries(bench_online PRIVATE rewind rewind_flags)
