# SDE steppers (issue 12): Euler-Maruyama and stochastic Heun with their discrete adjoints on
# Ornstein-Uhlenbeck and geometric Brownian motion ensembles: step index, noise mapping and
# refinement, VJP dot products, Taylor remainders, checkpointed == store bit for bit, strong
# orders against a fine reference of the same Brownian path.
rewind_unit_test(test_sde SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sde.c)
