# Space-time white noise in Gray-Scott and heat (issue 12): the noise mapping and its grid
# scaling, Taylor tests of the pathwise gradient, checkpointing bit for bit and rank-count
# invariance with em and sheun at 1, 2 and 4 ranks; the apps with noise and their deck errors.
# (Included after grayscott.cmake and heat.cmake: uses GS, GS_OUT, HEAT, HEAT_OUT and their
# *_bad helpers.)
add_executable(test_pde_noise ${CMAKE_CURRENT_SOURCE_DIR}/test_pde_noise.c)
target_link_libraries(test_pde_noise PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_expect(pde_noise_np${np} NP ${np} RC zero REGEX "test_pde_noise: all checks passed"
    FORBID "FAIL" COMMAND $<TARGET_FILE:test_pde_noise>)
endforeach()

# The README's noise example, as written there (2 ranks, 64^2, 100 steps): it runs to a gradient.
rewind_mpi_expect(grayscott_app_noise_readme NP 2 RC zero REGEX "amplitude sigma = 0.001, seed 3.*dJ/dkappa"
  COMMAND ${GS} -stepper sheun -noise_amplitude 0.001 -noise_seed 3 -N 64 -tf 50
          -output ${GS_OUT}/gs_noise_readme.h5)

# rewind-grayscott with noise and an SDE stepper, checkpointed (the default deck's binomial
# schedule) on 2 ranks and in store mode on 1 rank: the summary states the noise, and the two
# runs' final states and dJ/dy0 agree (the path is the same on any rank count and schedule).
rewind_mpi_expect(grayscott_app_noise NP 2 RC zero
  REGEX "noise: space-time white noise on u and v, amplitude sigma = 0.01, seed 3: node increment sigma h\\^\\(-2/2\\) sqrt\\(dt\\) z.*sheun, 10 steps.*dJ/dkappa.*binomial optimum"
  COMMAND ${GS} -N 32 -tf 5 -stepper sheun -noise_amplitude 0.01 -noise_seed 3
          -output ${GS_OUT}/gs_noise.h5)
rewind_mpi_expect(grayscott_app_noise_store NP 1 RC zero
  REGEX "noise: space-time white noise.*adjoint mode store"
  COMMAND ${GS} -N 32 -tf 5 -stepper sheun -noise_amplitude 0.01 -noise_seed 3
          -adjoint_mode store -output ${GS_OUT}/gs_noise_store.h5)
foreach(g state/final gradient/dJdy0)
  string(REPLACE "/" "_" gname ${g})
  add_test(NAME grayscott_app_noise_same_${gname}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_relnorm.py
            ${GS_OUT}/gs_noise.h5 ${GS_OUT}/gs_noise_store.h5 /${g} 1e-14)
  set_tests_properties(grayscott_app_noise_same_${gname} PROPERTIES
    DEPENDS "grayscott_app_noise;grayscott_app_noise_store" SKIP_RETURN_CODE 77)
endforeach()
# Only u noisy, Euler-Maruyama, and an SDE stepper without noise (the deterministic scheme).
rewind_mpi_expect(grayscott_app_noise_u_em NP 2 RC zero
  REGEX "noise: space-time white noise on u, amplitude sigma = 0.02, seed 0.*em, 4 steps"
  COMMAND ${GS} -N 16 -tf 2 -stepper em -noise_amplitude 0.02 -noise_species u
          -output ${GS_OUT}/gs_noise_u.h5)
rewind_mpi_expect(grayscott_app_sde_no_noise NP 1 RC zero
  REGEX "noise: none \\(noise_amplitude 0\\): em is the deterministic Euler scheme"
  COMMAND ${GS} -N 16 -tf 2 -stepper em -output ${GS_OUT}/gs_sde_quiet.h5)
rewind_mpi_expect(heat_app_noise NP 2 RC zero
  REGEX "noise: space-time white noise, amplitude sigma = 0.05, seed 7.*heat on 2 ranks, em.*dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} -stepper em -noise_amplitude 0.05 -noise_seed 7 -tf 0.05
          -output ${HEAT_OUT}/heat_noise.h5)

# Deck errors: noise without an SDE stepper names both keys; bad amplitudes name the key.
grayscott_bad(noise_needs_sde 2
  "noise_amplitude = 0.01 turns on.*stepper 'rk4' is deterministic.*noise_amplitude from command line, stepper from"
  -N 32 -tf 2 -noise_amplitude 0.01)
grayscott_bad(noise_negative 2 "noise_amplitude = -1 \\(from command line\\) must be" -N 32
  -noise_amplitude -1)
grayscott_bad(noise_nan 2 "noise_amplitude = 'nan' \\(from command line\\) is not a real number" -N 32 -noise_amplitude nan)
grayscott_bad(noise_species 2 "noise_species = 'w' \\(from command line\\) is not one of: uv, u, v"
  -N 32 -noise_species w)
heat_bad(noise_needs_sde
  "noise_amplitude = 0.1 turns on.*stepper 'heun' is deterministic.*noise_amplitude from command line, stepper from command line"
  -stepper heun -noise_amplitude 0.1)
heat_bad(noise_negative "noise_amplitude = -0.5 \\(from command line\\) must be" -noise_amplitude -0.5)

# 3-D with only v noisy (Euler-Maruyama): 1 and 2 ranks give the same final state and dJ/dy0
# bit for bit (noise keyed by the global node, one species: index = node).
foreach(np 1 2)
  rewind_mpi_expect(grayscott_app_noise_3d_np${np} NP ${np} RC zero
    REGEX "noise: space-time white noise on v.*h\\^\\(-3/2\\)"
    COMMAND ${GS} -dim 3 -N 8 -tf 2 -stepper em -noise_amplitude 0.01 -noise_species v
            -output ${GS_OUT}/gs_noise3d_np${np}.h5)
endforeach()
foreach(g state/final gradient/dJdy0)
  string(REPLACE "/" "_" gname ${g})
  add_test(NAME grayscott_app_noise_3d_same_${gname}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_relnorm.py
            ${GS_OUT}/gs_noise3d_np1.h5 ${GS_OUT}/gs_noise3d_np2.h5 /${g} 0)
  set_tests_properties(grayscott_app_noise_3d_same_${gname} PROPERTIES
    DEPENDS "grayscott_app_noise_3d_np1;grayscott_app_noise_3d_np2" SKIP_RETURN_CODE 77)
endforeach()

# Noise on the emulated device (issue 11): the normals drawn by a device body (Philox and
# Box-Muller from core/rw_rng_body.h, the code the CPU fills run) and the diffusion
# coefficients as device bodies; the SDE steppers are vector operations. Gray-Scott (sheun, u
# and v; em, v only, 3-D) and heat (em, Neumann: the half-cell coefficients) give the CPU runs'
# final states and gradients bit for bit.
rewind_mpi_expect(grayscott_app_device_noise NP 2 RC zero
  REGEX "device: emulated.*noise: space-time white noise on u and v.*dJ/dkappa"
  COMMAND ${GS} -N 32 -tf 5 -stepper sheun -noise_amplitude 0.01 -noise_seed 3 -device emulated
          -output ${GS_OUT}/gs_noise_device.h5)
rewind_mpi_expect(grayscott_app_device_noise_3d NP 2 RC zero
  REGEX "device: emulated.*noise: space-time white noise on v"
  COMMAND ${GS} -dim 3 -N 8 -tf 2 -stepper em -noise_amplitude 0.01 -noise_species v
          -device emulated -output ${GS_OUT}/gs_noise3d_device.h5)
rewind_mpi_expect(heat_app_noise_neumann NP 2 RC zero REGEX "dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} -stepper em -noise_amplitude 0.05 -noise_seed 7 -tf 0.05 -boundary neumann
          -output ${HEAT_OUT}/heat_noise_neumann.h5)
rewind_mpi_expect(heat_app_device_noise_neumann NP 2 RC zero
  REGEX "device: emulated.*dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} -stepper em -noise_amplitude 0.05 -noise_seed 7 -tf 0.05 -boundary neumann
          -device emulated -output ${HEAT_OUT}/heat_noise_neumann_device.h5)
rewind_h5_same(grayscott_app_device_noise_same ${GS_OUT}/gs_noise.h5 ${GS_OUT}/gs_noise_device.h5
  DATASETS /state/final /gradient/dJdy0
  DEPENDS grayscott_app_noise grayscott_app_device_noise)
rewind_h5_same(grayscott_app_device_noise_3d_same ${GS_OUT}/gs_noise3d_np2.h5
  ${GS_OUT}/gs_noise3d_device.h5 DATASETS /state/final /gradient/dJdy0
  DEPENDS grayscott_app_noise_3d_np2 grayscott_app_device_noise_3d)
rewind_h5_same(heat_app_device_noise_neumann_same ${HEAT_OUT}/heat_noise_neumann.h5
  ${HEAT_OUT}/heat_noise_neumann_device.h5 DATASETS /state/u /gradient/dJdy0 /gradient/dJdkappa
  DEPENDS heat_app_noise_neumann heat_app_device_noise_neumann)
