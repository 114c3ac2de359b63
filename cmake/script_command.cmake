# SPDX-License-Identifier: BSD-3-Clause
# For cmake -P scripts invoked as `cmake [-D...] -P <script> -- <command>...`:
# mpipcl_script_command(<var>) sets <var> to the list of arguments after "--", or fails.
function(mpipcl_script_command var)
  set(command "")
  set(after_separator FALSE)
  math(EXPR last "${CMAKE_ARGC} - 1")
  foreach(i RANGE ${last})
    if(after_separator)
      list(APPEND command "${CMAKE_ARGV${i}}")
    elseif(CMAKE_ARGV${i} STREQUAL "--")
      set(after_separator TRUE)
    endif()
  endforeach()
  if(NOT command)
    message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: no command after --")
  endif()
  set(${var} "${command}" PARENT_SCOPE)
endfunction()
