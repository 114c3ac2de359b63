#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The compute table (docs/benchmarks.md, "When the cores compute"): every mode against the plain
# sends when the threads sleep, spin or compute for real, with what each costs (the compute
# slowdown, the CPU of both processes and of their progress threads). For each MPI of MPIS
# (default "openmpi mpich") and each kind of COMPUTES (default "sleep spin work"): mpipcl-bench
# --compute KIND --threads THREADS (default 1: one compute thread per rank, 16 partitions each,
# one core's worth of tiles) at 1, 4 and 16 MiB, 10 % noise, both sides, every mode the MPI
# supports interleaved, REPEATS repeats (default 3); ARGS adds flags. On one host (2 local ranks);
# SETUP=2hosts runs the same across the two emulated hosts (root; tests/multihost, TCP).
# Writes results/compute-<mpi>-<setup>.csv (the runs' CSVs under one header), the plots
# results/compute-<mpi>-<setup>-<kind>{,-ratio,-cost}.png, and prints each table. To put a table
# into docs/benchmarks.md:
#   cmake/bench_results.sh record compute-openmpi-1host results/compute-openmpi-1host.csv \
#       MPIS=openmpi bash cmake/bench_compute.sh
set -euo pipefail
# shellcheck source=bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh" bench

for mpi in ${MPIS:-openmpi mpich}; do
    out="results/compute-$mpi-$setup.csv"
    rm -f "$out"
    for kind in ${COMPUTES:-sleep spin work}; do
        echo "== compute table, $mpi, $setup, --compute $kind"
        args="--compute $kind --threads ${THREADS:-1} --partitions 16 --sizes 1M,4M,16M"
        args="$args --noise 10 --side both --repeats ${REPEATS:-3} ${ARGS:-}"
        MPIS=$mpi TRANSPORT=tcp BENCH_ARGS="$args" bash cmake/run.sh "$target"
        stem="results/bench-$mpi"
        [ "$setup" = 2hosts ] && stem="results/bench-2hosts-$mpi-tcp"
        append "$out" "$stem.csv"
        for suffix in "" -ratio -cost; do
            [ -f "$stem$suffix.png" ] && cp "$stem$suffix.png" \
                "results/compute-$mpi-$setup-$kind$suffix.png"
        done
    done
    echo "== $out"
    bash cmake/bench_results.sh show-compute "$out"
done
