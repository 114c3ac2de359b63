#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The application table (docs/benchmarks.md, "The stencil application"): mpipcl-stencil's time
# per iteration for every variant on 2 and 4 ranks (NPS, default "2 4"). For each MPI of MPIS
# (default "openmpi mpich"): on one host, or with SETUP=2hosts with the ranks alternating
# between the two emulated hosts (root; tests/multihost, TCP). APP_ARGS adds flags to every run.
# LAUNCHES (default 1) launches each rank count that many times, in turns (2 ranks, 4 ranks,
# then again), and each row of the table is the launch with the median time per iteration of
# its variant (cmake/bench_results.sh merge-app): the stencil across two hosts moves by about
# 15 % between launches.
# Writes results/app-<mpi>-<setup>.csv (the runs' CSVs under one header) and
# results/app-<mpi>-<setup>-np<N>.png, and prints each table. To put a table into
# docs/benchmarks.md:
#   cmake/bench_results.sh record app-openmpi-1host results/app-openmpi-1host.csv \
#       MPIS=openmpi bash cmake/bench_app.sh
set -euo pipefail
# shellcheck source=bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh" app

launches=${LAUNCHES:-1}
for mpi in ${MPIS:-openmpi mpich}; do
    out="results/app-$mpi-$setup.csv"
    rm -f "$out"
    stem="results/app-$mpi"
    [ "$setup" = 2hosts ] && stem="results/app-2hosts-$mpi-tcp"
    for launch in $(seq 1 "$launches"); do
        for np in ${NPS:-2 4}; do
            echo "== application table, $mpi, $setup, $np ranks, launch $launch of $launches"
            MPIS=$mpi NP=$np TRANSPORT=tcp bash cmake/run.sh "$target"
            cp "$stem.csv" "results/app-$mpi-$setup-np$np.$launch.csv"
            [ -f "$stem.png" ] && cp "$stem.png" "results/app-$mpi-$setup-np$np.png"
        done
    done
    for np in ${NPS:-2 4}; do
        if [ "$launches" -eq 1 ]; then
            append "$out" "results/app-$mpi-$setup-np$np.1.csv"
        else
            # shellcheck disable=SC2046  # the launches' file names hold no spaces
            bash cmake/bench_results.sh merge-app \
                $(seq -f "results/app-$mpi-$setup-np$np.%g.csv" 1 "$launches") >"$out.np$np"
            append "$out" "$out.np$np"
            rm -f "$out.np$np"
        fi
    done
    echo "== $out"
    bash cmake/bench_results.sh show-app "$out"
done
