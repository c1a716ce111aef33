# Output paths of the apps (the app kit: every app alike).
#  1. An output that is the same file as the run's own deck (the deck file, a symbolic or hard
#     link to it, a file given with -options_file, the deck whose own `output` names itself) or
#     whose '.partial' is, or that is named like the disk checkpoints in their directory, is
#     refused at start-up: exit 2 on every rank, both files named, nothing written, the decks
#     unchanged (compared with pristine copies).
#  2. Ranks started in different working directories (an MPMD launch, a --wdir each) with a
#     relative output write one file at rank 0's location instead of hanging in the parallel
#     HDF5 create (a timeout guard fails the test if it hangs).
# The files are made fresh by a fixture before the tests (paths_setup).
set(PATHS_DIR ${CMAKE_CURRENT_BINARY_DIR}/out_paths/run)
set(PATHS_PRISTINE ${CMAKE_CURRENT_BINARY_DIR}/out_paths/pristine)
set(PATHS_MPMD_A ${CMAKE_CURRENT_BINARY_DIR}/out_paths/mpmd_a)
set(PATHS_MPMD_B ${CMAKE_CURRENT_BINARY_DIR}/out_paths/mpmd_b)
set(PATHS_DECKS deck.yaml self.yaml opts.txt r.h5.partial case.xmf h.xmf)
# a working directory deeper than Open MPI 4.1's 256-byte file-name buffer (see the end)
string(REPEAT "d" 200 PATHS_DEEP_NAME)
set(PATHS_DEEP ${CMAKE_CURRENT_BINARY_DIR}/out_paths/${PATHS_DEEP_NAME}/${PATHS_DEEP_NAME})
set(PATHS_SETUP ${CMAKE_CURRENT_BINARY_DIR}/out_paths_setup.cmake)
file(WRITE ${PATHS_SETUP} "
foreach(d \"${PATHS_DIR}\" \"${PATHS_PRISTINE}\" \"${PATHS_MPMD_A}\" \"${PATHS_MPMD_B}\" \"${PATHS_DEEP}\")
  file(REMOVE_RECURSE \${d})
  file(MAKE_DIRECTORY \${d})
endforeach()
file(MAKE_DIRECTORY \"${PATHS_DIR}/ckpt\" \"${PATHS_MPMD_A}/sub\")
file(WRITE \"${PATHS_PRISTINE}/deck.yaml\" \"tf: 0.01\\ndt: 0.001\\n\")
file(WRITE \"${PATHS_PRISTINE}/self.yaml\" \"tf: 0.01\\ndt: 0.001\\noutput: self.yaml\\n\")
file(WRITE \"${PATHS_PRISTINE}/opts.txt\" \"-tf 0.01\\n\")
file(WRITE \"${PATHS_PRISTINE}/r.h5.partial\" \"-tf 0.01\\n-dt 0.001\\n\")
file(WRITE \"${PATHS_PRISTINE}/case.xmf\" \"-tf 0.01\\n-dt 0.001\\n\")
file(WRITE \"${PATHS_PRISTINE}/h.xmf\" \"-tf 0.01\\n\")
file(COPY \"${PATHS_PRISTINE}/\" DESTINATION \"${PATHS_DIR}\")
file(CREATE_LINK deck.yaml \"${PATHS_DIR}/link.h5\" SYMBOLIC)
file(CREATE_LINK \"${PATHS_DIR}/deck.yaml\" \"${PATHS_DIR}/hard.h5\")
")
add_test(NAME paths_setup COMMAND ${CMAKE_COMMAND} -P ${PATHS_SETUP})
set_tests_properties(paths_setup PROPERTIES FIXTURES_SETUP paths_files)

# Every rank's exit status, printed by a shell around it (a deck error is 2 on every rank).
set(PATHS_RANK_STATUS [[ "$0" "$@" || (echo "rank exit status $?" && false) ]])
set(PATHS_SAME "is the same file as the deck file")
set(PATHS_READS "which the run reads: writing it would overwrite or replace the input; give 'output' another file name")
set(PATHS_REFUSED "")
function(paths_bad name np app regex)
  set(status "rank exit status 2\n")
  set(rc nonzero)
  if(np EQUAL 2)
    set(status "rank exit status 2\n.*rank exit status 2\n")
    # Each rank's own status is read from its shell (both must say 2); mpiexec's own status
    # is not checked here, since with the setting below Open MPI 4.1 returns 0 for them.
    set(rc any)
  endif()
  rewind_mpi_expect(paths_${name} NP ${np} RC ${rc} REGEX "${status}.*${regex}"
    FORBID "objective J|rank exit status [013-9]"
    COMMAND sh -c "${PATHS_RANK_STATUS}" $<TARGET_FILE:rewind-${app}> ${ARGN})
  set_tests_properties(paths_${name} PROPERTIES WORKING_DIRECTORY ${PATHS_DIR}
    FIXTURES_REQUIRED paths_files)
  # Open MPI kills the other ranks when the first one exits non-zero, sometimes before their
  # shells print their status (the test then saw one status of two under load): with two
  # ranks, let every rank finish, so each one's own exit status is what the test reads.
  if(np EQUAL 2)
    set_property(TEST paths_${name} APPEND PROPERTY ENVIRONMENT
      "OMPI_MCA_orte_abort_on_non_zero_status=0")
  endif()
  set(PATHS_REFUSED ${PATHS_REFUSED} paths_${name} PARENT_SCOPE)
endfunction()

# The deck file given by its absolute path, the output as './deck.yaml' from the run directory:
# every app, 1 and 2 ranks.
foreach(app grayscott heat wave burgers ode)
  foreach(np 1 2)
    paths_bad(${app}_output_is_deck_np${np} ${np} ${app}
      "key 'output' = '\\./deck.yaml' \\(from command line\\) ${PATHS_SAME} '[^']*/run/deck.yaml', ${PATHS_READS}"
      ${PATHS_DIR}/deck.yaml -output ./deck.yaml)
  endforeach()
endforeach()
# A symbolic link and a hard link to the deck.
paths_bad(grayscott_output_symlink_to_deck_np2 2 grayscott
  "key 'output' = 'link.h5' \\(from command line\\) ${PATHS_SAME} 'deck.yaml', ${PATHS_READS}"
  deck.yaml -output link.h5)
paths_bad(heat_output_symlink_to_deck_np1 1 heat
  "key 'output' = 'link.h5' \\(from command line\\) ${PATHS_SAME} 'deck.yaml'" deck.yaml
  -output link.h5)
paths_bad(wave_output_hardlink_to_deck_np2 2 wave
  "key 'output' = 'hard.h5' \\(from command line\\) ${PATHS_SAME} 'deck.yaml', ${PATHS_READS}"
  deck.yaml -output hard.h5)
paths_bad(burgers_output_hardlink_to_deck_np1 1 burgers
  "key 'output' = '[^']*/hard.h5' \\(from command line\\) ${PATHS_SAME} 'deck.yaml'" deck.yaml
  -output ${PATHS_DIR}/hard.h5)
# The deck's own output key names the deck.
paths_bad(heat_deck_output_names_itself_np2 2 heat
  "key 'output' = 'self.yaml' \\(from deck file 'self.yaml'\\) ${PATHS_SAME} 'self.yaml'"
  self.yaml)
# A deck given with -options_file after the first one.
paths_bad(grayscott_output_is_options_file_np2 2 grayscott
  "key 'output' = 'opts.txt' \\(from command line\\) ${PATHS_SAME} 'opts.txt'" deck.yaml
  -options_file opts.txt -output opts.txt)
# The temporary file the output is written as is the deck.
paths_bad(ode_output_partial_is_deck_np2 2 ode
  "the temporary file 'r.h5.partial' of key 'output' = 'r.h5' \\(from command line\\) ${PATHS_SAME} 'r.h5.partial'"
  r.h5.partial -output r.h5)
# The result's XDMF sidecar is the deck: a grid app would write it, the others remove it.
paths_bad(ode_output_sidecar_is_deck_np1 1 ode
  "the XDMF sidecar 'case.xmf' of key 'output' = 'case.h5' \\(from command line\\) ${PATHS_SAME} 'case.xmf'"
  case.xmf -output case.h5)
paths_bad(heat_output_sidecar_is_deck_np2 2 heat
  "the XDMF sidecar 'h.xmf' of key 'output' = 'h.h5' \\(from command line\\) ${PATHS_SAME} 'h.xmf'"
  h.xmf -output h.h5)
# Named like the disk checkpoints in their directory.
paths_bad(burgers_output_is_checkpoint_np2 2 burgers
  "key 'output' = 'ckpt/rewind-ckpt-mine.h5' \\(from command line\\) is in the directory of the disk checkpoints, key 'checkpoint_dir' = 'ckpt' \\(from command line\\), and named like them"
  deck.yaml -adjoint_mode checkpoint -checkpoint_slots 4 -checkpoint_disk_slots 2
  -checkpoint_dir ckpt -output ckpt/rewind-ckpt-mine.h5)

# After the refusals: the decks are unchanged and nothing was written.
foreach(deck IN LISTS PATHS_DECKS)
  add_test(NAME paths_unchanged_${deck}
    COMMAND ${CMAKE_COMMAND} -E compare_files ${PATHS_DIR}/${deck} ${PATHS_PRISTINE}/${deck})
  set_tests_properties(paths_unchanged_${deck} PROPERTIES FIXTURES_REQUIRED paths_files
    DEPENDS "${PATHS_REFUSED}")
endforeach()
set(absent "")
foreach(f deck.yaml.partial deck.yaml.xmf link.h5.partial link.xmf hard.h5.partial hard.xmf
          self.yaml.partial self.yaml.xmf opts.txt.partial opts.txt.xmf r.h5 r.xmf case.h5
          case.h5.partial case.xmf.partial h.h5 h.h5.partial h.xmf.partial)
  string(APPEND absent "${PATHS_DIR}/${f}|")
endforeach()
add_test(NAME paths_refused_left_nothing
  COMMAND ${CMAKE_COMMAND} "-DABSENT=${absent}" "-DEMPTY_DIRS=${PATHS_DIR}/ckpt"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_no_output.cmake)
set_tests_properties(paths_refused_left_nothing PROPERTIES FIXTURES_REQUIRED paths_files
  DEPENDS "${PATHS_REFUSED}")

# MPMD: rank 0 in mpmd_a, rank 1 in mpmd_b, a relative output (and one in a directory only
# rank 0's working directory has): one result at rank 0's location, nothing in mpmd_b.
set(PATHS_GS $<TARGET_FILE:rewind-grayscott> -N 16 -tf 0.01 -dt 0.001)
set(PATHS_HEAT $<TARGET_FILE:rewind-heat> -N 16 -tf 0.01 -dt 0.001)
rewind_mpi_expect(paths_mpmd_relative_output NP 1 RC zero REGEX "objective J.*output: r.h5"
  COMMAND --wdir ${PATHS_MPMD_A} ${PATHS_GS} -output r.h5
    : -n 1 --wdir ${PATHS_MPMD_B} ${PATHS_GS} -output r.h5)
rewind_mpi_expect(paths_mpmd_relative_output_subdir NP 1 RC zero REGEX "objective J"
  COMMAND --wdir ${PATHS_MPMD_A} ${PATHS_HEAT} -output sub/h.h5
    : -n 1 --wdir ${PATHS_MPMD_B} ${PATHS_HEAT} -output sub/h.h5)
set(PATHS_MPMD paths_mpmd_relative_output paths_mpmd_relative_output_subdir)
set_tests_properties(${PATHS_MPMD} PROPERTIES PROCESSORS 2 TIMEOUT 60 FIXTURES_REQUIRED paths_files)
add_test(NAME paths_mpmd_result_at_rank0
  COMMAND ${CMAKE_COMMAND} -DFILE=${PATHS_MPMD_A}/r.h5 "-DNEEDLES=objective,deck"
          "-DDATASETS=/gradient/dJdy0/u,/state/final/v"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
add_test(NAME paths_mpmd_sidecar_at_rank0
  COMMAND ${CMAKE_COMMAND} -DMODE=xmf -DXMF=${PATHS_MPMD_A}/r.xmf
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_xdmf.cmake)
add_test(NAME paths_mpmd_subdir_result_at_rank0
  COMMAND ${CMAKE_COMMAND} -DFILE=${PATHS_MPMD_A}/sub/h.h5 "-DNEEDLES=objective,deck"
          "-DDATASETS=/gradient/dJdkappa,/state/u"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
add_test(NAME paths_mpmd_nothing_at_rank1
  COMMAND ${CMAKE_COMMAND} "-DEMPTY_DIRS=${PATHS_MPMD_B}"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_no_output.cmake)
set_tests_properties(paths_mpmd_result_at_rank0 paths_mpmd_sidecar_at_rank0
  paths_mpmd_subdir_result_at_rank0 paths_mpmd_nothing_at_rank1 PROPERTIES
  FIXTURES_REQUIRED paths_files DEPENDS "${PATHS_MPMD}" SKIP_REGULAR_EXPRESSION "SKIPPED:")

# A relative output from a working directory whose absolute path is longer than 256 bytes:
# the ranks share it, so the name is opened as given (made absolute, Open MPI 4.1's
# shared-file-pointer component would abort the process on it).
rewind_mpi_expect(paths_deep_cwd_relative_output NP 2 RC zero REGEX "objective J.*output: r.h5"
  COMMAND $<TARGET_FILE:rewind-grayscott> -tf 1 -output r.h5)
set_tests_properties(paths_deep_cwd_relative_output PROPERTIES WORKING_DIRECTORY ${PATHS_DEEP}
  FIXTURES_REQUIRED paths_files TIMEOUT 60)
add_test(NAME paths_deep_cwd_result
  COMMAND h5dump -A ${PATHS_DEEP}/r.h5)
set_tests_properties(paths_deep_cwd_result PROPERTIES DEPENDS paths_deep_cwd_relative_output
  FIXTURES_REQUIRED paths_files PASS_REGULAR_EXPRESSION "HDF5 .*r.h5")
# A name longer than Open MPI 4.1 can open (an absolute path through the deep directory) is
# refused at start-up, on every rank, instead of the job aborting in the collective create.
rewind_mpi_expect(paths_name_too_long_for_mpi NP 2 RC any
  REGEX "rank exit status 2\n.*rank exit status 2\n.*the file MPI opens \\(the output\\.partial\\) has a name of [0-9]+ characters, longer than 230, on which Open MPI [0-9.]+ aborts the job"
  FORBID "objective J|buffer overflow"
  COMMAND sh -c "${PATHS_RANK_STATUS}" $<TARGET_FILE:rewind-ode> -tf 0.1
          -output ${PATHS_DEEP}/long.h5)
set_tests_properties(paths_name_too_long_for_mpi PROPERTIES FIXTURES_REQUIRED paths_files
  TIMEOUT 60)
set_property(TEST paths_name_too_long_for_mpi APPEND PROPERTY ENVIRONMENT
  "OMPI_MCA_orte_abort_on_non_zero_status=0")
add_test(NAME paths_name_too_long_left_nothing
  COMMAND ${CMAKE_COMMAND} "-DABSENT=${PATHS_DEEP}/long.h5|${PATHS_DEEP}/long.h5.partial|"
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_no_output.cmake)
set_tests_properties(paths_name_too_long_left_nothing PROPERTIES FIXTURES_REQUIRED paths_files
  DEPENDS paths_name_too_long_for_mpi)
