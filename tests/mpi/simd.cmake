# The rows written in GCC's vector types are compiled once per ISA at its own width
# (rw_kernels.h); every instantiation the CPU can run must give the widest one's bits: the
# gradient and the trajectory snapshots, store and checkpoint mode, 1 and 2 ranks. Row lengths
# that are no multiple of any width (37, 19) take every tail path.
set(SIMD_ARGS_grayscott -N 37 -tf 10 -dt 0.2 -output_every 10)
set(SIMD_ARGS_heat -dim 3 -n 19 -tf 0.05 -output_every 10)
foreach(name grayscott heat)
  foreach(np 1 2)
    add_test(NAME simd_widths_${name}_np${np}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/simd_widths.sh ${MPIEXEC_EXECUTABLE} ${np}
              $<TARGET_FILE:rewind-${name}> ${SIMD_ARGS_${name}})
    set_tests_properties(simd_widths_${name}_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
      TIMEOUT 300 PROCESSORS ${np} SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS"
      FAIL_REGULAR_EXPRESSION "FAIL")
  endforeach()
endforeach()
