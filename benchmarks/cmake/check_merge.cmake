# SPDX-License-Identifier: BSD-3-Clause
# Checks cmake/bench_results.sh merge (the medians across launches of mpipcl-bench --collective):
# -DSCRIPT=<bench_results.sh> -DDIR=<scratch dir>. Three launches of one collective at one size,
# where single and multi move between launches: the merged row of each mode holds the median
# perceived time, the least min and the most max, ratios recomputed from the merged single and
# multi, the library string still quoted, and launches = 3; a launch with other columns fails.
set(head "collective,ranks,partitions,bytes,mode,compute_ms,noise_pct,iterations,repeats,perceived_us_median,perceived_us_p10,perceived_us_p90,perceived_us_min,perceived_us_max,ratio_to_single,ratio_to_multi,mpi_library,mpipcl_version,compute,threads,compute_slowdown_median,cpu_ms,ideal_ratio_to_single")
set(lib "\"MPI 1.0, a, b\"")
# launch: single multi part perceived medians, mins and maxes (min = median - 10, max = + 10)
set(launches "100,50,40" "300,60,45" "200,10,90")
set(i 0)
set(files "")
foreach(l IN LISTS launches)
  string(REPLACE "," ";" v "${l}")
  list(GET v 0 s)
  list(GET v 1 m)
  list(GET v 2 p)
  set(text "${head}\n")
  foreach(mode_v "single:${s}" "multi:${m}" "part-auto:${p}")
    string(REPLACE ":" ";" mv "${mode_v}")
    list(GET mv 0 mode)
    list(GET mv 1 t)
    math(EXPR lo "${t} - 10")
    math(EXPR hi "${t} + 10")
    string(APPEND text "allgather,4,16,1048576,${mode},10,10,20,3,${t},${t},${t},${lo},${hi},9,9,${lib},\"0.1.0\",work,1,1.${i},2.5,0.5\n")
  endforeach()
  # a blank line and a second header inside one file, as concatenated CSVs have
  string(APPEND text "\n${head}\n")
  file(WRITE "${DIR}/merge-${i}.csv" "${text}")
  list(APPEND files "${DIR}/merge-${i}.csv")
  math(EXPR i "${i} + 1")
endforeach()
execute_process(COMMAND bash "${SCRIPT}" merge ${files} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merge failed (${rc})")
endif()
string(REGEX REPLACE "\n$" "" out "${out}")
string(REPLACE "\n" ";" lines "${out}")
set(want
  "${head},launches"
  "allgather,4,16,1048576,single,10,10,20,3,200.000,200.000,200.000,90,310,1.0000,4.0000,${lib},0.1.0,work,1,1.1000,2.5000,0.5000,3"
  "allgather,4,16,1048576,multi,10,10,20,3,50.000,50.000,50.000,0,70,0.2500,1.0000,${lib},0.1.0,work,1,1.1000,2.5000,0.5000,3"
  "allgather,4,16,1048576,part-auto,10,10,20,3,45.000,45.000,45.000,30,100,0.2250,0.9000,${lib},0.1.0,work,1,1.1000,2.5000,0.5000,3")
if(NOT lines STREQUAL want)
  string(REPLACE ";" "\n  " w "${want}")
  message(FATAL_ERROR "merged CSV is\n${out}\nexpected\n  ${w}")
endif()
# Launches of different shapes are refused.
file(WRITE "${DIR}/merge-odd.csv" "collective,ranks,perceived_us_median\nallgather,4,1\n")
execute_process(COMMAND bash "${SCRIPT}" merge ${files} "${DIR}/merge-odd.csv"
  OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "merge accepted launches with different columns")
endif()
message(STATUS "merge: medians across 3 launches as expected")
