#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The auto table (docs/benchmarks.md, "The auto backend"): what mpipcl_backend=auto gets against
# the forced backends and the plain sends. For each MPI of MPIS (default "openmpi mpich"):
#   - one host (2 local ranks): the send side at 1, 4, 16 and 64 MiB and the receive side at 4
#     and 16 MiB, at 4 and 10 % noise;
#   - two emulated hosts (tests/multihost, TCP; as root, unless MULTIHOST=skip): the send side
#     at the same sizes and noise levels;
# with every mode the MPI supports interleaved (single, multi, part-persistent, part-rma where
# there is an RMA window, part-auto, part-native where the MPI has partitioned calls), REPEATS
# repeats (default 5). Writes results/auto-<mpi>-1host.csv and results/auto-<mpi>-2hosts.csv (the
# sweeps' CSVs under one header) and prints each table. To put a table into docs/benchmarks.md:
#   cmake/bench_results.sh record auto-openmpi-1host results/auto-openmpi-1host.csv \
#       bash cmake/bench_auto.sh
# The two-host part takes about as long as the one-host part (TCP between the hosts).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
repeats=${REPEATS:-5}
mkdir -p results

# Appends the CSV $2 to $1, keeping one header.
append() {
    if [ -s "$1" ]; then tail -n +2 "$2" >>"$1"; else cat "$2" >"$1"; fi
}

for mpi in ${MPIS:-openmpi mpich}; do
    one="results/auto-$mpi-1host.csv" two="results/auto-$mpi-2hosts.csv"
    rm -f "$one" "$two"
    for noise in 4 10; do
        for side in send recv; do
            sizes=1M,4M,16M,64M
            [ "$side" = recv ] && sizes=4M,16M
            echo "== auto table, $mpi, one host, $side side, noise $noise %"
            MPIS=$mpi BENCH_ARGS="--sizes $sizes --side $side --noise $noise --repeats $repeats" \
                bash cmake/run.sh bench
            append "$one" "results/bench-$mpi.csv"
        done
        if [ "${MULTIHOST:-gate}" != skip ] && [ "$(id -u)" -eq 0 ]; then
            echo "== auto table, $mpi, two hosts, send side, noise $noise %"
            MPIS=$mpi TRANSPORT=tcp BENCH_ARGS="--sizes 1M,4M,16M,64M --side send --noise $noise --repeats $repeats" \
                bash cmake/run.sh bench-2hosts
            append "$two" "results/bench-2hosts-$mpi-tcp.csv"
        fi
    done
    for f in "$one" "$two"; do
        [ -s "$f" ] || continue
        echo "== $f"
        bash cmake/bench_results.sh show-auto "$f"
    done
done
