# The disk tier (issue 7): every app gives the store-everything gradient bit for bit under
# the two-level RAM + disk schedule (several budgets, stages, measured costs), at 1, 2 and 4
# ranks; faults (a flipped byte, a truncation, a full disk, a missing or occupied
# directory, budgets below a snapshot or above the free space) end the run cleanly on every
# rank with a clear message and nothing left behind.
set(DISK_SH ${PROJECT_SOURCE_DIR}/tests/scripts/disk_tier.sh)
set(DISK_ARGS_grayscott -N 16 -tf 20 -dt 0.2)
set(DISK_ARGS_heat -N 16)
# a deck RAM budget would override checkpoint_slots: the script sets checkpoint_ram 0
set(DISK_ARGS_ode -tf 3)
# rewind-neuralode: one gradient solve (mode train runs many and refuses restart_from)
set(DISK_ARGS_neuralode -mode gradient -tf 1)
foreach(name grayscott heat wave burgers ode)
  foreach(np 1 2 4)
    add_test(NAME disk_tier_${name}_np${np}
      COMMAND ${DISK_SH} ${MPIEXEC_EXECUTABLE} ${np} $<TARGET_FILE:rewind-${name}> ${DISK_ARGS_${name}})
    # the online-with-disk cases at 1 and 2 ranks (suite time)
    set(env "${REWIND_TEST_ENV}")
    if(np LESS 4)
      list(APPEND env DISK_TIER_ONLINE=1)
    endif()
    set_tests_properties(disk_tier_${name}_np${np} PROPERTIES ENVIRONMENT "${env}"
      TIMEOUT 300 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
  endforeach()
endforeach()
foreach(np 1 2)
  add_test(NAME disk_faults_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_faults.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-grayscott> -N 16 -tf 20 -dt 0.2)
  set_tests_properties(disk_faults_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    TIMEOUT 300 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()
# The same faults for an adaptive Gray-Scott run under the online schedule (28 steps): the
# disk fills at its time record's write (the message says so, the files are kept, and the
# restart gives the clean run's J); the flip and truncation hit the 8th write, one the
# backward sweep reads.
add_test(NAME disk_faults_adaptive_np2
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/disk_faults.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:rewind-grayscott> ${DISK_ARGS_grayscott} -stepper dopri5 -adaptive true
          -rtol 1e-10 -atol 1e-12)
set_tests_properties(disk_faults_adaptive_np2 PROPERTIES
  ENVIRONMENT "${REWIND_TEST_ENV};DISK_FAULTS_SCHEDULE=online;DISK_FAULTS_DAMAGE=8"
  TIMEOUT 300 PROCESSORS 2 PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
# Restart (issue 7): runs killed in the forward sweep (SIGKILL of rank 0, SIGTERM of every
# rank, a torn write) continue with -restart_from and give the store-everything gradient bit
# for bit; restarts with another deck or rank count are refused naming what differs.
# (rewind-neuralode at 2 ranks only: its per-rank files and resume are the other apps')
set(RESTART_NP_neuralode 2)
foreach(name grayscott heat wave burgers ode neuralode)
  if(NOT DEFINED RESTART_NP_${name})
    set(RESTART_NP_${name} 1 2 4)
  endif()
  foreach(np ${RESTART_NP_${name}})
    add_test(NAME restart_${name}_np${np}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/restart.sh ${MPIEXEC_EXECUTABLE} ${np}
              $<TARGET_FILE:rewind-${name}> ${DISK_ARGS_${name}})
    # every case for Gray-Scott at 1 and 2 ranks; SIGKILL + torn write elsewhere (suite time)
    set(env "${REWIND_TEST_ENV}")
    if(np EQUAL 4 OR NOT name STREQUAL "grayscott")
      list(APPEND env RESTART_QUICK=1)
    endif()
    set_tests_properties(restart_${name}_np${np} PROPERTIES ENVIRONMENT "${env}"
      TIMEOUT 400 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
  endforeach()
endforeach()
# The online schedule with a disk tier at a fixed step (its period 1 here, doubled three
# times as the 4 disk slots fill over 100 steps): kills at its 2nd and 12th disk write (resume
# points at steps 1 and 48), every case, at 2 ranks (1 rank: the adaptive rewind-ode below).
add_test(NAME restart_grayscott_online_np2
  COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/restart.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:rewind-grayscott> ${DISK_ARGS_grayscott})
set_tests_properties(restart_grayscott_online_np2 PROPERTIES
  ENVIRONMENT "${REWIND_TEST_ENV};RESTART_SCHEDULE=online;RESTART_LATE=12;RESTART_FLIP=9"
  TIMEOUT 400 PROCESSORS 2 PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
# Adaptive runs under the online schedule with a disk tier: the accepted times up to each disk
# snapshot are kept in the files (/times) and the step size proposed there in its tag, so the
# restart replays the same steps (rejections included) and gives the uninterrupted run's
# gradient bit for bit (store mode refuses adaptive runs: the reference is the same run not
# killed). rewind-ode: Van der Pol, 54 steps (2 rejected), every case at 2 ranks, SIGKILL,
# torn write and a kill at the 12th write (resume point at step 48) at 1 and 4; Gray-Scott: 28
# steps (1 rejected) on 2 ranks, SIGKILL, torn write and a kill at the 9th write.
set(ADAPT_ode -tf 3 -stepper dopri5 -adaptive true -rtol 1e-8 -atol 1e-8 -dt 0.01)
set(ADAPT_grayscott ${DISK_ARGS_grayscott} -stepper dopri5 -adaptive true -rtol 1e-10 -atol 1e-12)
foreach(case ode:1 ode:2 ode:4 grayscott:2)
  string(REPLACE ":" ";" case "${case}")
  list(GET case 0 name)
  list(GET case 1 np)
  add_test(NAME restart_${name}_adaptive_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/restart.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-${name}> ${ADAPT_${name}})
  set(env "${REWIND_TEST_ENV}" RESTART_SCHEDULE=online RESTART_REFERENCE=uninterrupted)
  if(name STREQUAL "ode")
    list(APPEND env RESTART_LATE=12 RESTART_FLIP=9)
  else()
    list(APPEND env RESTART_LATE=9)
  endif()
  if(NOT np EQUAL 2 OR NOT name STREQUAL "ode")
    list(APPEND env RESTART_QUICK=1)
  endif()
  set_tests_properties(restart_${name}_adaptive_np${np} PROPERTIES ENVIRONMENT "${env}"
    TIMEOUT 400 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()
# Three tiers on the emulated device (issue 11): device slots, a 16 KiB host tier (8 state
# snapshots of 2 KiB per rank at 2 ranks, 2 with the RK4 stages) and the disk; the host slots die with the run like the RAM
# ones, and the restart refills them from the resume point's disk snapshot. Every case at 2
# ranks, SIGKILL and torn write at 1.
foreach(np 1 2)
  add_test(NAME restart_grayscott_device_tiers_np${np}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/restart.sh ${MPIEXEC_EXECUTABLE} ${np}
            $<TARGET_FILE:rewind-grayscott> ${DISK_ARGS_grayscott} -device emulated)
  set(env "${REWIND_TEST_ENV}" RESTART_HOST=16KiB)
  if(np EQUAL 1)
    list(APPEND env RESTART_QUICK=1)
  endif()
  set_tests_properties(restart_grayscott_device_tiers_np${np} PROPERTIES ENVIRONMENT "${env}"
    TIMEOUT 400 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()
