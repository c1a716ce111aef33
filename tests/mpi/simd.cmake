# The rows written in GCC's vector types are compiled once per ISA at its own width
# (rw_kernels.h); every instantiation the CPU can run must give the widest one's bits: the
# gradient and the trajectory snapshots, store and checkpoint mode, 1 and 2 ranks. Rows whose
# length is no multiple of any width (Gray-Scott 37, heat's Dirichlet 61: 59 unknowns a row)
# take every tail path; heat's periodic 64 rows of whole vectors, read where they lie. Heat's
# grids are large enough for its adjoint sweeps (one window holds under a quarter of a block).
set(SIMD_ARGS_grayscott -N 37 -tf 10 -dt 0.2 -output_every 10)
set(SIMD_ARGS_heat -dim 3 -n 61 -dt 1e-3 -tf 0.02 -output_every 10)
set(SIMD_ARGS_heat_periodic -dim 3 -n 64 -boundary periodic -dt 1e-3 -tf 0.02 -output_every 10)
# the neural ODE's skinny kernels: layer widths and a batch that are no multiple of any width,
# two epochs of training (the weights Adam reaches, and the last gradient)
set(SIMD_ARGS_neuralode -epochs 2 -widths 2,37,29,2 -batch 67)
set(SIMD_GROUPS_neuralode "/gradient /model") # /train/loss carries a timer attribute
# Heat's 3-D grids at 2 ranks only (suite time: 65-70 s each at 1 rank under the sanitizers;
# the rows and their tails are the same on a slab as on the whole block).
set(SIMD_NP_heat 2)
set(SIMD_NP_heat_periodic 2)
foreach(name grayscott heat heat_periodic neuralode)
  string(REGEX REPLACE "_.*" "" app ${name})
  if(NOT DEFINED SIMD_NP_${name})
    set(SIMD_NP_${name} 1 2)
  endif()
  foreach(np ${SIMD_NP_${name}})
    add_test(NAME simd_widths_${name}_np${np}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/simd_widths.sh ${MPIEXEC_EXECUTABLE} ${np}
              $<TARGET_FILE:rewind-${app}> ${SIMD_ARGS_${name}})
    set(env "${REWIND_TEST_ENV}")
    if(DEFINED SIMD_GROUPS_${name})
      list(APPEND env "SIMD_GROUPS=${SIMD_GROUPS_${name}}")
    endif()
    set_tests_properties(simd_widths_${name}_np${np} PROPERTIES ENVIRONMENT "${env}"
      TIMEOUT 300 PROCESSORS ${np} SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS"
      FAIL_REGULAR_EXPRESSION "FAIL")
  endforeach()
endforeach()
