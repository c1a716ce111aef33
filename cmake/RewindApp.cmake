# rewind_add_app(NAME rewind-foo SOURCES main.c DECK default.yaml [EXTRA_DECKS a.yaml ...])
# Builds an app whose default deck is embedded from DECK as the C string
# `rw_app_default_deck` in the generated header app_default_deck.h, and installs the app
# and its decks.
function(rewind_add_app)
  cmake_parse_arguments(A "" "NAME;DECK" "SOURCES;EXTRA_DECKS" ${ARGN})
  file(READ ${CMAKE_CURRENT_SOURCE_DIR}/${A_DECK} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/app_default_deck.h.in
    "static const char rw_app_default_deck[] = \"${text}\";\n")
  configure_file(${CMAKE_CURRENT_BINARY_DIR}/app_default_deck.h.in
    ${CMAKE_CURRENT_BINARY_DIR}/app_default_deck.h COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${A_DECK})
  add_executable(${A_NAME} ${A_SOURCES})
  target_include_directories(${A_NAME} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(${A_NAME} PRIVATE rewind rewind_io rewind_flags)
  install(TARGETS ${A_NAME} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  string(REPLACE "rewind-" "" short ${A_NAME})
  install(FILES ${A_DECK} ${A_EXTRA_DECKS} DESTINATION ${CMAKE_INSTALL_DATADIR}/rewind/decks/${short})
endfunction()
