# SDE paths and pathwise gradients across rank counts (issue 12): the noise is keyed by the
# global path index, so 1, 2 and 4 ranks draw the same paths.
add_executable(test_sde_ranks ${CMAKE_CURRENT_SOURCE_DIR}/test_sde_ranks.c)
target_link_libraries(test_sde_ranks PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(sde_ranks_np${np} NP ${np} COMMAND $<TARGET_FILE:test_sde_ranks>)
endforeach()
