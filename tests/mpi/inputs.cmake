# Input validation of the apps (rewind-grayscott, rewind-burgers) at 1 and 2 ranks: each
# mistake is refused before the first step with a message naming the key, the value and the
# problem, a non-zero exit (a deck error) and nothing left behind.
set(IN_OUT ${CMAKE_CURRENT_BINARY_DIR}/out_inputs)
set(IN_DECKS ${PROJECT_SOURCE_DIR}/tests/decks)
file(MAKE_DIRECTORY ${IN_OUT}/existing_dir ${IN_OUT}/blocked.h5.partial)
file(WRITE ${IN_OUT}/plainfile "a regular file, not a directory\n")
set(IN_APPS grayscott burgers)
set(IN_EXE_grayscott $<TARGET_FILE:rewind-grayscott>)
set(IN_EXE_burgers $<TARGET_FILE:rewind-burgers>)
# Small, quick problems: if a check let a run through, it would still finish in seconds.
set(IN_ARGS -N 16 -tf 0.01 -dt 0.001)

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
      COMMAND ${exe} ${IN_DECKS}/repeat_app.yaml -output ${IN_OUT}/${app}_repeated_yaml.h5)
    rewind_mpi_expect(inputs_${app}_repeated_opts_np${np} NP ${np} RC nonzero
      REGEX "repeat_app.opts' sets key 'N' twice: on line 2 and again on line 4"
      FORBID "objective J|grid on"
      COMMAND ${exe} ${IN_DECKS}/repeat_app.opts -output ${IN_OUT}/${app}_repeated_opts.h5)
    foreach(t output_is_dir output_under_file output_missing_dir output_partial_blocked
              repeated_yaml repeated_opts)
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
  foreach(t repeated_yaml repeated_opts)
    string(APPEND absent "|${IN_OUT}/${app}_${t}.h5|${IN_OUT}/${app}_${t}.h5.partial")
  endforeach()
endforeach()
add_test(NAME inputs_nothing_left_behind
  COMMAND ${CMAKE_COMMAND} "-DABSENT=${absent}"
          "-DEMPTY_DIRS=${IN_OUT}/existing_dir|${IN_OUT}/blocked.h5.partial"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_no_output.cmake)
set_tests_properties(inputs_nothing_left_behind PROPERTIES DEPENDS "${IN_REFUSED}")
