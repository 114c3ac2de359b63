# SPDX-License-Identifier: BSD-3-Clause
# The MPI tests across two emulated hosts (tests/multihost): every test registered by
# mpipcl_add_mpi_test with 2 or more ranks gets a twin "<test>.2hosts" (and "<test>.2hosts-ucx"
# where Open MPI has pml/osc ucx) with the labels multihost and multihost-<transport>, launched
# by tests/multihost/mpiexec.sh with the same arguments, environment and timeout. The twins
# need the hosts fixture (tests/multihost/CMakeLists.txt: hosts.sh up before, down after) and
# run one at a time (RESOURCE_LOCK). `ctest -L multihost` runs them all; `ctest -LE multihost`
# the one-host suite.
option(MPIPCL_MULTIHOST "Register the MPI tests across two emulated hosts (label multihost)" ON)

set(MPIPCL_MULTIHOST_TRANSPORTS "")
if(MPIPCL_MULTIHOST AND MPIPCL_MPI_FLAVOR STREQUAL "mpich")
  set(MPIPCL_MULTIHOST_TRANSPORTS tcp)  # ch4:ucx, UCX over TCP
elseif(MPIPCL_MULTIHOST AND MPIPCL_MPI_FLAVOR STREQUAL "openmpi")
  set(MPIPCL_MULTIHOST_TRANSPORTS tcp)  # pml ob1 + btl tcp
  get_filename_component(_mpipcl_mpi_bindir "${MPIEXEC_EXECUTABLE}" DIRECTORY)
  find_program(MPIPCL_OMPI_INFO NAMES ompi_info HINTS "${_mpipcl_mpi_bindir}")
  if(MPIPCL_OMPI_INFO)
    execute_process(COMMAND ${MPIPCL_OMPI_INFO} OUTPUT_VARIABLE _mpipcl_ompi_info
                    ERROR_QUIET TIMEOUT 60)
    if(_mpipcl_ompi_info MATCHES "MCA pml: ucx" AND _mpipcl_ompi_info MATCHES "MCA osc: ucx")
      list(APPEND MPIPCL_MULTIHOST_TRANSPORTS ucx)  # pml ucx + osc ucx, UCX over TCP
    endif()
  endif()
endif()
# MPICH over UCX 1.13's TCP transport: plain MPI programs on two hosts hang in MPI_Finalize
# now and then (tests/platform/ucx_tcp_finalize_hang.c). There the twins run with
# MPIPCL_MH_FINALIZE_HANG_OK: a launch whose ranks all passed and entered the MPI's own
# MPI_Finalize counts as passed when that call does not return (the output says so).
set(MPIPCL_MULTIHOST_FINALIZE_ENV "")
if(MPIPCL_MULTIHOST_TRANSPORTS AND MPIPCL_MPI_FLAVOR STREQUAL "mpich")
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(MPIPCL_UCX QUIET ucx)
  endif()
  if(MPIPCL_UCX_VERSION AND MPIPCL_UCX_VERSION VERSION_LESS 1.14)
    set(MPIPCL_MULTIHOST_FINALIZE_ENV "MPIPCL_MH_FINALIZE_HANG_OK=1;MPIPCL_LOG_LEVEL=info")
    message(STATUS "mpipcl: multihost twins on MPICH with UCX ${MPIPCL_UCX_VERSION} tolerate a "
                   "hang inside the MPI's MPI_Finalize (tests/platform/ucx_tcp_finalize_hang.c)")
  endif()
endif()

# Each build tree gets hosts of its own (namespace names and subnet from a hash of its path), so
# that the suites of two build trees can run at once.
string(MD5 _mpipcl_mh_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_mpipcl_mh_hash}" 0 6 _mpipcl_mh_tag)
string(SUBSTRING "${_mpipcl_mh_hash}" 6 2 _mpipcl_mh_byte)
math(EXPR _mpipcl_mh_octet "0x${_mpipcl_mh_byte} % 200 + 20")
set(MPIPCL_MULTIHOST_ENV "MPIPCL_MH_NAME=mh${_mpipcl_mh_tag};MPIPCL_MH_SUBNET=10.231.${_mpipcl_mh_octet}")
if(MPIPCL_MULTIHOST_TRANSPORTS)
  message(STATUS "mpipcl: multihost tests over ${MPIPCL_MULTIHOST_TRANSPORTS} "
                 "(${MPIPCL_MULTIHOST_ENV})")
endif()

# Open MPI over ob1/tcp has no usable RMA window between the hosts, so a request for the rma
# backend falls back to persistent at init and then runs the persistent twin's data path: of
# the rma twins only these keep an Open MPI tcp twin (the fallback itself, the paths that look
# for a window, the busy receiver, a collective, a stress test). The other rma twins run over
# MPICH (UCX over TCP, where the window works) and Open MPI's ucx transport.
set(MPIPCL_MULTIHOST_OB1_RMA_TWINS
  backend_fallback rma_paths rma_paths_nowindow busy_receiver busy_receiver_nothread
  sender_blocked pcoll_np4 stress transfer_33_17 parrived_33_17
  CACHE STRING "Tests whose rma twin runs on Open MPI over ob1/tcp (the others fall back)")

# Whether test @p name (launched with environment @p env) gets a twin over @p transport.
function(_mpipcl_multihost_wanted name env transport out)
  set(wanted TRUE)
  if(MPIPCL_MPI_FLAVOR STREQUAL "openmpi" AND transport STREQUAL "tcp" AND
     "MPIPCL_BACKEND=rma" IN_LIST env)
    string(REGEX REPLACE "\\.rma$" "" base "${name}")
    if(NOT base IN_LIST MPIPCL_MULTIHOST_OB1_RMA_TWINS)
      set(wanted FALSE)
    endif()
  endif()
  set(${out} ${wanted} PARENT_SCOPE)
endfunction()

# Called at the end of the directory that registered test @p name (so that properties set
# after mpipcl_add_mpi_test are copied too).
function(_mpipcl_multihost_twin name np exe)
  get_test_property(${name} ENVIRONMENT env)
  get_test_property(${name} LABELS labels)
  get_test_property(${name} TIMEOUT timeout)
  get_test_property(${name} SKIP_REGULAR_EXPRESSION skip_regex)
  list(REMOVE_ITEM labels mpi asan tsan)
  math(EXPR launch_timeout "${timeout} - 10")
  foreach(transport IN LISTS MPIPCL_MULTIHOST_TRANSPORTS)
    _mpipcl_multihost_wanted(${name} "${env}" ${transport} wanted)
    if(NOT wanted)
      continue()
    endif()
    set(twin ${name}.2hosts)
    if(NOT transport STREQUAL "tcp")
      set(twin ${name}.2hosts-${transport})
    endif()
    add_test(NAME ${twin}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/multihost/mpiexec.sh ${MPIPCL_MPI_FLAVOR} ${transport}
              ${np} $<TARGET_FILE:${exe}> ${ARGN})
    set_tests_properties(${twin} PROPERTIES
      PROCESSORS ${np} TIMEOUT ${timeout} SKIP_RETURN_CODE 77
      LABELS "multihost;multihost-${transport};${labels}"
      ENVIRONMENT "${env};${MPIPCL_MULTIHOST_ENV};${MPIPCL_MULTIHOST_FINALIZE_ENV};MPIPCL_MH_TIMEOUT=${launch_timeout};MPIPCL_MH_MPIEXEC=${MPIEXEC_EXECUTABLE}"
      FIXTURES_REQUIRED mpipcl_multihost RESOURCE_LOCK mpipcl_multihost)
    if(skip_regex)
      set_tests_properties(${twin} PROPERTIES SKIP_REGULAR_EXPRESSION "${skip_regex}")
    endif()
  endforeach()
endfunction()

# Registers the twin of test @p name (launched with @p np ranks of @p exe and the arguments
# that follow) at the end of the current directory.
function(mpipcl_add_multihost_twin name np exe)
  if(NOT MPIPCL_MULTIHOST_TRANSPORTS OR np LESS 2 OR MPIPCL_SANITIZER)
    return()
  endif()
  set(args "")
  foreach(a IN LISTS ARGN)
    string(APPEND args " [==[${a}]==]")
  endforeach()
  cmake_language(EVAL CODE
    "cmake_language(DEFER CALL _mpipcl_multihost_twin [==[${name}]==] ${np} [==[${exe}]==]${args})")
endfunction()
