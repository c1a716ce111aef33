# rewind-neuralode (issue 9). Gradients of the shared reference problem P0 (tests/data/
# neuralode, from an independent float64 implementation; B 256, MLP 2-64-64-2 tanh, Kutta's
# 3/8 rule, T 1) must match the reference dL/dtheta to 1e-10 relative (the app prints
# |dL/dtheta - ref|_2 / |ref|_2; the regex accepts exponents -10 and below... only mantissas
# below 1e-10: e-11 or smaller) and the loss to 11 digits, at N = 100 and 1000, in store mode
# and under binomial checkpointing, at 1 and 2 ranks.
set(NODE $<TARGET_FILE:rewind-neuralode>)
set(NODE_DATA ${PROJECT_SOURCE_DIR}/tests/data/neuralode)
set(NODE_OUT ${CMAKE_CURRENT_BINARY_DIR}/out/neuralode)
file(MAKE_DIRECTORY ${NODE_OUT})
set(NODE_P0 -mode gradient -theta_file ${NODE_DATA}/p0_theta.bin
  -problem_file ${NODE_DATA}/problem_T1.bin -stepper rk38)
set(NODE_J "objective J += 2\\.4370192902[23]")
set(NODE_GRAD "reference gradient: [^=]*= [0-9.]+e-(1[1-9]|[2-9][0-9])")
set(NODE_OK "${NODE_J}.*${NODE_GRAD}")
foreach(np 1 2)
  rewind_mpi_expect(neuralode_p0_n100_store_np${np} NP ${np} RC zero REGEX "${NODE_OK}"
    COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode store
      -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin -output ${NODE_OUT}/n100_np${np}.h5)
  rewind_mpi_expect(neuralode_p0_n100_binomial_np${np} NP ${np} RC zero REGEX "${NODE_OK}"
    COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode checkpoint -checkpoint_slots 10
      -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin -output ${NODE_OUT}/n100b_np${np}.h5)
endforeach()
rewind_mpi_expect(neuralode_p0_n1000_store_np1 NP 1 RC zero REGEX "${NODE_OK}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.001 -adjoint_mode store
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N1000_T1.bin -output ${NODE_OUT}/n1000.h5)
# The example deck: N = 1000 under binomial checkpointing with sqrt(N) slots, 2 ranks (run
# from the project root, where its relative paths point).
rewind_mpi_expect(neuralode_p0_n1000_binomial_np2 NP 2 RC zero REGEX "${NODE_OK}"
  COMMAND ${NODE} ${PROJECT_SOURCE_DIR}/apps/neuralode/decks/p0_gradient.yaml
    -output ${NODE_OUT}/n1000b.h5)
set_tests_properties(neuralode_p0_n1000_binomial_np2 PROPERTIES
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# The rest of the N = 1000 matrix: store at 2 ranks, binomial (32 slots) at 1 rank.
rewind_mpi_expect(neuralode_p0_n1000_store_np2 NP 2 RC zero REGEX "${NODE_OK}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.001 -adjoint_mode store
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N1000_T1.bin -output ${NODE_OUT}/n1000_np2.h5)
rewind_mpi_expect(neuralode_p0_n1000_binomial_np1 NP 1 RC zero REGEX "${NODE_OK}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.001 -adjoint_mode checkpoint -checkpoint_slots 32
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N1000_T1.bin -output ${NODE_OUT}/n1000b_np1.h5)
# The gradient file is complete and readable (checksums verified by h5dump).
add_test(NAME neuralode_output_readable
  COMMAND ${CMAKE_COMMAND} -DFILE=${NODE_OUT}/n100_np2.h5
          "-DNEEDLES=norm2,objective,deck,reference_gradient_reldiff,activation"
          "-DDATASETS=/gradient/dJdtheta,/gradient/dJdy0,/model/theta"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
set_tests_properties(neuralode_output_readable PROPERTIES DEPENDS neuralode_p0_n100_store_np2)

# Training: a short run of the default deck lowers the loss and saves weights that the
# gradient mode reads back.
rewind_mpi_expect(neuralode_train_short NP 2 RC zero REGEX "training: 20 epochs.*x lower"
  COMMAND ${NODE} -epochs 20 -theta_out ${NODE_OUT}/trained.bin -output ${NODE_OUT}/train.h5)
# The weights saved in the reference format and in the HDF5 result give the same gradient,
# bit for bit.
rewind_mpi_expect(neuralode_trained_reload NP 1 RC zero REGEX "objective J.*theta"
  COMMAND ${NODE} -mode gradient -theta_file ${NODE_OUT}/trained.bin
    -gradient_out ${NODE_OUT}/trained_grad.bin -output ${NODE_OUT}/reload.h5)
set_tests_properties(neuralode_trained_reload PROPERTIES DEPENDS neuralode_train_short)
rewind_mpi_expect(neuralode_trained_reload_h5 NP 1 RC zero
  REGEX "reference gradient: [^=]*= 0.000e\\+00"
  COMMAND ${NODE} -mode gradient -theta_file ${NODE_OUT}/train.h5
    -compare_gradient ${NODE_OUT}/trained_grad.bin -output ${NODE_OUT}/reload2.h5)
set_tests_properties(neuralode_trained_reload_h5 PROPERTIES DEPENDS neuralode_trained_reload)

# The other adjoint modes on P0 (N = 100, 2 ranks): backward reconstruction with drift checks,
# the disk tier, and adaptive Dormand-Prince under the online schedule (rtol 1e-6: within
# 1e-5 of the fixed-step reference, which differs from the exact gradient by its own
# discretisation error only).
file(MAKE_DIRECTORY ${NODE_OUT}/ckpt)
set(NODE_REF100 -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin)
rewind_mpi_expect(neuralode_p0_backsolve NP 2 RC zero
  REGEX "${NODE_J}.*drift: max [0-9.e+-]+.*${NODE_GRAD}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode backsolve ${NODE_REF100}
    -output ${NODE_OUT}/backsolve.h5)
rewind_mpi_expect(neuralode_p0_disk NP 2 RC zero
  REGEX "${NODE_J}.*binomial optimum for the RAM slots alone t\\(l,c\\) = [0-9]+; the tiers.*disk tier: 4 slots.*${NODE_GRAD}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode checkpoint -checkpoint_slots 2
    -checkpoint_disk_slots 4 -checkpoint_dir ${NODE_OUT}/ckpt ${NODE_REF100}
    -output ${NODE_OUT}/disk.h5)
# ... and the disk tier's gradients are the store mode's, bit for bit (the same run on the
# same 2 ranks, every state kept in RAM): dJ/dtheta and dJ/dy0 from the two HDF5 results.
rewind_h5_same(neuralode_p0_disk_same_store ${NODE_OUT}/disk.h5 ${NODE_OUT}/n100_np2.h5
  DATASETS /gradient/dJdtheta /gradient/dJdy0
  DEPENDS neuralode_p0_disk neuralode_p0_n100_store_np2)
rewind_mpi_expect(neuralode_p0_adaptive NP 2 RC zero
  REGEX "adaptive: [0-9]+ accepted.*reference gradient: [^=]*= [0-9.]+e-(0[5-9]|[1-9][0-9])"
  COMMAND ${NODE} ${NODE_P0} -stepper dopri5 -adaptive true -rtol 1e-6 -atol 1e-6 -dt 0.01
    -adjoint_mode checkpoint -checkpoint_schedule online -checkpoint_slots 4
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N1000_T1.bin -output ${NODE_OUT}/adaptive.h5)

# Bad input: a message naming the file or key, a non-zero exit on every rank, no output.
function(node_bad name regex)
  rewind_mpi_expect(neuralode_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND ${NODE} ${ARGN} -output ${NODE_OUT}/bad_${name}.h5)
  add_test(NAME neuralode_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${NODE_OUT}/bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(neuralode_bad_${name}_no_output PROPERTIES DEPENDS neuralode_bad_${name})
endfunction()
node_bad(missing_theta "weights .*nosuch.bin.: No such file.*theta_file from command line" -mode gradient
  -theta_file ${NODE_OUT}/nosuch.bin)
node_bad(wrong_magic "problem_T1.bin' is not a neural-ODE weights file: magic 'NODEPRB1'"
  -mode gradient -theta_file ${NODE_DATA}/problem_T1.bin)
node_bad(theta_as_problem "p0_theta.bin' is not a neural-ODE problem file"
  ${NODE_P0} -problem_file ${NODE_DATA}/p0_theta.bin)
node_bad(tf_conflict "key 'tf' = 2 \\(from command line\\) differs from T = 1" ${NODE_P0} -tf 2)
node_bad(widths "d_0 = 3 must be the state dimension d_L = 2" -widths 3,16,2)
node_bad(gradient_mismatch "compare_gradient.*another architecture" -mode gradient -widths 2,8,2
  -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin)
node_bad(theta_out_unwritable "nonexistent.*theta_out from command line" -epochs 1
  -theta_out /nonexistent/x.bin)
node_bad(train_frozen_theta "mode train learns theta, so key 'differentiate' \\(from command line\\) must list theta"
  -epochs 1 -differentiate y0)
node_bad(batch_too_large "key 'batch' = 1000 .* larger than data_points = 512" -batch 1000)
# a restart continues one gradient solve: refused in mode train, naming the key and the mode
# (an existing directory: a missing one is refused as such first)
file(MAKE_DIRECTORY ${NODE_OUT}/train_restart)
node_bad(train_restart "key 'restart_from' = '.*/train_restart' \\(from command line\\): in mode train \\(mode from [^)]*\\) a restart is not possible"
  -epochs 1 -checkpoint_disk_slots 2 -restart_from ${NODE_OUT}/train_restart)
# a weights file whose theta chunk is damaged (8 bytes inverted in its stored data, the file's
# structure intact): refused in one line naming the file and what failed, no HDF5 error stack,
# no output
add_test(NAME neuralode_damaged_theta_make
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_damage.py ${NODE_OUT}/n100_np2.h5 /model/theta
          ${NODE_OUT}/damaged_theta.h5)
set_tests_properties(neuralode_damaged_theta_make PROPERTIES
  DEPENDS neuralode_p0_n100_store_np2 SKIP_RETURN_CODE 77)
rewind_mpi_expect(neuralode_bad_damaged_theta NP 2 RC nonzero
  REGEX "damaged_theta.h5': reading /model/theta failed: the file is damaged.*theta_file from command line"
  FORBID "HDF5-DIAG"
  COMMAND ${NODE} -mode gradient -theta_file ${NODE_OUT}/damaged_theta.h5
    -output ${NODE_OUT}/bad_damaged_theta.h5)
set_tests_properties(neuralode_bad_damaged_theta PROPERTIES DEPENDS neuralode_damaged_theta_make)
add_test(NAME neuralode_bad_damaged_theta_no_output
  COMMAND ${CMAKE_COMMAND} -DFILE=${NODE_OUT}/bad_damaged_theta.h5 -DEXPECT_MISSING=1
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
set_tests_properties(neuralode_bad_damaged_theta_no_output PROPERTIES
  DEPENDS neuralode_bad_damaged_theta)
# fewer trajectories than ranks: refused up front, naming the key (a rank with none aborted in
# SUNDIALS' vector constructor)
node_bad(batch_fewer_than_ranks
  "key 'batch' = 1 \\(from command line\\) is fewer than the 2 ranks; every rank needs at least one trajectory"
  -epochs 1 -data_points 4 -batch 1 -widths 2,4,2)
node_bad(gradient_batch_fewer_than_ranks
  "key 'batch' gives 1 trajectories .*fewer than the 2 ranks.*batch from command line"
  -mode gradient -theta_file ${NODE_DATA}/p0_theta.bin -batch 1)
node_bad(sde_without_noise "stepper em draws noise, and noise_amplitude is 0" -stepper em)
node_bad(noise_with_ode_stepper "noise_amplitude 0.1 asks for a neural SDE, and stepper rk4"
  -noise_amplitude 0.1)

# Neural SDE (issue 12): training with stochastic Heun and additive noise, at 2 ranks, and the
# mean over 3 noise paths in mode gradient (the gradients themselves: test_neuralode).
rewind_mpi_expect(neuralode_sde_train NP 2 RC zero REGEX "training: 5 epochs.*x lower"
  COMMAND ${NODE} -stepper sheun -noise_amplitude 0.05 -epochs 5 -output ${NODE_OUT}/sde.h5)
# reversible Heun in its SDE form (Kidger et al.'s neural-SDE solver): the memory-free
# reversible adjoint rebuilds the states with the same noise redrawn (drift at rounding level)
rewind_mpi_expect(neuralode_sde_revheun_reversible NP 2 RC zero
  REGEX "adjoint mode reversible: 10 states rebuilt.*drift: max [0-9.]+e-1[5-7].*0 segments fell back"
  COMMAND ${NODE} -mode gradient -stepper revheun -noise_amplitude 0.1 -adjoint_mode reversible
    -output ${NODE_OUT}/sde_revheun.h5)
rewind_mpi_expect(neuralode_sde_noise_paths NP 2 RC zero
  REGEX "ensemble of 3 noise paths \\(seeds 4 \\.\\. 6\\).*dJ/dtheta"
  COMMAND ${NODE} -mode gradient -stepper em -noise_amplitude 0.1 -noise_seed 4 -noise_paths 3
    -output ${NODE_OUT}/sde_paths.h5)

# Reversible Heun on the neural ODE (issue 8): adjoint_mode reversible (states rebuilt by the
# exact inverse step, drift checked against anchors) against store mode with the same
# stepper: dL/dtheta to 1e-10 relative, at 1 and 2 ranks.
set(NODE_RH ${NODE_P0} -stepper revheun -dt 0.005)
rewind_mpi_expect(neuralode_revheun_store NP 1 RC zero REGEX "objective J"
  COMMAND ${NODE} ${NODE_RH} -adjoint_mode store -gradient_out ${NODE_OUT}/revheun_store.bin
    -output ${NODE_OUT}/revheun_store.h5)
foreach(np 1 2)
  rewind_mpi_expect(neuralode_revheun_reversible_np${np} NP ${np} RC zero
    REGEX "drift: max [0-9.e+-]+.*0 segments fell back.*reference gradient: [^=]*= [0-9.]+e-(1[1-9]|[2-9][0-9])"
    COMMAND ${NODE} ${NODE_RH} -adjoint_mode reversible
      -compare_gradient ${NODE_OUT}/revheun_store.bin -output ${NODE_OUT}/revheun_rev${np}.h5)
  set_tests_properties(neuralode_revheun_reversible_np${np} PROPERTIES
    DEPENDS neuralode_revheun_store)
endforeach()

# On the emulated device (issue 11): the MLP's products through the device's matrix product
# (cuBLAS on a GPU; the host BLAS here, with the device memory guarded so any host access to
# it faults), activations and sums as device bodies. P0 at N = 100 matches the independent
# reference to 1e-10 in store mode and under binomial checkpointing in device memory, at 1 and
# 2 ranks; dL/dtheta and dL/dy0 agree with the CPU run to 1e-13 (the products' sums in another
# order). Reversible Heun (states rebuilt, drift checked) and the SDE steppers run there too,
# and a short training lowers the loss.
foreach(np 1 2)
  rewind_mpi_expect(neuralode_device_store_np${np} NP ${np} RC zero
    REGEX "device: emulated.*${NODE_OK}"
    COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode store -device emulated
      -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin -output ${NODE_OUT}/dev_n100_np${np}.h5)
  add_test(NAME neuralode_device_store_np${np}_vs_cpu
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_relnorm.py
            ${NODE_OUT}/n100_np${np}.h5 ${NODE_OUT}/dev_n100_np${np}.h5 /gradient 1e-13)
  set_tests_properties(neuralode_device_store_np${np}_vs_cpu PROPERTIES
    DEPENDS "neuralode_p0_n100_store_np${np};neuralode_device_store_np${np}" SKIP_RETURN_CODE 77)
endforeach()
rewind_mpi_expect(neuralode_device_binomial_np2 NP 2 RC zero
  REGEX "device: emulated.*${NODE_J}.*checkpoints: device memory.*${NODE_GRAD}"
  COMMAND ${NODE} ${NODE_P0} -dt 0.01 -adjoint_mode checkpoint -checkpoint_slots 10 -device emulated
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin -output ${NODE_OUT}/dev_n100b.h5)
rewind_mpi_expect(neuralode_device_revheun_reversible NP 2 RC zero
  REGEX "device: emulated.*drift: max [0-9.e+-]+.*0 segments fell back.*reference gradient: [^=]*= [0-9.]+e-(1[1-9]|[2-9][0-9])"
  COMMAND ${NODE} ${NODE_RH} -adjoint_mode reversible -device emulated
    -compare_gradient ${NODE_OUT}/revheun_store.bin -output ${NODE_OUT}/dev_revheun.h5)
set_tests_properties(neuralode_device_revheun_reversible PROPERTIES DEPENDS neuralode_revheun_store)
# Every segment falls back (drift_tol below any drift): the segment's dL/dtheta terms, held on
# the device until the driver flushes them (rw_problem_params_defer), are dropped with the rest
# of its adjoint state and the segment is reversed again from checkpoints.
rewind_mpi_expect(neuralode_device_revheun_fallback NP 2 RC zero
  REGEX "device: emulated.*drift: .* 2 segments fell back.*reference gradient: [^=]*= [0-9.]+e-(1[1-9]|[2-9][0-9])"
  COMMAND ${NODE} ${NODE_RH} -adjoint_mode reversible -drift_tol 1e-300 -drift_action fallback
    -device emulated -compare_gradient ${NODE_OUT}/revheun_store.bin
    -output ${NODE_OUT}/dev_revheun_fb.h5)
set_tests_properties(neuralode_device_revheun_fallback PROPERTIES DEPENDS neuralode_revheun_store)
rewind_mpi_expect(neuralode_device_sde NP 2 RC zero
  REGEX "device: emulated.*dJ/dtheta"
  COMMAND ${NODE} -mode gradient -stepper sheun -noise_amplitude 0.1 -device emulated
    -output ${NODE_OUT}/dev_sde.h5)
rewind_mpi_expect(neuralode_device_train NP 2 RC zero
  REGEX "device: emulated.*training: 3 epochs.*x lower"
  COMMAND ${NODE} -epochs 3 -device emulated -output ${NODE_OUT}/dev_train.h5)

# theta_out / gradient_out that cannot be written (a full tmpfs; skipped without root): the
# HDF5 result is kept complete, the failed file is reported with errno's text and its key,
# every rank exits 1, nothing is left on the full disk.
add_test(NAME neuralode_save_full_disk_keeps_result
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/neuralode_save_full.sh ${MPIEXEC_EXECUTABLE} ${NODE}
          ${NODE_DATA} ${NODE_OUT})
set_tests_properties(neuralode_save_full_disk_keeps_result PROPERTIES
  ENVIRONMENT "${REWIND_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)

# An output that is the same file as an input or as another output is refused at start-up
# (exit 2, nothing written): compared by realpath, so './x' and 'x' match, and '<output>.partial'
# counts. The inputs are fresh copies (in NODE_OUT/paths, made by a fixture before the tests),
# which the refusals must leave unchanged.
set(NODE_PATHS ${NODE_OUT}/paths)
set(NODE_NEW_BAD gradient_out_is_theta_file theta_out_is_gradient_out theta_out_is_problem_file
  gradient_out_is_compare_gradient theta_out_is_deck_file theta_file_widths theta_file_activation
  theta_file_damping train_problem_file train_compare_gradient gradient_epochs
  gradient_problem_batch gradient_theta_file_seed)
set(stale "")
foreach(name IN LISTS NODE_NEW_BAD)
  string(APPEND stale " \"${NODE_OUT}/bad_${name}.h5\"")
endforeach()
file(WRITE ${NODE_OUT}/paths_setup.cmake
  "file(REMOVE_RECURSE \"${NODE_PATHS}\"${stale})\n"
  "file(COPY \"${NODE_DATA}/p0_theta.bin\" \"${NODE_DATA}/problem_T1.bin\" DESTINATION \"${NODE_PATHS}\")\n"
  "file(WRITE \"${NODE_PATHS}/deck.yaml\" \"mode: gradient\\n\")\n")
add_test(NAME neuralode_paths_setup COMMAND ${CMAKE_COMMAND} -P ${NODE_OUT}/paths_setup.cmake)
set_tests_properties(neuralode_paths_setup PROPERTIES FIXTURES_SETUP node_paths)
set(NODE_SAME "is the same file as")
node_bad(gradient_out_is_theta_file
  "key 'gradient_out' = './p0_theta.bin' \\(from command line\\) ${NODE_SAME} key 'theta_file' = 'p0_theta.bin' \\(from command line\\), which the run reads"
  -mode gradient -theta_file p0_theta.bin -gradient_out ./p0_theta.bin)
node_bad(theta_out_is_gradient_out
  "key 'theta_out' = 'x.bin' \\(from command line\\) ${NODE_SAME} key 'gradient_out' = '\\./x.bin' \\(from command line\\): one output would overwrite the other"
  -mode gradient -theta_out x.bin -gradient_out ./x.bin)
node_bad(theta_out_is_problem_file "key 'theta_out' = '[^']*paths/\\.\\./paths/problem_T1.bin' .*${NODE_SAME} key 'problem_file'"
  -mode gradient -theta_file p0_theta.bin -problem_file problem_T1.bin
  -theta_out ${NODE_PATHS}/../paths/problem_T1.bin)
node_bad(gradient_out_is_compare_gradient "key 'gradient_out' = 'g.bin' .*${NODE_SAME} key 'compare_gradient'"
  -mode gradient -gradient_out g.bin -compare_gradient ${NODE_PATHS}/g.bin)
node_bad(theta_out_is_deck_file "key 'theta_out' = 'deck.yaml' .*${NODE_SAME} the deck file 'deck.yaml'"
  deck.yaml -theta_out deck.yaml)
foreach(name gradient_out_is_theta_file theta_out_is_gradient_out theta_out_is_problem_file
             gradient_out_is_compare_gradient theta_out_is_deck_file)
  set_tests_properties(neuralode_bad_${name} PROPERTIES WORKING_DIRECTORY ${NODE_PATHS}
    FIXTURES_REQUIRED node_paths)
endforeach()
rewind_mpi_expect(neuralode_bad_output_is_theta_file NP 2 RC nonzero
  REGEX "key 'output' = '[^']*/p0_theta.bin' \\(from command line\\) ${NODE_SAME} key 'theta_file' = 'p0_theta.bin'"
  COMMAND ${NODE} -mode gradient -theta_file p0_theta.bin -output ${NODE_PATHS}/p0_theta.bin)
rewind_mpi_expect(neuralode_bad_output_partial_is_theta_out NP 2 RC nonzero
  REGEX "the temporary file '[^']*/r.h5.partial' of key 'output' = '[^']*/r.h5' \\(from command line\\) ${NODE_SAME} key 'theta_out'"
  COMMAND ${NODE} -epochs 1 -theta_out r.h5.partial -output ${NODE_PATHS}/r.h5)
foreach(name output_is_theta_file output_partial_is_theta_out)
  set_tests_properties(neuralode_bad_${name} PROPERTIES WORKING_DIRECTORY ${NODE_PATHS}
    FIXTURES_REQUIRED node_paths)
endforeach()
add_test(NAME neuralode_bad_paths_inputs_unchanged
  COMMAND ${CMAKE_COMMAND} -E compare_files ${NODE_PATHS}/p0_theta.bin ${NODE_DATA}/p0_theta.bin)
add_test(NAME neuralode_bad_paths_problem_unchanged
  COMMAND ${CMAKE_COMMAND} -E compare_files ${NODE_PATHS}/problem_T1.bin
          ${NODE_DATA}/problem_T1.bin)
set_tests_properties(neuralode_bad_paths_inputs_unchanged neuralode_bad_paths_problem_unchanged
  PROPERTIES FIXTURES_REQUIRED node_paths DEPENDS
  "neuralode_bad_gradient_out_is_theta_file;neuralode_bad_output_is_theta_file;neuralode_bad_theta_out_is_problem_file")

# Keys the mode ignores are refused when the user set them (defaults, also the embedded
# deck's, are not): the architecture keys against theta_file's architecture (as tf against
# problem_file's T), training keys in mode gradient, mode-gradient keys in mode train, the data
# set's keys with problem_file. Keys that agree with the file are accepted.
node_bad(theta_file_widths
  "key 'widths' = 2,8,2 \\(from command line\\) differs from the architecture of theta_file '[^']*p0_theta.bin' \\(widths 2,64,64,2, activation tanh"
  ${NODE_P0} -widths 2,8,2 -activation relu)
node_bad(theta_file_activation
  "key 'activation' = relu \\(from command line\\) differs from the architecture of theta_file"
  ${NODE_P0} -activation relu)
node_bad(theta_file_damping "key 'damping' = 0.5 \\(from command line\\) differs" ${NODE_P0}
  -damping 0.5)
node_bad(train_problem_file
  "key 'problem_file' \\(from command line\\) has no effect in mode train \\(mode from default deck\\)"
  -epochs 1 -problem_file ${NODE_DATA}/problem_T1.bin)
node_bad(train_compare_gradient "key 'compare_gradient' \\(from command line\\) has no effect in mode train"
  -epochs 1 -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin)
node_bad(gradient_epochs
  "key 'epochs' \\(from command line\\) has no effect in mode gradient \\(mode from command line\\)"
  -mode gradient -epochs 3)
node_bad(gradient_problem_batch "key 'batch' \\(from command line\\) has no effect with problem_file"
  ${NODE_P0} -batch 3)
node_bad(gradient_theta_file_seed "key 'seed' \\(from command line\\) has no effect in mode gradient with theta_file"
  ${NODE_P0} -seed 3)
foreach(name IN LISTS NODE_NEW_BAD)
  set_tests_properties(neuralode_bad_${name} PROPERTIES FIXTURES_REQUIRED node_paths)
endforeach()
rewind_mpi_expect(neuralode_p0_matching_arch_keys NP 1 RC zero REGEX "${NODE_OK}"
  COMMAND ${NODE} ${NODE_P0} -widths 2,64,64,2 -activation tanh -damping 0 -dt 0.01
    -compare_gradient ${NODE_DATA}/p0_grad_rk38_N100_T1.bin -output ${NODE_OUT}/p0_arch_keys.h5)

# theta_file / problem_file / compare_gradient are read on rank 0 and broadcast: with the
# ranks in different working directories (MPMD) and relative paths, a file that only rank 0
# sees is enough, and one that rank 0 does not see fails on every rank with rank 0's message
# (it used to stop the rank that could not read alone, and the other waited forever).
set(NODE_WA ${NODE_OUT}/wdir_a)
set(NODE_WB ${NODE_OUT}/wdir_b)
file(MAKE_DIRECTORY ${NODE_WA} ${NODE_WB})
file(COPY ${NODE_DATA}/p0_theta.bin ${NODE_DATA}/problem_T1.bin ${NODE_DATA}/p0_grad_rk38_N100_T1.bin
  DESTINATION ${NODE_WA})
set(NODE_REL -mode gradient -theta_file p0_theta.bin -problem_file problem_T1.bin -stepper rk38
  -dt 0.01 -compare_gradient p0_grad_rk38_N100_T1.bin)
function(node_mpmd name rc regex wd0 wd1)
  rewind_mpi_expect(neuralode_${name} NP 1 RC ${rc} REGEX "${regex}"
    COMMAND --wdir ${wd0} ${NODE} ${ARGN} -output ${NODE_OUT}/${name}.h5
      : -n 1 --wdir ${wd1} ${NODE} ${ARGN} -output ${NODE_OUT}/${name}.h5)
  set_tests_properties(neuralode_${name} PROPERTIES PROCESSORS 2 TIMEOUT 120)
endfunction()
node_mpmd(files_on_rank0_only zero "${NODE_OK}" ${NODE_WA} ${NODE_WB} ${NODE_REL})
node_mpmd(theta_file_missing_on_rank0 nonzero
  "error: neural-ODE weights 'p0_theta.bin': No such file or directory \\(theta_file from command line\\)"
  ${NODE_WB} ${NODE_WA} ${NODE_REL})
node_mpmd(problem_file_missing_on_rank0 nonzero
  "error: neural-ODE problem 'problem_T1.bin': No such file or directory \\(problem_file from command line\\)"
  ${NODE_WB} ${NODE_WA} -mode gradient -theta_file ${NODE_DATA}/p0_theta.bin
  -problem_file problem_T1.bin)
node_mpmd(compare_gradient_missing_on_rank0 nonzero
  "error: neural-ODE gradient 'p0_grad_rk38_N100_T1.bin': No such file or directory \\(compare_gradient from command line\\)"
  ${NODE_WB} ${NODE_WA} -mode gradient -theta_file ${NODE_DATA}/p0_theta.bin
  -problem_file ${NODE_DATA}/problem_T1.bin -compare_gradient p0_grad_rk38_N100_T1.bin)
