# SPDX-License-Identifier: BSD-3-Clause
# ctest driver: install mpipcl into a scratch prefix, build the consumer project against it
# with find_package, and run it on one rank. Inputs: BUILD_DIR SRC_DIR WORK_DIR MPI_C_COMPILER
# MPIEXEC MPIEXEC_EXTRA.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SRC_DIR}" -B "${WORK_DIR}/build"
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DMPI_C_COMPILER=${MPI_C_COMPILER}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer configure failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer build failed: ${rc}")
endif()
separate_arguments(extra UNIX_COMMAND "${MPIEXEC_EXTRA}")
execute_process(COMMAND ${MPIEXEC} -n 1 ${extra} "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer run failed: ${rc}")
endif()
