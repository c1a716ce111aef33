# Counter-based noise (core/rw_rng.c): Philox-4x32 known answers, counter layout, split
# invariance of the bulk fills, statistics of large samples (issue 12).
rewind_unit_test(test_rng SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_rng.c)
