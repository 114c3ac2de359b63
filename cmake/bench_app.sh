#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The application table (docs/benchmarks.md, "The stencil application"): mpipcl-stencil's time
# per iteration for every variant on 2 and 4 ranks (NPS, default "2 4"). For each MPI of MPIS
# (default "openmpi mpich"): on one host, or with SETUP=2hosts with the ranks alternating
# between the two emulated hosts (root; tests/multihost, TCP). APP_ARGS adds flags to every run.
# Writes results/app-<mpi>-<setup>.csv (the runs' CSVs under one header) and
# results/app-<mpi>-<setup>-np<N>.png, and prints each table. To put a table into
# docs/benchmarks.md:
#   cmake/bench_results.sh record app-openmpi-1host results/app-openmpi-1host.csv \
#       MPIS=openmpi bash cmake/bench_app.sh
set -euo pipefail
# shellcheck source=bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh" app

for mpi in ${MPIS:-openmpi mpich}; do
    out="results/app-$mpi-$setup.csv"
    rm -f "$out"
    for np in ${NPS:-2 4}; do
        echo "== application table, $mpi, $setup, $np ranks"
        MPIS=$mpi NP=$np TRANSPORT=tcp bash cmake/run.sh "$target"
        stem="results/app-$mpi"
        [ "$setup" = 2hosts ] && stem="results/app-2hosts-$mpi-tcp"
        append "$out" "$stem.csv"
        [ -f "$stem.png" ] && cp "$stem.png" "results/app-$mpi-$setup-np$np.png"
    done
    echo "== $out"
    bash cmake/bench_results.sh show-app "$out"
done
