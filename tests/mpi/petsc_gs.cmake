# Rewind's Gray-Scott gradient against PETSc's TSAdjoint (RK4, same discrete scheme).
add_executable(test_petsc_gs ${CMAKE_CURRENT_SOURCE_DIR}/test_petsc_gs.c)
target_link_libraries(test_petsc_gs PRIVATE rewind PkgConfig::PETSC rewind_flags)
foreach(np 1 2)
  rewind_mpi_test(petsc_gs_np${np} NP ${np} COMMAND $<TARGET_FILE:test_petsc_gs>)
endforeach()
