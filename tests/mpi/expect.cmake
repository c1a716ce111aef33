# The expect machinery itself (rewind_mpi_expect, tests/scripts/expect.cmake): a REGEX or FORBID
# is checked whole, past a semicolon too. Until 2026-12-02 the function parsed its arguments from
# ${ARGN}, which split "...; give it once" into a list, and only the part before the semicolon
# was checked (47 tests' messages were cut there). The output here is "x; z" (printf's \073).
rewind_mpi_expect(expect_regex_whole NP 1 RC zero REGEX "x; z" COMMAND printf "x\\073 z\\n")
# the text after the semicolon differs: this run must fail (cut at the semicolon, it passed)
rewind_mpi_expect(expect_regex_past_semicolon NP 1 RC zero REGEX "x; y"
  COMMAND printf "x\\073 z\\n")
set_tests_properties(expect_regex_past_semicolon PROPERTIES WILL_FAIL TRUE)
# a FORBID that matches only past its semicolon must fail the run as well
rewind_mpi_expect(expect_forbid_past_semicolon NP 1 RC zero REGEX "x" FORBID "w; z|x; z"
  COMMAND printf "x\\073 z\\n")
set_tests_properties(expect_forbid_past_semicolon PROPERTIES WILL_FAIL TRUE)
