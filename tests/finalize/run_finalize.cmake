# SPDX-License-Identifier: BSD-3-Clause
# cmake -DRUNS=<n> -P run_finalize.cmake -- <launch command>...
# Runs the command RUNS times; a run fails on a non-zero exit or on any stderr line with
# "UCX WARN" or "WARNING" (e.g. MPICH/UCX complaining about resources still in use at
# MPI_Finalize). Fails if any run failed and says how many did.
cmake_minimum_required(VERSION 3.23)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/script_command.cmake)
mpipcl_script_command(command)
if(NOT RUNS)
  message(FATAL_ERROR "usage: cmake -DRUNS=<n> -P run_finalize.cmake -- <command>...")
endif()

set(failed 0)
foreach(run RANGE 1 ${RUNS})
  execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "[^\n]*(UCX +WARN|WARNING)[^\n]*" warnings "${err}")
  if(NOT code STREQUAL "0" OR warnings)
    math(EXPR failed "${failed} + 1")
    message("run ${run}/${RUNS}: exit ${code}")
    foreach(line IN LISTS warnings)
      message("  ${line}")
    endforeach()
    if(NOT code STREQUAL "0")
      message("  stderr:\n${err}")
    endif()
  endif()
endforeach()
message("finalize: ${failed} of ${RUNS} runs failed")
if(failed)
  message(FATAL_ERROR "clean finalize: ${failed} of ${RUNS} runs printed warnings or failed")
endif()
