# Input validation of the apps (rewind-grayscott, rewind-burgers) at 1 and 2 ranks: each
# mistake is refused before the first step with a message naming the key, the value and the
# problem, a non-zero exit (a deck error) and nothing left behind; a run let through past the
# stability limit stops at the first blow-up test.
set(IN_OUT ${CMAKE_CURRENT_BINARY_DIR}/out_inputs)
set(IN_DECKS ${PROJECT_SOURCE_DIR}/tests/decks)
file(MAKE_DIRECTORY ${IN_OUT}/existing_dir ${IN_OUT}/blocked.h5.partial)
file(WRITE ${IN_OUT}/plainfile "a regular file, not a directory\n")
set(IN_APPS grayscott burgers)
set(IN_EXE_grayscott $<TARGET_FILE:rewind-grayscott>)
set(IN_EXE_burgers $<TARGET_FILE:rewind-burgers>)
# Small, quick problems: if a check let a run through, it would still finish in seconds.
set(IN_ARGS -N 16 -tf 0.01 -dt 0.001)

# 500 steps past the stability limit: Gray-Scott at N = 256 with its default dt 0.5 (limit
# 0.41 with rk4), Burgers at dt 0.01 (limit 0.0033).
set(IN_BLOWUP_grayscott -N 256)
set(IN_BLOWUP_burgers -dt 0.01 -tf 5)

set(IN_REFUSED "")
foreach(app IN LISTS IN_APPS)
  foreach(np 1 2)
    set(exe ${IN_EXE_${app}})
    # 1. Output paths that cannot be written are refused before the run (not at the rename).
    rewind_mpi_expect(inputs_${app}_output_is_dir_np${np} NP ${np} RC nonzero
      REGEX "output '[^']*existing_dir' is an existing directory.*output from command line.*invalid input deck"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_ARGS} -output ${IN_OUT}/existing_dir)
    rewind_mpi_expect(inputs_${app}_output_under_file_np${np} NP ${np} RC nonzero
      REGEX "output '[^']*plainfile/out.h5': '[^']*plainfile' is not a directory.*output from command line"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_ARGS} -output ${IN_OUT}/plainfile/out.h5)
    rewind_mpi_expect(inputs_${app}_output_missing_dir_np${np} NP ${np} RC nonzero
      REGEX "output '[^']*no_such_dir/out.h5': directory '[^']*no_such_dir' does not exist"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_ARGS} -output ${IN_OUT}/no_such_dir/out.h5)
    rewind_mpi_expect(inputs_${app}_output_partial_blocked_np${np} NP ${np} RC nonzero
      REGEX "blocked.h5.partial', which the run writes, is an existing directory"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_ARGS} -output ${IN_OUT}/blocked.h5)
    # 2. A deck that sets a key twice names the file, the key and both lines.
    rewind_mpi_expect(inputs_${app}_repeated_yaml_np${np} NP ${np} RC nonzero
      REGEX "repeat_app.yaml' sets key 'N' twice: on line 2 and again on line 6.*repeat_app.yaml' sets key 'adjoint_mode' twice: on line 5 and again on line 7"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_DECKS}/repeat_app.yaml -output ${IN_OUT}/${app}_repeated_yaml_np${np}.h5)
    rewind_mpi_expect(inputs_${app}_repeated_opts_np${np} NP ${np} RC nonzero
      REGEX "repeat_app.opts' sets key 'N' twice: on line 2 and again on line 4"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_DECKS}/repeat_app.opts -output ${IN_OUT}/${app}_repeated_opts_np${np}.h5)
    # 3. dt above the stepper's explicit stability limit: refused at start-up naming dt, the
    # limit and the stepper; with stability_check: warn it runs, says by how much, and the
    # blow-up is caught after the first step; with off, an unstable run stops early (well
    # before its 500 steps), not after the forward sweep.
    rewind_mpi_expect(inputs_${app}_dt_unstable_np${np} NP ${np} RC nonzero
      REGEX "dt = 1e\\+300 \\(from command line; one step of tf - t0 = [0-9.]+\\) exceeds the explicit stability limit [0-9.e+-]+ of stepper heun.*stability_check: warn.*invalid input deck"
      FORBID "objective J|grid on"
      COMMAND ${exe} -N 16 -stepper heun -dt 1e300 -output ${IN_OUT}/${app}_dt_unstable_np${np}.h5)
    rewind_mpi_expect(inputs_${app}_dt_warn_np${np} NP ${np} RC nonzero
      REGEX "warning: dt = 1e\\+300 exceeds the explicit stability limit [0-9.e+-]+ of stepper rk4 by a factor [0-9.e+]+ \\(stability_check: warn\\).*blew up at step 1 "
      FORBID "objective J"
      COMMAND ${exe} -N 16 -dt 1e300 -tf 1e300 -stability_check warn -output ${IN_OUT}/${app}_dt_warn_np${np}.h5)
    rewind_mpi_expect(inputs_${app}_blowup_early_np${np} NP ${np} RC nonzero
      REGEX "blew up at step ([1-9]|[1-9][0-9]|[1-3][0-9][0-9]) \\(t = .*reduce dt"
      FORBID "objective J"
      COMMAND ${exe} ${IN_BLOWUP_${app}} -stability_check off -adjoint_mode store
              -output ${IN_OUT}/${app}_blowup_early_np${np}.h5)
    foreach(t output_is_dir output_under_file output_missing_dir output_partial_blocked
              repeated_yaml repeated_opts dt_unstable dt_warn blowup_early)
      list(APPEND IN_REFUSED inputs_${app}_${t}_np${np})
    endforeach()
  endforeach()
endforeach()

# Nothing of the refused runs is left: no partial files or sidecars, the directories in the
# way untouched and empty.
set(absent "${IN_OUT}/existing_dir.partial|${IN_OUT}/existing_dir.xmf|${IN_OUT}/existing_dir.xmf.partial")
string(APPEND absent "|${IN_OUT}/no_such_dir|${IN_OUT}/blocked.h5|${IN_OUT}/blocked.xmf")
string(APPEND absent "|${IN_OUT}/blocked.xmf.partial")
foreach(app IN LISTS IN_APPS)
  foreach(t repeated_yaml repeated_opts dt_unstable dt_warn blowup_early)
    foreach(np 1 2)
      string(APPEND absent "|${IN_OUT}/${app}_${t}_np${np}.h5|${IN_OUT}/${app}_${t}_np${np}.h5.partial")
      string(APPEND absent "|${IN_OUT}/${app}_${t}_np${np}.xmf")
    endforeach()
  endforeach()
endforeach()
add_test(NAME inputs_nothing_left_behind
  COMMAND ${CMAKE_COMMAND} "-DABSENT=${absent}"
          "-DEMPTY_DIRS=${IN_OUT}/existing_dir|${IN_OUT}/blocked.h5.partial"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_no_output.cmake)
set_tests_properties(inputs_nothing_left_behind PROPERTIES DEPENDS "${IN_REFUSED}")
