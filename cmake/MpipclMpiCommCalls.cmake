# SPDX-License-Identifier: BSD-3-Clause
# Which of the communicator constructors that not every supported MPI has the chosen MPI
# declares (mpi.h) and defines (libmpi, with PMPI_ twins): libmpipcl wraps them only where they
# exist (src/api/init.cpp). Sets, for cmake/mpipcl_config.h.in:
#   MPIPCL_MPI_HAS_COMM_IDUP_WITH_INFO      MPI_Comm_idup_with_info (MPI-4.0; MPICH 4,
#                                           Open MPI 5; not Open MPI 4.1)
#   MPIPCL_MPI_HAS_COMM_CREATE_FROM_GROUP   MPI_Comm_create_from_group (MPI-4.0 sessions; MPICH
#                                           4, Open MPI 5; not Open MPI 4.1)
#   MPIPCL_MPI_HAS_INTERCOMM_CREATE_FROM_GROUPS   MPI_Intercomm_create_from_groups (likewise)
include(CheckCSourceCompiles)

set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
set(CMAKE_REQUIRED_QUIET ON)
set(_mpipcl_found "")
set(_mpipcl_missing "")
foreach(call IN ITEMS Comm_idup_with_info Comm_create_from_group Intercomm_create_from_groups)
  string(TOUPPER "MPIPCL_MPI_HAS_${call}" var)
  check_c_source_compiles("#include <mpi.h>
#include <stdio.h>
int main(void) {
  void (*calls[])(void) = {(void (*)(void))MPI_${call}, (void (*)(void))PMPI_${call}};
  printf(\"%p\", (void*)&calls);
  return 0;
}
" ${var})
  if(${var})
    list(APPEND _mpipcl_found MPI_${call})
  else()
    list(APPEND _mpipcl_missing MPI_${call})
  endif()
endforeach()
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_REQUIRED_QUIET)
list(JOIN _mpipcl_found ", " _mpipcl_found)
list(JOIN _mpipcl_missing ", " _mpipcl_missing)
message(STATUS "mpipcl: optional communicator constructors in the MPI: '${_mpipcl_found}'; "
               "missing: '${_mpipcl_missing}'")
