# Warnings, -Werror and sanitizers for every Rewind target (through rewind_flags).
add_library(rewind_flags INTERFACE)
target_compile_options(rewind_flags INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes>)
if(REWIND_WERROR)
  target_compile_options(rewind_flags INTERFACE $<$<COMPILE_LANGUAGE:C>:-Werror>)
endif()
if(REWIND_SANITIZE)
  target_compile_options(rewind_flags INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(rewind_flags INTERFACE -fsanitize=address,undefined)
endif()
