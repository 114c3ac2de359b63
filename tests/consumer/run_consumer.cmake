# SPDX-License-Identifier: BSD-3-Clause
# ctest driver for the three ways to consume an *installed* mpipcl (and its installed binary).
#   MODE=install    install BUILD_DIR into WORK_DIR/prefix (the fixture the others need)
#   MODE=cmake      build this directory's project with find_package(mpipcl), run on 2 ranks
#   MODE=pkgconfig  mpicc consumer.c $(pkg-config --cflags --libs mpipcl), run on 2 ranks
#   MODE=preload    mpicc preload_app.c (linked against the MPI only), run on 2 ranks with
#                   LD_PRELOAD=libmpipcl.so; and without it, where it must fail
#   MODE=rpath      the installed bin/mpipcl-bench finds the installed libmpipcl with no
#                   LD_LIBRARY_PATH
# Inputs: MODE BUILD_DIR SRC_DIR WORK_DIR LIBDIR MPI_C_COMPILER MPIEXEC MPIEXEC_EXTRA
#         PKG_CONFIG HAS_PARTITIONED
set(prefix "${WORK_DIR}/prefix")
set(work "${WORK_DIR}/${MODE}")
separate_arguments(extra UNIX_COMMAND "${MPIEXEC_EXTRA}")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}): ${ARGN}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "install")
  file(REMOVE_RECURSE "${WORK_DIR}")
  run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
  return()
endif()
if(NOT EXISTS "${prefix}/include/mpipcl.h")
  message(FATAL_ERROR "no install tree at ${prefix} (the consumer-install test runs first)")
endif()
file(REMOVE_RECURSE "${work}")
file(MAKE_DIRECTORY "${work}")
# Nothing may find the build tree's library behind the install tree's back.
set(clean_env ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=LD_PRELOAD)

if(MODE STREQUAL "cmake")
  run("configure" ${CMAKE_COMMAND} -S "${SRC_DIR}" -B "${work}" -DCMAKE_PREFIX_PATH=${prefix}
      -DMPI_C_COMPILER=${MPI_C_COMPILER})
  run("build" ${CMAKE_COMMAND} --build "${work}")
  run("2-rank run" ${clean_env} ${MPIEXEC} -n 2 ${extra} "${work}/consumer")
elseif(MODE STREQUAL "pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "${prefix}/${LIBDIR}/pkgconfig")
  run("pkg-config" ${PKG_CONFIG} --cflags --libs mpipcl)
  separate_arguments(flags UNIX_COMMAND "${run_out}")
  run("pkg-config" ${PKG_CONFIG} --variable=libdir mpipcl)
  string(STRIP "${run_out}" libdir)
  # The run-time path is the consumer's choice: here an rpath to the install tree.
  run("mpicc" ${MPI_C_COMPILER} "${SRC_DIR}/consumer.c" ${flags} -Wl,-rpath,${libdir}
      -o "${work}/consumer")
  run("2-rank run" ${clean_env} ${MPIEXEC} -n 2 ${extra} "${work}/consumer")
elseif(MODE STREQUAL "preload")
  set(declare "")
  if(NOT HAS_PARTITIONED)
    set(declare -DPRELOAD_DECLARE_PARTITIONED=1)
  endif()
  run("mpicc" ${MPI_C_COMPILER} ${declare} "${SRC_DIR}/preload_app.c" -o "${work}/app")
  run("ldd" ldd "${work}/app")
  if(run_out MATCHES "mpipcl")
    message(FATAL_ERROR "preload_app is linked against libmpipcl")
  endif()
  file(GLOB lib "${prefix}/${LIBDIR}/libmpipcl.so")
  run("2-rank run with LD_PRELOAD" ${clean_env} ${MPIEXEC} -n 2 ${extra}
      env LD_PRELOAD=${lib} "${work}/app")
  execute_process(COMMAND ${clean_env} ${MPIEXEC} -n 2 ${extra} "${work}/app"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc)
    message(FATAL_ERROR "preload_app passed without LD_PRELOAD: the check proves nothing")
  endif()
elseif(MODE STREQUAL "rpath")
  set(bench "${prefix}/bin/mpipcl-bench")
  run("ldd" ${clean_env} ldd "${bench}")
  string(REGEX MATCH "libmpipcl[^\n]* => ([^ ]+)" found "${run_out}")
  file(REAL_PATH "${CMAKE_MATCH_1}" found_lib)
  file(REAL_PATH "${prefix}/${LIBDIR}" want_dir)
  get_filename_component(found_dir "${found_lib}" DIRECTORY)
  if(NOT found_dir STREQUAL want_dir)
    message(FATAL_ERROR "installed mpipcl-bench resolves libmpipcl to '${found_lib}', "
                        "not under ${want_dir}")
  endif()
  run("mpipcl-bench --help" ${clean_env} ${MPIEXEC} -n 1 ${extra} "${bench}" --help)
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
