# SPDX-License-Identifier: BSD-3-Clause
# mpipcl_add_mpi_test(NAME n SOURCES s... NP n [ARGS a...] [LABELS l...] [BACKENDS b...]
#                     [ENV VAR=value...] [SKIP_REGEX re] [TIMEOUT s] [LINK extra-libs...]
#                     [TARGET exe] [ONE_HOST])
# Builds one MPI program and registers it once per backend as "<n>.<backend>", launched with
# ${MPIEXEC_EXECUTABLE} and the environment MPIPCL_BACKEND=<backend>. Pass/fail = exit code;
# exit code 77 = skipped, and so is output matching SKIP_REGEX. ENV adds variables to the
# environment of every backend's entry (after MPIPCL_BACKEND and the launcher's own, so it wins
# over them). Tests that share one program (e.g. one entry per case) name it with TARGET
# (default mpitest_<n>). A test of 2+ ranks also runs across two emulated hosts
# (cmake/MpipclMultihost.cmake, with the same environment, labels and timeout) unless ONE_HOST
# says it checks only what one process does. LABELS flaky marks a test that fails now and then
# and cannot be fixed yet (tests/README.md).
set(MPIPCL_TEST_BACKENDS "persistent;rma" CACHE STRING "Backends the MPI test suite runs against")
set(MPIPCL_TEST_TIMEOUT 120 CACHE STRING "Default timeout of one MPI test (s)")

set(MPIPCL_MPIEXEC_ENV "")
set(MPIPCL_MPIEXEC_EXTRA "")
if(MPIPCL_MPI_FLAVOR STREQUAL "openmpi")
  # 2 cores: tests use up to 4 ranks; as root Open MPI also needs the two ALLOW variables.
  set(MPIPCL_MPIEXEC_EXTRA --oversubscribe)
  set(MPIPCL_MPIEXEC_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endif()

# Sanitizer builds (MPIPCL_SANITIZER): the threaded MPI tests (label "threads") also get the
# label asan (address, also with undefined) or tsan (thread) and the runtime options below, so
# that `ctest -L asan|tsan` runs exactly them; cmake/sanitizers.sh drives both builds.
set(MPIPCL_SANITIZER_LABEL "")
set(MPIPCL_SANITIZER_ENV "")
set(mpipcl_sanitizer_dir ${CMAKE_CURRENT_LIST_DIR}/../tests/sanitizers)
if(MPIPCL_SANITIZER MATCHES "thread")
  set(MPIPCL_SANITIZER_LABEL tsan)
  # exitcode=66 (the default) fails a test with any report left after the suppressions, which
  # cover only the MPI library's own frames (see the file).
  set(MPIPCL_SANITIZER_ENV
    "TSAN_OPTIONS=suppressions=${mpipcl_sanitizer_dir}/tsan.supp:second_deadlock_stack=1:history_size=4:exitcode=66")
elseif(MPIPCL_SANITIZER MATCHES "address")
  set(MPIPCL_SANITIZER_LABEL asan)
  # The MPI libraries leak by design (buffers held until exit): no leak checking. Errors abort
  # the rank with a non-zero exit code.
  set(MPIPCL_SANITIZER_ENV
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/MpipclMultihost.cmake)

function(mpipcl_add_mpi_test)
  cmake_parse_arguments(T "ONE_HOST" "NAME;NP;TIMEOUT;TARGET;SKIP_REGEX"
                        "SOURCES;ARGS;LABELS;BACKENDS;LINK;ENV" ${ARGN})
  if(NOT T_NP)
    set(T_NP 2)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${MPIPCL_TEST_TIMEOUT})
  endif()
  if(NOT T_BACKENDS)
    set(T_BACKENDS ${MPIPCL_TEST_BACKENDS})
  endif()
  set(exe mpitest_${T_NAME})
  if(T_TARGET)
    set(exe ${T_TARGET})
  endif()
  if(NOT TARGET ${exe})
    add_executable(${exe} ${T_SOURCES})
    target_link_libraries(${exe} PRIVATE mpipcl::mpipcl mpipcl_test_util Threads::Threads mpipcl_warnings ${T_LINK})
  endif()
  foreach(b IN LISTS T_BACKENDS)
    set(name "${T_NAME}.${b}")
    add_test(NAME ${name}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NP} ${MPIPCL_MPIEXEC_EXTRA}
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${exe}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
    set(labels mpi np${T_NP} ${b} ${T_LABELS})
    set(env MPIPCL_BACKEND=${b} ${MPIPCL_MPIEXEC_ENV})
    if(MPIPCL_SANITIZER_LABEL)
      list(APPEND env ${MPIPCL_SANITIZER_ENV})
      # Not the OpenMP programs under tsan: libgomp is not instrumented, so TSan cannot see
      # its barriers and would report every access ordered by them.
      if("threads" IN_LIST T_LABELS AND NOT (MPIPCL_SANITIZER_LABEL STREQUAL "tsan" AND
                                             "${T_LINK}" MATCHES "OpenMP"))
        list(APPEND labels ${MPIPCL_SANITIZER_LABEL})
      endif()
    endif()
    list(APPEND env ${T_ENV})
    set_tests_properties(${name} PROPERTIES
      PROCESSORS ${T_NP} TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
      LABELS "${labels}" ENVIRONMENT "${env}")
    if(T_SKIP_REGEX)
      set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "${T_SKIP_REGEX}")
    endif()
    if(NOT T_ONE_HOST)
      mpipcl_add_multihost_twin(${name} ${T_NP} ${exe} ${T_ARGS})
    endif()
  endforeach()
endfunction()
