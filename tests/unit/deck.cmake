# Input decks (io/rw_deck.c): precedence, sources, unknown keys, value checks, sizes, -help.
rewind_unit_test(test_deck SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_deck.c
  LIBS rewind_io PkgConfig::PETSC)
