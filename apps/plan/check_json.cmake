# Runs rewind-plan --json for a few plans and parses the output with string(JSON): the
# output must be one valid JSON object with the keys issue 3 names (two-level plans also
# report their disk split). Usage:
#   cmake -DPLAN=/path/to/rewind-plan -P check_json.cmake
set(plans
  "--steps|5000|--ram-slots|10|--json"
  "--steps|5000|--ram|512MiB|--snapshot-bytes|8MiB|--json|--write-cost|3"
  "--steps|300|--ram-slots|4|--online|--json"
  "--steps|50|--schedule|fixed|--interval|7|--json"
  "--steps|12|--ram-slots|3|--json|--actions"
  "--steps|2000|--ram-slots|6|--disk-slots|4|--write-cost|2|--read-cost|2|--json"
  "--steps|40|--ram-slots|2|--disk-slots|unlimited|--write-cost|1|--read-cost|1|--json|--actions"
  "--steps|3000|--ram-slots|4|--disk-slots|8|--write-cost|2|--read-cost|2|--online|--json")
set(count 0)
foreach(plan IN LISTS plans)
  string(REPLACE "|" " " shown "${plan}")
  string(REPLACE "|" ";" args "${plan}")
  execute_process(COMMAND ${PLAN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rewind-plan ${shown} exited with ${rc}: ${err}")
  endif()
  foreach(key steps ram_slots disk_slots advances forward_steps disk_writes disk_reads cost
              overhead recomputations)
    string(JSON value ERROR_VARIABLE jerr GET "${out}" ${key})
    if(jerr)
      message(FATAL_ERROR "rewind-plan ${shown}: key '${key}': ${jerr}\n${out}")
    endif()
  endforeach()
  # two-level plans: the disk split is reported and the cost is the optimum
  # online plans with disk: the period is reported and the disk is used
  if(shown MATCHES "--online" AND shown MATCHES "--disk-slots")
    foreach(key disk_period disk_period_chosen disk_slots_used)
      string(JSON value ERROR_VARIABLE jerr GET "${out}" ${key})
      if(jerr)
        message(FATAL_ERROR "rewind-plan ${shown}: key '${key}': ${jerr}\n${out}")
      endif()
    endforeach()
  elseif(shown MATCHES "--disk-slots")
    foreach(key disk_slots_used ram_slots_used optimal_cost ram_only_cost)
      string(JSON value ERROR_VARIABLE jerr GET "${out}" ${key})
      if(jerr)
        message(FATAL_ERROR "rewind-plan ${shown}: key '${key}': ${jerr}\n${out}")
      endif()
    endforeach()
    string(JSON cost GET "${out}" cost)
    string(JSON opt GET "${out}" optimal_cost)
    string(JSON ramonly GET "${out}" ram_only_cost)
    string(JSON writes GET "${out}" disk_writes)
    if(NOT cost EQUAL opt OR cost GREATER ramonly OR writes LESS 1)
      message(FATAL_ERROR "rewind-plan ${shown}: cost ${cost}, optimum ${opt}, RAM only "
                          "${ramonly}, ${writes} disk writes\n${out}")
    endif()
  endif()
  math(EXPR count "${count} + 1")
endforeach()
message(STATUS "rewind-plan JSON parsed for ${count} plans")
