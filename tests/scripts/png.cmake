# rewind_check_png(PATH WHO): PATH exists and starts with the PNG signature; WHO names the
# tool that should have written it. For the plot tools' checks (check_xdmf.cmake,
# check_neuralode_plot.cmake).
function(rewind_check_png path who)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "${who} did not write ${path}")
  endif()
  file(READ "${path}" magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "89504e47")
    message(FATAL_ERROR "${path} is not a PNG")
  endif()
endfunction()
