# Device vectors (rw_device.h) against CPU vectors: every vector operation, the emulated
# device's memory guard, whole adjoint solves (a vector-op problem; Gray-Scott on the
# emulated device), at 1, 2 and 4 ranks. The cuda runs skip (77, with the reason) where
# the build has no CUDA or the machine no GPU.
add_executable(test_device ${CMAKE_CURRENT_SOURCE_DIR}/test_device.c)
target_link_libraries(test_device PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(device_emulated_np${np} NP ${np} COMMAND $<TARGET_FILE:test_device> emulated)
endforeach()
foreach(np 1 2)
  rewind_mpi_test(device_cuda_np${np} NP ${np} COMMAND $<TARGET_FILE:test_device> cuda)
endforeach()
