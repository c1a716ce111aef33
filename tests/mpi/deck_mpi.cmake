# Input decks on 2 ranks: every rank returns the same error code and message.
add_executable(deck_errors_mpi ${CMAKE_CURRENT_SOURCE_DIR}/deck_errors_mpi.c)
target_link_libraries(deck_errors_mpi PRIVATE rewind rewind_io rewind_flags)
rewind_mpi_test(deck_errors_mpi NP 2 COMMAND $<TARGET_FILE:deck_errors_mpi>)

# Deck errors of the apps on 2 ranks: the message names the file or key, the value and what is
# allowed, and every rank exits with status 2 (a shell around each rank prints its status).
set(DECK_OUT ${CMAKE_CURRENT_BINARY_DIR}/out_deck)
file(MAKE_DIRECTORY ${DECK_OUT})
set(DECK_RANK_STATUS [[ "$0" "$@" || (echo "rank exit status $?" && false) ]])
# Open MPI kills the other rank when the first exits non-zero, sometimes before its shell
# prints its status: every rank is let finish (then Open MPI 4.1's own status is 0, so it is
# not checked; each rank's status 2 is read from its shell).
function(deck_app_bad name app regex)
  rewind_mpi_expect(deck_app_${name} NP 2 RC any
    REGEX "rank exit status 2\n.*rank exit status 2\n.*${regex}"
    FORBID "objective J|rank exit status [013-9]"
    COMMAND sh -c "${DECK_RANK_STATUS}" $<TARGET_FILE:rewind-${app}> ${ARGN})
  set_property(TEST deck_app_${name} APPEND PROPERTY ENVIRONMENT
    "OMPI_MCA_orte_abort_on_non_zero_status=0")
endfunction()
# 1. Bounds at +-1e300 refuse inf and 1e301, and the message says what is allowed.
deck_app_bad(tf_inf heat "tf = inf \\(from command line\\) must be finite \\(\\|x\\| <= 1e\\+300\\)"
  -tf inf -output ${DECK_OUT}/tf_inf.h5)
deck_app_bad(tf_minus_inf heat "tf = -inf \\(from command line\\) must be finite"
  -tf -inf -output ${DECK_OUT}/tf_minus_inf.h5)
deck_app_bad(amplitude_1e301 heat
  "u0_amplitude = 1e301 \\(from command line\\) must be finite \\(\\|x\\| <= 1e\\+300\\)"
  -u0_amplitude 1e301 -output ${DECK_OUT}/amplitude_1e301.h5)
deck_app_bad(dt_inf heat "dt = inf \\(from command line\\) must be > 0 and finite \\(<= 1e\\+300\\)"
  -dt inf -output ${DECK_OUT}/dt_inf.h5)
# 2. A deck file with a NUL byte (or UTF-16) is not text: refused naming the file, the offset
# and the line, not read up to the NUL.
deck_app_bad(nul_byte heat
  "deck file '[^']*nul_byte.yaml' holds a NUL byte at offset 88 \\(line 3\\)"
  ${PROJECT_SOURCE_DIR}/tests/decks/nul_byte.yaml -output ${DECK_OUT}/nul_byte.h5)
deck_app_bad(utf16 heat "deck file '[^']*utf16.yaml' holds a NUL byte.*UTF-16 byte-order mark"
  ${PROJECT_SOURCE_DIR}/tests/decks/utf16.yaml -output ${DECK_OUT}/utf16.h5)
# 3. A value longer than its limit is refused naming the key and the limit, not truncated.
string(REPEAT " " 300 deck_spaces)
deck_app_bad(long_value ode
  "ensemble = '1 +\\.\\.\\.' \\(from command line\\) is 305 bytes long; an integer value has at most 255"
  -ensemble "1${deck_spaces}junk" -output ${DECK_OUT}/long_value.h5)
# 4. A string longer than the deck's limit (at creation) or the app's buffer (when read):
# deck errors naming the key, its source and the limit.
string(REPEAT "a" 5000 deck_long)
deck_app_bad(long_output heat
  "output = 'a+\\.\\.\\.' \\(from command line\\) is 5003 bytes long; a string value has at most 4095"
  -output ${deck_long}.h5)
# (under the deck's 4095, past the app's buffer for the cost: 5000 digits met the deck's limit
# first, which the regex, checked only up to its semicolon until 2026-12-02, did not notice)
string(REPEAT "1" 300 deck_digits)
deck_app_bad(long_string_for_buffer heat
  "checkpoint_write_cost = '1+\\.\\.\\.' \\(from command line\\) is 300 bytes long; this key takes at most [0-9]+"
  -checkpoint_write_cost ${deck_digits} -output ${DECK_OUT}/long_string_for_buffer.h5)
