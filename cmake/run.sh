#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One-stop set-up and run for a fresh Debian 12 machine (see README.md):
#   bash cmake/run.sh test     install dependencies, build and run the whole test suite
#                              against Open MPI and MPICH
#   bash cmake/run.sh bench    install dependencies, build, run the early-bird driver on
#                              2 local ranks (table on stdout, CSV + PNG under results/)
#   bash cmake/run.sh bench-2hosts
#                              the same with one rank on each of two emulated hosts over TCP
#                              (root; tests/multihost; TRANSPORT=tcp|ucx for Open MPI)
#   bash cmake/run.sh bench-coll
#                              the partitioned collectives' benchmark (mpipcl-bench
#                              --collective) for each of COLLECTIVES (default "bcast allreduce
#                              reduce gather allgather alltoall neighbor") on NP (default 4)
#                              local ranks, into one CSV under results/ (BENCH_ARGS replaces the
#                              default point flags; LAUNCHES=3 takes each cell's median
#                              across three launches)
#   bash cmake/run.sh bench-coll-2hosts
#                              the same with the NP ranks alternating between the two emulated
#                              hosts (root; TRANSPORT as for bench-2hosts)
#   bash cmake/run.sh app      the 3-D Jacobi application with partitioned halos
#                              (mpipcl-stencil, benchmarks/apps) on NP (default 2) local ranks
#                              (table on stdout, results/app-<mpi>.csv and .png; APP_ARGS adds
#                              flags, e.g. "--nx 128 --iterations 20 --repeats 1")
#   bash cmake/run.sh app-2hosts
#                              the same with the NP ranks alternating between the two emulated
#                              hosts (root; TRANSPORT as for bench-2hosts)
# Environment: MPIS="openmpi mpich" (which MPIs), JOBS (build parallelism),
#              BENCH_ARGS (extra flags for mpipcl-bench), APP_ARGS (extra flags for
#              mpipcl-stencil), BUILD_TYPE (default RelWithDebInfo),
#              CTEST_ARGS (extra ctest flags, e.g. "-L smoke" for a subset), CTEST_ARGS_OPENMPI
#              and CTEST_ARGS_MPICH (extra ctest flags against that MPI only),
#              FINALIZE=gate|report|skip: the clean-finalize tests (label finalize) are run
#              after the suite and fail the run (default gate), are only reported, or skipped.
#              MULTIHOST=gate|skip: the MPI tests across two emulated hosts (label multihost,
#              tests/multihost/README.md) run after the one-host suite and fail the run
#              (default gate; they need root and are skipped with a message without it);
#              MULTIHOST_ARGS (extra ctest flags for that part, e.g. "-L multihost-tcp"),
#              MULTIHOST_ARGS_OPENMPI and MULTIHOST_ARGS_MPICH (against that MPI only).
#              Tests labelled flaky (tests/README.md) are left out of those runs; after them a
#              separate step prints "== flaky tests: N" and runs them with up to 3 tries each,
#              part by part with that part's flags.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
what=${1:-test}
jobs=${JOBS:-$(nproc)}
build_type=${BUILD_TYPE:-RelWithDebInfo}
packages=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libmpich-dev mpich
          libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev gnuplot-nox valgrind
          iproute2 util-linux)

install_deps() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
}

# Open MPI refuses to run as root and to oversubscribe unless told; the machine has 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

build() {  # $1 = openmpi | mpich
    local mpi=$1 dir="build-$1"
    echo "== configuring and building against $mpi in $dir"
    cmake -S . -B "$dir" -DMPI_C_COMPILER="mpicc.$mpi" -DCMAKE_BUILD_TYPE="$build_type" \
        -DMPIPCL_ENABLE_TESTS=ON -DMPIPCL_ENABLE_BENCHMARKS=ON >"$dir.configure.log" 2>&1 \
        || { cat "$dir.configure.log"; return 1; }
    cmake --build "$dir" -j "$jobs"
}

# Whether the multihost twins run (MULTIHOST, and root for the network namespaces).
multihost_enabled() {
    [ "${MULTIHOST:-gate}" != skip ] && [ "$(id -u)" -eq 0 ]
}

# ctest on the multihost twins of build-$1 with the flags that follow: the hosts fixture
# creates and removes the two emulated hosts; the trap removes them also when this script is
# interrupted.
ctest_multihost() {  # $1 = openmpi | mpich, then ctest flags
    local mpi=$1 rc=0
    shift
    trap 'ctest --test-dir "build-'"$mpi"'" -R "^multihost\.hosts_down$" >/dev/null 2>&1' EXIT
    ctest --test-dir "build-$mpi" --output-on-failure --timeout 300 -L multihost "$@" || rc=1
    trap - EXIT
    return $rc
}

# The multihost twins of the suite (tests/multihost).
run_multihost() {  # $1 = openmpi | mpich
    local mpi=$1 per_mpi="MULTIHOST_ARGS_${1^^}"
    [ "${MULTIHOST:-gate}" = skip ] && return 0
    if ! multihost_enabled; then
        echo "== multihost tests against $mpi: skipped (they need root for network namespaces)"
        return 0
    fi
    echo "== multihost tests against $mpi (two emulated hosts, TCP) ${MULTIHOST_ARGS:-}" \
         "${!per_mpi:-}"
    # shellcheck disable=SC2086
    ctest_multihost "$mpi" -LE flaky ${MULTIHOST_ARGS:-} ${!per_mpi:-}
}

# How many tests of build directory $1 the ctest flags that follow select.
count_tests() {
    local dir=$1
    shift
    ctest --test-dir "$dir" -N "$@" | sed -n 's/^Total Tests: //p'
}

# The flag that retries a flaky test up to 3 times, unless the flags given hold a --repeat.
retry_flag() {
    [[ " $* " == *" --repeat "* ]] || echo "--repeat until-pass:3"
}

# The tests labelled flaky (tests/README.md), left out of the runs before: each part's (one
# host with CTEST_ARGS, multihost with MULTIHOST_ARGS, finalize as FINALIZE says) with that
# part's flags, retried.
run_flaky() {  # $1 = openmpi | mpich
    local mpi=$1 dir="build-$1" per_mpi="CTEST_ARGS_${1^^}" mh_per_mpi="MULTIHOST_ARGS_${1^^}"
    local n rc=0 args finalize=${FINALIZE:-gate}
    n=$(count_tests "$dir" -L flaky -FA '.*')  # the tests, without the fixtures they pull in
    echo "== flaky tests: $n (build-$mpi; label flaky, tests/README.md)"
    [ "$n" -gt 0 ] || return 0
    args="${CTEST_ARGS:-} ${!per_mpi:-}"
    # shellcheck disable=SC2086,SC2046
    if [ "$(count_tests "$dir" -L flaky -LE 'finalize|multihost' $args)" -gt 0 ]; then
        ctest --test-dir "$dir" --output-on-failure --timeout 300 -L flaky \
            -LE 'finalize|multihost' $(retry_flag $args) $args || rc=1
    fi
    args="${MULTIHOST_ARGS:-} ${!mh_per_mpi:-}"
    # shellcheck disable=SC2086,SC2046
    if multihost_enabled && [ "$(count_tests "$dir" -L flaky -L multihost $args)" -gt 0 ]; then
        ctest_multihost "$mpi" -L flaky $(retry_flag $args) $args || rc=1
    fi
    # shellcheck disable=SC2046
    if [ "$finalize" != skip ] && [ "$(count_tests "$dir" -L flaky -L finalize)" -gt 0 ]; then
        ctest --test-dir "$dir" --output-on-failure --timeout 300 -L flaky -L finalize \
            $(retry_flag) || { [ "$finalize" = gate ] && rc=1; }
    fi
    return $rc
}

run_tests() {
    local rc=0 finalize=${FINALIZE:-gate} per_mpi
    for mpi in ${MPIS:-openmpi mpich}; do
        build "$mpi"
        per_mpi="CTEST_ARGS_${mpi^^}"
        echo "== ctest against $mpi ${CTEST_ARGS:-} ${!per_mpi:-}"
        # shellcheck disable=SC2086
        ctest --test-dir "build-$mpi" --output-on-failure --timeout 300 \
            -LE 'finalize|multihost|flaky' ${CTEST_ARGS:-} ${!per_mpi:-} || rc=1
        run_multihost "$mpi" || rc=1
        if [ "$finalize" != skip ]; then
            echo "== clean-finalize tests against $mpi (FINALIZE=$finalize)"
            if ! ctest --test-dir "build-$mpi" --output-on-failure --timeout 300 -L finalize \
                -LE flaky; then
                if [ "$finalize" = gate ]; then
                    rc=1
                else
                    echo "== known issue: a clean-finalize test failed against $mpi (not gating;" \
                         "FINALIZE=gate makes it fail the run)"
                fi
            fi
        fi
        run_flaky "$mpi" || rc=1
    done
    return $rc
}

run_bench() {
    local mpi=${MPIS:-openmpi}
    mpi=${mpi%% *}
    build "$mpi"
    mkdir -p results
    local exe="build-$mpi/benchmarks/mpipcl-bench"
    local launcher="mpiexec.$mpi"
    local extra=()
    # Open MPI binds each of 2 ranks to one core: the sender's T threads would share one core.
    # MPICH's Hydra does not bind; unbound, both MPIs run the same placement.
    [ "$mpi" = openmpi ] && extra=(--oversubscribe --bind-to none)
    echo "== mpipcl-bench on 2 local ranks ($mpi)"
    # shellcheck disable=SC2086
    "$launcher" -n 2 "${extra[@]}" "$exe" --csv "results/bench-$mpi.csv" \
        --plot "results/bench-$mpi.png" ${BENCH_ARGS:-}
    echo "== results: $here/results/bench-$mpi.csv and $here/results/bench-$mpi.png"
}

# The two emulated hosts of tests/multihost (root), removed again on every exit path. On
# MPICH a launch whose ranks all entered the MPI's own MPI_Finalize ends 5 s later even if that
# call hangs (UCX over TCP, tests/platform/ucx_tcp_finalize_hang.c): the results are written.
hosts_up() {  # $1 = openmpi | mpich
    local hosts="$here/tests/multihost/hosts.sh"
    export MPIPCL_MH_NAME=mpipcl-bench MPIPCL_MH_SUBNET=10.231.11 MPIPCL_MH_TIMEOUT=${TIMEOUT:-3600}
    if [ "$1" = mpich ]; then
        export MPIPCL_MH_FINALIZE_HANG_OK=1 MPIPCL_MH_PASS_LINE="" MPIPCL_LOG_LEVEL=info
    fi
    "$hosts" up
    # shellcheck disable=SC2064  # the path now, on the way out
    trap "\"$hosts\" down" EXIT
}

# The early-bird driver with one rank on each of two emulated hosts.
run_bench_2hosts() {
    local mpi=${MPIS:-openmpi} transport=${TRANSPORT:-tcp}
    mpi=${mpi%% *}
    build "$mpi"
    mkdir -p results
    local tag="2hosts-$mpi-$transport"
    hosts_up "$mpi"
    echo "== mpipcl-bench on 2 emulated hosts ($mpi, $transport)"
    # shellcheck disable=SC2086
    "$here/tests/multihost/mpiexec.sh" "$mpi" "$transport" 2 \
        "$here/build-$mpi/benchmarks/mpipcl-bench" --csv "results/bench-$tag.csv" \
        --plot "results/bench-$tag.png" ${BENCH_ARGS:-}
    echo "== results: $here/results/bench-$tag.csv and $here/results/bench-$tag.png"
}

# The partitioned collectives' benchmark: one mpipcl-bench --collective run per collective of
# build-$1, launched by the command after $2, the CSVs concatenated into results/coll-$2.csv
# (cmake/bench_results.sh record coll-<name>). The block-wise collectives' size is one block,
# so their 1M,4M blocks move about what bcast's 4M,16M buffers do on 4 ranks. LAUNCHES (default
# 1) launches each collective that many times, in turns (every collective once, then again), and
# each cell of the CSV is the median across the launches (cmake/bench_results.sh merge).
bench_coll_each() {  # $1 = openmpi | mpich, $2 = tag, then the launcher and its flags
    local mpi=$1 tag=$2 c sizes launch launches=${LAUNCHES:-1} colls
    shift 2
    colls=${COLLECTIVES:-bcast allreduce reduce gather allgather alltoall neighbor}
    mkdir -p results
    local out="results/coll-$tag.csv"
    : >"$out"
    for launch in $(seq 1 "$launches"); do
        for c in $colls; do
            echo "== mpipcl-bench --collective $c ($tag, ${NP:-4} ranks, launch $launch of $launches)"
            case $c in
                gather | allgather | alltoall | neighbor) sizes=1M,4M ;;
                *) sizes=4M,16M ;;
            esac
            # shellcheck disable=SC2086
            "$@" "$here/build-$mpi/benchmarks/mpipcl-bench" \
                --collective "$c" --csv "results/coll-$tag-$c.$launch.csv" \
                ${BENCH_ARGS:---sizes $sizes --partitions 16 --noise 10 --repeats 3}
        done
    done
    for c in $colls; do
        if [ "$launches" -eq 1 ]; then
            mv "results/coll-$tag-$c.1.csv" "results/coll-$tag-$c.csv"
        else
            # shellcheck disable=SC2046  # the launches' file names hold no spaces
            bash "$here/cmake/bench_results.sh" merge \
                $(seq -f "results/coll-$tag-$c.%g.csv" 1 "$launches") >"results/coll-$tag-$c.csv"
        fi
        cat "results/coll-$tag-$c.csv" >>"$out"
    done
    echo "== results: $here/$out"
}

# The collectives on NP (default 4) local ranks.
run_bench_coll() {
    local mpi=${MPIS:-openmpi} extra=()
    mpi=${mpi%% *}
    build "$mpi"
    [ "$mpi" = openmpi ] && extra=(--oversubscribe --bind-to none)
    bench_coll_each "$mpi" "$mpi" "mpiexec.$mpi" -n "${NP:-4}" "${extra[@]}"
}

# The collectives on NP (default 4) ranks that alternate between the two emulated hosts.
run_bench_coll_2hosts() {
    local mpi=${MPIS:-openmpi} transport=${TRANSPORT:-tcp}
    mpi=${mpi%% *}
    build "$mpi"
    hosts_up "$mpi"
    bench_coll_each "$mpi" "2hosts-$mpi-$transport" \
        "$here/tests/multihost/mpiexec.sh" "$mpi" "$transport" "${NP:-4}"
}

# mpipcl-stencil of build-$1 on NP (default 2) ranks, launched by the command after $2: the
# table on stdout, results/app-$2.csv and results/app-$2.png. When the ranks' OpenMP threads
# (OMP_NUM_THREADS, else one per core) outnumber the cores, idle threads sleep instead of
# spinning (OMP_WAIT_POLICY=passive, unless set).
run_stencil() {  # $1 = openmpi | mpich, $2 = tag, then the launcher and its flags
    local mpi=$1 tag=$2 np=${NP:-2} cores threads
    shift 2
    cores=$(nproc)
    threads=${OMP_NUM_THREADS:-$cores}
    if [ -z "${OMP_WAIT_POLICY:-}" ] && [ $((np * threads)) -gt "$cores" ]; then
        export OMP_WAIT_POLICY=passive
        echo "== $np ranks x $threads threads on $cores cores: OMP_WAIT_POLICY=passive"
    fi
    mkdir -p results
    local out="results/app-$tag"
    rm -f "$out.png"
    echo "== mpipcl-stencil on $np ranks ($tag) ${APP_ARGS:-}"
    # shellcheck disable=SC2086
    "$@" "$here/build-$mpi/benchmarks/mpipcl-stencil" --csv "$out.csv" --plot "$out.png" \
        ${APP_ARGS:-}
    # The program draws the plot after MPI_Finalize; a launch that ended there (see hosts_up)
    # left only the script.
    if [ ! -f "$out.png" ] && [ -f "$out.gp" ] && command -v gnuplot >/dev/null; then
        gnuplot "$out.gp"
    fi
    echo "== results: $here/$out.csv and $here/$out.png"
}

# The stencil application on NP local ranks.
run_app() {
    local mpi=${MPIS:-openmpi} extra=()
    mpi=${mpi%% *}
    build "$mpi"
    # As for bench: unbound, so that each rank's threads can use every core.
    [ "$mpi" = openmpi ] && extra=(--oversubscribe --bind-to none)
    run_stencil "$mpi" "$mpi" "mpiexec.$mpi" -n "${NP:-2}" "${extra[@]}"
}

# The stencil application on NP ranks that alternate between the two emulated hosts.
run_app_2hosts() {
    local mpi=${MPIS:-openmpi} transport=${TRANSPORT:-tcp}
    mpi=${mpi%% *}
    build "$mpi"
    hosts_up "$mpi"
    run_stencil "$mpi" "2hosts-$mpi-$transport" \
        "$here/tests/multihost/mpiexec.sh" "$mpi" "$transport" "${NP:-2}"
}

install_deps
case "$what" in
    test) run_tests ;;
    bench) run_bench ;;
    bench-2hosts) run_bench_2hosts ;;
    bench-coll) run_bench_coll ;;
    bench-coll-2hosts) run_bench_coll_2hosts ;;
    app) run_app ;;
    app-2hosts) run_app_2hosts ;;
    *) echo "usage: $0 test|bench|bench-2hosts|bench-coll|bench-coll-2hosts|app|app-2hosts" >&2
       exit 2 ;;
esac
