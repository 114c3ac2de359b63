#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the library and tests under AddressSanitizer (+UndefinedBehaviorSanitizer) in
# build-asan and under ThreadSanitizer in build-tsan, against Open MPI, and runs the threaded MPI
# tests there (`ctest -L asan`, `ctest -L tsan`; labels and runtime options come from
# cmake/MpipclTesting.cmake, TSan suppressions from tests/sanitizers/tsan.supp).
#   bash cmake/sanitizers.sh [asan|tsan ...]     (default: both)
# Environment: JOBS (build parallelism, default nproc), BUILD_TYPE (default RelWithDebInfo).
# Tests labelled flaky (tests/README.md) are left out of each run and then run apart with up to
# 3 tries each, after a line "== flaky tests: N".
#
# Why Open MPI: on shared memory (btl vader) its only TSan reports are lock-order inversions
# inside btl/tcp's MPI_Init/MPI_Finalize (suppressed, see tsan.supp). MPICH on Debian runs
# ch4:ucx, whose threads and lock-free queues are not instrumented. The compiler is gcc (what
# mpicc.openmpi wraps); CC=clang CXX=clang++ should work the same way.
# Exit status: non-zero when a configure, build or test step fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
jobs=${JOBS:-$(nproc)}
build_type=${BUILD_TYPE:-RelWithDebInfo}
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(asan tsan)

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# The build targets behind the tests of build directory $1 labelled $2: every file of the
# build directory that a test command names and that is a target of the build.
label_targets() {  # $1 = build directory, $2 = label
    local abs
    abs=$(cd "$1" && pwd)
    comm -12 \
        <(ctest --test-dir "$1" -N -V -L "$2" | sed -n 's/^[0-9]*: Test command: //p' \
              | grep -o "$abs/[^\" ]*" | xargs -r -n1 basename | sort -u) \
        <(cmake --build "$1" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | sort -u)
}

rc=0
for kind in "${kinds[@]}"; do
    case $kind in
        asan) sanitizer="address,undefined" ;;
        tsan) sanitizer="thread" ;;
        *) echo "unknown sanitizer build '$kind' (asan|tsan)" >&2; exit 2 ;;
    esac
    dir="build-$kind"
    start=$SECONDS
    echo "== $kind: configuring $dir (MPIPCL_SANITIZER=$sanitizer, Open MPI)"
    cmake -S . -B "$dir" -DMPI_C_COMPILER=mpicc.openmpi -DCMAKE_BUILD_TYPE="$build_type" \
        -DMPIPCL_SANITIZER="$sanitizer" -DMPIPCL_ENABLE_TESTS=ON -DMPIPCL_ENABLE_BENCHMARKS=OFF \
        >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; rc=1; continue; }
    # Only the programs the labelled tests run (and the library they link): the rest of the
    # suite never runs under the sanitizer. Everything is built if none is found.
    mapfile -t targets < <(label_targets "$dir" "$kind")
    echo "== $kind: building ${#targets[@]} test programs${targets[*]:+ (${targets[*]})}"
    cmake --build "$dir" -j "$jobs" ${targets[@]:+--target "${targets[@]}"} || { rc=1; continue; }
    echo "== $kind: ctest -L $kind"
    ctest --test-dir "$dir" -L "$kind" -LE flaky --output-on-failure --timeout 300 || rc=1
    flaky=$(ctest --test-dir "$dir" -N -L "$kind" -L flaky | sed -n 's/^Total Tests: //p')
    echo "== flaky tests: $flaky ($dir; label flaky, tests/README.md)"
    if [ "$flaky" -gt 0 ]; then
        ctest --test-dir "$dir" -L "$kind" -L flaky --repeat until-pass:3 --output-on-failure \
            --timeout 300 || rc=1
    fi
    echo "== $kind: done in $((SECONDS - start)) s"
done
exit $rc
