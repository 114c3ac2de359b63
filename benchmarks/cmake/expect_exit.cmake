# SPDX-License-Identifier: BSD-3-Clause
# cmake -DEXPECT_EXIT=<code> [-DEXPECT_STDERR=<regex>] [-DEXPECT_STDOUT=<regex>]
#       -P expect_exit.cmake -- <command>...
# Passes iff <command> exits with exactly <code> and its stderr / stdout match the regexes.
cmake_minimum_required(VERSION 3.23)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/script_command.cmake)
mpipcl_script_command(command)

execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit code '${code}', expected ${EXPECT_EXIT}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}':\n${err}")
endif()
if(EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}':\n${out}")
endif()
