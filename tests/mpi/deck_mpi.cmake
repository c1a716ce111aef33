# Input decks on 2 ranks: every rank returns the same error code and message.
add_executable(deck_errors_mpi ${CMAKE_CURRENT_SOURCE_DIR}/deck_errors_mpi.c)
target_link_libraries(deck_errors_mpi PRIVATE rewind rewind_io rewind_flags)
rewind_mpi_test(deck_errors_mpi NP 2 COMMAND $<TARGET_FILE:deck_errors_mpi>)
