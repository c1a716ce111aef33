include(CMakePackageConfigHelpers)
install(TARGETS rewind EXPORT RewindTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rewind DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The examples' sources with a CMakeLists.txt that builds them against this installed package
# (examples/CMakeLists.txt), and the user's guide they go with.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rewind/examples)
install(FILES ${PROJECT_SOURCE_DIR}/docs/library.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT RewindTargets NAMESPACE Rewind:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rewind)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/RewindConfig.cmake.in
  ${PROJECT_BINARY_DIR}/RewindConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rewind)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/RewindConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/RewindConfig.cmake ${PROJECT_BINARY_DIR}/RewindConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rewind)
# rewind.pc lies in <libdir>/pkgconfig: its prefix is that many levels up (../.. for lib,
# ../../.. for lib/x86_64-linux-gnu), wherever --prefix put the tree
file(RELATIVE_PATH REWIND_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" REWIND_PC_UP "${REWIND_PC_UP}")
# rewind.pc: the library alone (no PETSc); rewind-io.pc adds librewind_io (decks, results)
configure_file(${PROJECT_SOURCE_DIR}/cmake/rewind.pc.in ${PROJECT_BINARY_DIR}/rewind.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/rewind-io.pc.in ${PROJECT_BINARY_DIR}/rewind-io.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rewind.pc ${PROJECT_BINARY_DIR}/rewind-io.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
