# SPDX-License-Identifier: BSD-3-Clause
# The include rule of src/ (docs/design.md, "Layers"): a file may include headers of its own
# folder and of the layers below it, never above, and the two backends never include each
# other:
#   api (5) -> requests (4) -> progress (3) -> persistent | rma (2) -> common (1)
# The backend folders are private besides: no other folder includes them, progress (the
# factory) included; it reaches a backend through the module table each one registers
# (common/backend_module.hpp), by BackendKind.
# Usage: cmake -DSRC_DIR=<src> -P check_layers.cmake  (fails listing every violation).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)
if(NOT SRC_DIR)
  message(FATAL_ERROR "SRC_DIR not set")
endif()
get_filename_component(SRC_DIR "${SRC_DIR}" ABSOLUTE)
set(rank_api 5)
set(rank_requests 4)
set(rank_progress 3)
set(rank_persistent 2)
set(rank_rma 2)
set(rank_common 1)
set(private_layers persistent rma)

file(GLOB_RECURSE files RELATIVE "${SRC_DIR}" "${SRC_DIR}/*.hpp" "${SRC_DIR}/*.cpp" "${SRC_DIR}/*.h")
list(LENGTH files nfiles)
set(violations "")
set(checked 0)
foreach(f IN LISTS files)
  string(REGEX MATCH "^[^/]+" layer "${f}")
  if(NOT DEFINED rank_${layer})
    list(APPEND violations "${f}: folder '${layer}' is not a known layer")
    continue()
  endif()
  file(STRINGS "${SRC_DIR}/${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
    math(EXPR checked "${checked} + 1")
    if(NOT inc MATCHES "/")
      continue()  # the public header (mpipcl.h) and generated headers
    endif()
    string(REGEX MATCH "^[^/]+" target "${inc}")
    if(NOT DEFINED rank_${target})
      list(APPEND violations "${f}: includes \"${inc}\" from unknown folder '${target}'")
    elseif(NOT target STREQUAL layer AND NOT rank_${target} LESS rank_${layer})
      list(APPEND violations "${f}: ${layer} (layer ${rank_${layer}}) includes \"${inc}\" (${target}, layer ${rank_${target}})")
    elseif(NOT target STREQUAL layer AND target IN_LIST private_layers)
      list(APPEND violations "${f}: ${layer} includes \"${inc}\" of the backend ${target}, private to src/${target} (use common/backend_module.hpp)")
    endif()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "include rule broken:\n  ${text}")
endif()
message(STATUS "include rule holds: ${checked} includes in ${nfiles} files of ${SRC_DIR}")
