# The sweeps against the stage-by-stage steps, bit for bit, on decompositions that test_grayscott,
# test_heat and test_burgers do not reach (test_wave_diff.c): blocks as thin as a method's reach
# (s G layers), uneven splits, 3 ranks, 3-D tiles, each kind of heat side; every step must run as
# a sweep (sweeps=1). The first heat case is the one that found the unfilled conductivity ghost
# past a neighbour's layers (2026-12-02).
add_executable(test_wave_diff ${CMAKE_CURRENT_SOURCE_DIR}/test_wave_diff.c)
target_link_libraries(test_wave_diff PRIVATE rewind rewind_flags)
function(wave_diff name np)
  rewind_mpi_expect(wave_diff_${name} NP ${np} RC zero REGEX "ok rep 0: 0 differing entries"
    FORBID "MISMATCH|FAIL" COMMAND $<TARGET_FILE:test_wave_diff> sweeps=1 ${ARGN})
endfunction()
wave_diff(heat3d_neumann_ssprk3_4_3 2 prob=heat dim=3 n=9,5,7 bc=neumann tab=ssprk3 W=1)
wave_diff(heat3d_neumann_ssprk3_3_3 2 prob=heat dim=3 n=9,5,6 bc=neumann tab=ssprk3 W=2 R=1)
wave_diff(heat3d_neumann_euler 2 prob=heat dim=3 n=8,6,7 bc=neumann tab=euler W=2 R=1)
wave_diff(heat3d_dirichlet_rk38_4_4 2 prob=heat dim=3 n=7,6,8 bc=dirichlet tab=rk38 W=3 R=3)
wave_diff(heat3d_dirichlet_heun_3ranks 3 prob=heat dim=3 n=16,5,13 bc=dirichlet tab=heun W=1 R=3)
wave_diff(heat3d_periodic_dopri5_3ranks 3 prob=heat dim=3 n=16,6,20 bc=periodic tab=dopri5 W=3
  R=1)
wave_diff(heat2d_periodic_ssprk3_3ranks 3 prob=heat dim=2 n=24,14 bc=periodic tab=ssprk3 W=1 act=1)
wave_diff(grayscott2d_ssprk3_3ranks_pair 3 prob=grayscott dim=2 n=19 tab=ssprk3 W=2)
wave_diff(grayscott2d_ssprk3_3_layers 3 prob=grayscott dim=2 n=9 tab=ssprk3 W=3)
wave_diff(burgers_rk4_3ranks 3 prob=burgers n=24,12 tab=rk4 W=1)
wave_diff(burgers_rk38_pair 2 prob=burgers n=9,17 tab=rk38 W=2)
# The check can fail: one entry of the swept y_{n+1} changed by 1e-13 on the last rank must be
# reported, and a configuration that does not sweep (the fastest dimension split over the two
# ranks: the wave runs only on blocks whose faster dimensions are whole) must fail under
# sweeps=1.
rewind_mpi_expect(wave_diff_selftest_difference NP 2 RC nonzero
  REGEX "rank 1: step y_\\{n\\+1\\} +1 of [0-9]+ entries differ.*MISMATCH rep 0"
  COMMAND ${CMAKE_COMMAND} -E env REWIND_DIFF_SELFTEST=1 $<TARGET_FILE:test_wave_diff> sweeps=1
    prob=heat dim=3 n=9,5,7 bc=neumann tab=ssprk3 W=1)
rewind_mpi_expect(wave_diff_selftest_no_sweep NP 2 RC nonzero
  REGEX "FAIL: sweeps=1, but a step ran stage by stage"
  COMMAND $<TARGET_FILE:test_wave_diff> sweeps=1 prob=grayscott dim=2 n=8 tab=rk4 W=1
    procs=2,1,1)
