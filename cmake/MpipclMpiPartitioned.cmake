# SPDX-License-Identifier: BSD-3-Clause
# Does the chosen MPI declare (mpi.h) and define (libmpi, with PMPI_ twins) the MPI-4.0
# partitioned calls, and with which prototypes? MPI_VERSION cannot tell: Open MPI 5.0 reports
# 3.1 yet declares them. Sets, for cmake/mpipcl_config.h.in:
#   MPIPCL_MPI_HAS_PARTITIONED   1: mpipcl.h declares none of them itself, and
#                                mpipcl_backend=native forwards to PMPI_Psend_init etc.
#   MPIPCL_PREADY_LIST_CONST     "const" (MPI-4.0, MPICH 4.2, and mpipcl's own declaration)
#                                or "" (MPICH 4.0.2, Open MPI 5.0: int array_of_partitions[])
include(CheckCSourceCompiles)

set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
set(CMAKE_REQUIRED_QUIET ON)
set(_mpipcl_calls Psend_init Precv_init Pready Pready_range Pready_list Parrived)
set(_mpipcl_refs "")
foreach(call IN LISTS _mpipcl_calls)
  string(APPEND _mpipcl_refs "  (void (*)(void))MPI_${call}, (void (*)(void))PMPI_${call},\n")
endforeach()
set(_mpipcl_use_all "#include <mpi.h>
#include <stdio.h>
int main(void) {
  void (*calls[])(void) = {
${_mpipcl_refs}  };
  printf(\"%p\", (void*)&calls);
  return 0;
}
")

# Declared and linkable (compile + link against libmpi).
check_c_source_compiles("${_mpipcl_use_all}" MPIPCL_MPI_HAS_PARTITIONED)
if(NOT MPIPCL_MPI_HAS_PARTITIONED)
  # Declared but not defined: we could neither declare ours nor forward to the MPI's.
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  check_c_source_compiles("${_mpipcl_use_all}" MPIPCL_MPI_DECLARES_PARTITIONED)
  unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
  if(MPIPCL_MPI_DECLARES_PARTITIONED)
    message(FATAL_ERROR "mpipcl: this mpi.h declares the MPI-4.0 partitioned calls but the MPI "
                        "library does not define them (or their PMPI_ twins): unsupported MPI")
  endif()
endif()

# Our definitions must match the MPI's prototypes exactly (a C redeclaration with another
# parameter type is an error). Where the MPI has no prototypes these compile trivially.
set(_mpipcl_protos "")
foreach(prefix MPI PMPI)
  string(APPEND _mpipcl_protos
    "int ${prefix}_Psend_init(const void*, int, MPI_Count, MPI_Datatype, int, int, MPI_Comm, MPI_Info, MPI_Request*);\n"
    "int ${prefix}_Precv_init(void*, int, MPI_Count, MPI_Datatype, int, int, MPI_Comm, MPI_Info, MPI_Request*);\n"
    "int ${prefix}_Pready(int, MPI_Request);\n"
    "int ${prefix}_Pready_range(int, int, MPI_Request);\n"
    "int ${prefix}_Parrived(MPI_Request, int, int*);\n")
endforeach()
check_c_source_compiles("#include <mpi.h>\n${_mpipcl_protos}int main(void){return 0;}\n"
  MPIPCL_MPI_PROTOTYPES_MATCH)
if(NOT MPIPCL_MPI_PROTOTYPES_MATCH)
  message(FATAL_ERROR "mpipcl: this mpi.h declares the partitioned calls with prototypes other "
                      "than MPI-4.0's (MPI_Count count, int *flag): unsupported MPI")
endif()
set(_mpipcl_list_const "int MPI_Pready_list(int, const int[], MPI_Request);
int PMPI_Pready_list(int, const int[], MPI_Request);")
check_c_source_compiles("#include <mpi.h>\n${_mpipcl_list_const}\nint main(void){return 0;}\n"
  MPIPCL_MPI_PREADY_LIST_IS_CONST)
if(MPIPCL_MPI_PREADY_LIST_IS_CONST)
  set(MPIPCL_PREADY_LIST_CONST "const")
  set(_mpipcl_sp " ")
else()
  string(REPLACE "const int" "int" _mpipcl_list_plain "${_mpipcl_list_const}")
  check_c_source_compiles("#include <mpi.h>\n${_mpipcl_list_plain}\nint main(void){return 0;}\n"
    MPIPCL_MPI_PREADY_LIST_IS_PLAIN)
  if(NOT MPIPCL_MPI_PREADY_LIST_IS_PLAIN)
    message(FATAL_ERROR "mpipcl: unknown MPI_Pready_list prototype in this mpi.h")
  endif()
  set(MPIPCL_PREADY_LIST_CONST "")
  set(_mpipcl_sp "")
endif()
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_REQUIRED_QUIET)

if(MPIPCL_MPI_HAS_PARTITIONED)
  set(_mpipcl_msg "declared by the MPI")
else()
  set(_mpipcl_msg "not in the MPI (mpipcl.h declares them)")
endif()
message(STATUS "mpipcl: partitioned calls ${_mpipcl_msg}; "
               "MPI_Pready_list array: '${MPIPCL_PREADY_LIST_CONST}${_mpipcl_sp}int[]'")
