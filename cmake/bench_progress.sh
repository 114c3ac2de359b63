#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The progress-mode table (docs/benchmarks.md, "Progress modes"): each MPIPCL_PROGRESS mode of
# PROGRESSES (default "thread event offload caller") against the plain sends, with what each
# costs, where the cores compute (COMPUTES, default "work") and where they sleep. For each MPI of
# MPIS (default "openmpi mpich"): one mpipcl-bench launch per mode and kind, --compute KIND
# --threads THREADS (default 1) --partitions 16 at SIZES (default 1M,4M,16M), 10 % noise, both
# sides, REPEATS interleaved repeats (default 3) of the bench's own modes (MODES, default
# multi,part-persistent,part-auto, plus single); ARGS adds flags. The launches of the modes
# alternate ROUNDS times (default 1). SETUP=2hosts runs across the two emulated hosts (root).
# Writes results/progress-<mpi>-<setup>.csv (the bench CSV with the progress mode put before
# the bench mode: "event/part-auto") and prints the table. To put a table into
# docs/benchmarks.md:
#   cmake/bench_results.sh record progress-openmpi-1host results/progress-openmpi-1host.csv \
#       MPIS=openmpi bash cmake/bench_progress.sh
set -euo pipefail
# shellcheck source=bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh" bench

# Appends the CSV $2 to $1 with the progress mode $3 before each row's bench mode.
append_as() {
    local out=$1 csv=$2 progress=$3
    awk -F, -v OFS=, -v p="$progress" -v skip="$([ -s "$out" ] && echo 1 || echo 0)" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mode") m = i; if (!skip) print; next }
        $0 == "" { next }
        { $m = p "/" $m; print }' "$csv" >>"$out"
}

for mpi in ${MPIS:-openmpi mpich}; do
    out="results/progress-$mpi-$setup.csv"
    rm -f "$out"
    stem="results/bench-$mpi"
    [ "$setup" = 2hosts ] && stem="results/bench-2hosts-$mpi-tcp"
    for round in $(seq "${ROUNDS:-1}"); do
        for kind in ${COMPUTES:-work}; do
            for progress in ${PROGRESSES:-thread event offload caller}; do
                echo "== progress table, $mpi, $setup, round $round, --compute $kind, MPIPCL_PROGRESS=$progress"
                args="--compute $kind --threads ${THREADS:-1} --partitions 16 --sizes ${SIZES:-1M,4M,16M}"
                args="$args --noise 10 --side both --repeats ${REPEATS:-3}"
                args="$args --modes single,${MODES:-multi,part-persistent,part-auto} ${ARGS:-}"
                MPIPCL_PROGRESS=$progress MPIS=$mpi TRANSPORT=tcp BENCH_ARGS="$args" \
                    bash cmake/run.sh "$target"
                append_as "$out" "$stem.csv" "$progress"
            done
        done
    done
    echo "== $out"
    bash cmake/bench_results.sh show-compute "$out"
done
