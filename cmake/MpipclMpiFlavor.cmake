# SPDX-License-Identifier: BSD-3-Clause
# Works out which MPI FindMPI picked (Open MPI or MPICH), the matching mpiexec, and the
# launcher flags the tests need on an oversubscribed machine; then what its mpi.h declares.
include(CheckCSourceCompiles)

set(_mpipcl_probe_src "#include <mpi.h>\n#if !defined(OPEN_MPI)\n#error not ompi\n#endif\nint main(void){return 0;}\n")
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
check_c_source_compiles("${_mpipcl_probe_src}" MPIPCL_MPI_IS_OPENMPI)
check_c_source_compiles("#include <mpi.h>\n#if !defined(MPICH)\n#error no\n#endif\nint main(void){return 0;}\n" MPIPCL_MPI_IS_MPICH)
unset(CMAKE_REQUIRED_INCLUDES)
include(${CMAKE_CURRENT_LIST_DIR}/MpipclMpiPartitioned.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/MpipclMpiCommCalls.cmake)

if(MPIPCL_MPI_IS_OPENMPI)
  set(MPIPCL_MPI_FLAVOR "openmpi")
elseif(MPIPCL_MPI_IS_MPICH)
  set(MPIPCL_MPI_FLAVOR "mpich")
else()
  set(MPIPCL_MPI_FLAVOR "other")
endif()

# Debian installs both MPIs side by side; /usr/bin/mpiexec follows the alternatives system and
# may belong to the other MPI. Prefer the launcher that matches the compiler wrapper.
if(NOT MPIPCL_MPIEXEC_CHECKED)
  set(MPIPCL_MPIEXEC_CHECKED ON CACHE INTERNAL "")
  find_program(_mpipcl_flavored_mpiexec NAMES mpiexec.${MPIPCL_MPI_FLAVOR} NO_CACHE)
  if(_mpipcl_flavored_mpiexec AND NOT MPIPCL_KEEP_MPIEXEC)
    set(MPIEXEC_EXECUTABLE "${_mpipcl_flavored_mpiexec}" CACHE FILEPATH "MPI launcher" FORCE)
  endif()
endif()
message(STATUS "mpipcl: MPI flavor ${MPIPCL_MPI_FLAVOR}, launcher ${MPIEXEC_EXECUTABLE}")
