#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The ICPP'22 partitioned micro-benchmarks (Temuçin, Grant, Afsahi; branch mpi-native) against
# mpipcl, the MPI's own partitioned calls and MPIPCL, on 2 local ranks (README.md beside this
# script). Builds what is missing, runs every program for every target, RUNS times with the
# targets interleaved, and writes raw outputs, one CSV and a median table per program.
#
# Environment:
#   ICPP22_SRC   checkout of Yiltan/MPI-Partitioned-Microbenchmarks, branch mpi-native (required)
#   MPIPCL_SRC   checkout of mpi-advance/MPIPCL (for the MPIPCL target; without it that target
#                is left out, or is an error if TARGETS names it)
#   MPIS         MPIs to use (default "openmpi mpich"; compilers mpicc.<mpi>, launcher
#                mpiexec.<mpi>)
#   TARGETS      targets for every MPI (default: per MPI, every target that applies):
#                  mpipcl             this library, default backend (MPIPCL_BACKEND unset)
#                  mpipcl-persistent  this library, MPIPCL_BACKEND=persistent
#                  mpipcl-rma         this library, MPIPCL_BACKEND=rma
#                  native             the MPI's own partitioned calls (default on MPICH)
#                  MPIPCL             mpi-advance/MPIPCL (default on Open MPI)
#   PROGRAMS     default "overhead early_bird perceived_bandwidth"
#   SIZES        message sizes in bytes, suffixes K and M; a comma/space list of items, each
#                "MIN:MAX" (one launch; the programs double from MIN to MAX) or one size
#                (default 64K:16M: the nine sizes 64 KiB ... 16 MiB in one launch)
#   RUNS         launches per (program, size item, MPI, target) (default 3)
#   THREADS (16), COMPUTE_MS (10; the programs' --compute-time is in ms), NOISE (4, percent),
#   NOISE_TYPE (Uniform; Single or Gaussian), ITERATIONS (20), WARMUP (10, the programs' default)
#   TIMEOUT      seconds per launch (default 1200); a launch that exceeds it is killed,
#                reported and left out of the CSV
#   BUILD_DIR    where everything is built (default <tree>/build-icpp22)
#   MPIPCL_BUILD_OPENMPI, MPIPCL_BUILD_MPICH
#                build dir of this tree for that MPI (default BUILD_DIR/mpipcl-<mpi>); the
#                mpipcl target is (re)built there with CMake before the runs
#   OUT          results (default <tree>/results/icpp22): raw/ (stdout and stderr of every
#                launch), icpp22.csv (program,target,mpi,size,run,value), tables.md, meta.txt
#   JOBS         build parallelism (default 2)
# Exit status: 0 if every launch gave every expected value, 1 otherwise, 2 on bad settings.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

die() { echo "icpp22: $*" >&2; exit 2; }

[ -n "${ICPP22_SRC:-}" ] || die "set ICPP22_SRC to a checkout of the ICPP'22 benchmarks (README.md)"
[ -f "$ICPP22_SRC/src/pt2pt/overhead.c" ] || die "ICPP22_SRC=$ICPP22_SRC has no src/pt2pt/overhead.c"
ICPP22_SRC=$(cd "$ICPP22_SRC" && pwd)
if [ -n "${MPIPCL_SRC:-}" ]; then
    [ -f "$MPIPCL_SRC/include/mpipcl.h" ] || die "MPIPCL_SRC=$MPIPCL_SRC has no include/mpipcl.h"
    MPIPCL_SRC=$(cd "$MPIPCL_SRC" && pwd)
fi

mpis=${MPIS:-openmpi mpich}
programs=${PROGRAMS:-overhead early_bird perceived_bandwidth}
sizes=${SIZES:-64K:16M}
runs=${RUNS:-3}
threads=${THREADS:-16}
compute_ms=${COMPUTE_MS:-10}
noise=${NOISE:-4}
noise_type=${NOISE_TYPE:-Uniform}
iterations=${ITERATIONS:-20}
warmup=${WARMUP:-10}
timeout_s=${TIMEOUT:-1200}
build=${BUILD_DIR:-$root/build-icpp22}
out=${OUT:-$root/results/icpp22}
jobs=${JOBS:-2}

for v in runs threads compute_ms noise iterations warmup timeout_s jobs; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, not '${!v}'"
done
case "$noise_type" in Single | Uniform | Gaussian) ;; *) die "NOISE_TYPE: Single, Uniform or Gaussian" ;; esac
for p in $programs; do
    [ -f "$ICPP22_SRC/src/pt2pt/$p.c" ] || die "no program $p in $ICPP22_SRC/src/pt2pt"
done

bytes() {  # 64K -> 65536
    local s=$1
    case "$s" in
        *[Kk]) echo $((${s%?} * 1024)) ;;
        *[Mm]) echo $((${s%?} * 1048576)) ;;
        *) echo "$s" ;;
    esac
}

# Size items -> "MIN:MAX" in bytes, and how many sizes each launch prints.
items=() labels=() counts=()
for item in ${sizes//,/ }; do
    lo=${item%%:*} hi=${item#*:}
    [[ $lo =~ ^[0-9]+[KkMm]?$ && $hi =~ ^[0-9]+[KkMm]?$ ]] || die "bad size item '$item'"
    lo=$(bytes "$lo") hi=$(bytes "$hi")
    [ "$lo" -le "$hi" ] || die "size item '$item': MIN above MAX"
    [ $((lo % (8 * threads))) -eq 0 ] || die "size $lo is not a multiple of 8 bytes x $threads partitions"
    n=0
    for ((s = lo; s <= hi; s *= 2)); do n=$((n + 1)); done
    items+=("$lo:$hi") labels+=("$item") counts+=("$n")
done
[ ${#items[@]} -gt 0 ] || die "SIZES is empty"

default_targets() {  # $1 = mpi
    case "$1" in
        openmpi) echo "mpipcl mpipcl-persistent mpipcl-rma${MPIPCL_SRC:+ MPIPCL}" ;;
        mpich) echo "mpipcl mpipcl-persistent mpipcl-rma native" ;;
        *) echo "mpipcl mpipcl-persistent mpipcl-rma" ;;
    esac
}
if [ -z "${MPIPCL_SRC:-}" ] && [ -z "${TARGETS:-}" ] && [[ " $mpis " == *" openmpi "* ]]; then
    echo "icpp22: MPIPCL_SRC not set: the MPIPCL target is left out" >&2
fi
for t in ${TARGETS:-}; do
    case "$t" in
        mpipcl | mpipcl-persistent | mpipcl-rma | native) ;;
        MPIPCL) [ -n "${MPIPCL_SRC:-}" ] || die "TARGETS names MPIPCL: set MPIPCL_SRC" ;;
        *) die "unknown target '$t' (mpipcl, mpipcl-persistent, mpipcl-rma, native, MPIPCL)" ;;
    esac
done

mkdir -p "$build/logs" "$out/raw"
log="$build/logs"

# ---------------------------------------------------------------------------------------------
# Building. The benchmarks are compiled directly with the MPI's wrappers (no autotools: the
# checkout stays untouched), with the flags of their Makefile.am minus -Werror, and autoconf's
# default -g -O2. Three flavours of each program per MPI:
#   mpipcl  -include <tree>/include/mpipcl.h (declares the calls where mpi.h lacks them);
#           libmpipcl before the MPI on the link line
#   native  the sources as they are, the MPI only
#   MPIPCL  -include mpipcl_names.h (the MPI_P* names onto MPIPCL's MPIP_*), libMPIPCL
# ---------------------------------------------------------------------------------------------
cflags=(-g -O2 -fopenmp -Wall -Wextra -Wno-unused-parameter)

# True if $1 is missing or older than any of the other files.
stale() {
    local t=$1 f
    shift
    [ -e "$t" ] || return 0
    for f in "$@"; do [ "$f" -nt "$t" ] && return 0; done
    return 1
}

run_logged() {  # $1 = log file, then the command; shows the log's tail on failure
    local f=$1
    shift
    if ! "$@" >"$f" 2>&1; then
        echo "icpp22: failed: $* (log $f):" >&2
        tail -n 30 "$f" >&2
        return 1
    fi
}

mpipcl_build_dir() {  # $1 = mpi
    local var
    var="MPIPCL_BUILD_$(echo "$1" | tr '[:lower:]' '[:upper:]')"
    echo "${!var:-$build/mpipcl-$1}"
}

build_mpipcl() {  # $1 = mpi: this tree's library, always brought up to date
    local mpi=$1 dir
    dir=$(mpipcl_build_dir "$mpi")
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        echo "== configuring mpipcl ($mpi) in $dir"
        run_logged "$log/mpipcl-$mpi.configure.log" cmake -S "$root" -B "$dir" \
            -DMPI_C_COMPILER="mpicc.$mpi" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    fi
    echo "== building mpipcl ($mpi) in $dir"
    run_logged "$log/mpipcl-$mpi.build.log" cmake --build "$dir" -j "$jobs" --target mpipcl
}

build_MPIPCL() {  # $1 = mpi: mpi-advance/MPIPCL with its own defaults (Release)
    local mpi=$1 dir="$build/MPIPCL-$1"
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        echo "== configuring MPIPCL ($mpi) in $dir"
        run_logged "$log/MPIPCL-$mpi.configure.log" cmake -S "$MPIPCL_SRC" -B "$dir" \
            -DMPI_C_COMPILER="mpicc.$mpi"
    fi
    echo "== building MPIPCL ($mpi) in $dir"
    run_logged "$log/MPIPCL-$mpi.build.log" cmake --build "$dir" -j "$jobs"
}

# The programs' helpers (util.c, normal_distribution.cpp) and config.h, once per MPI.
build_common() {  # $1 = mpi
    local mpi=$1 dir="$build/bench-$1"
    mkdir -p "$dir"
    [ -f "$dir/config.h" ] || printf '%s\n' '#define PACKAGE_NAME "mpm"' '#define PACKAGE_VERSION "0.1"' \
        '#define PACKAGE_STRING "mpm 0.1"' >"$dir/config.h"
    if stale "$dir/util.o" "$ICPP22_SRC/src/util.c" "$ICPP22_SRC/src/util.h"; then
        run_logged "$log/util-$mpi.log" "mpicc.$mpi" "${cflags[@]}" -I"$dir" -I"$ICPP22_SRC/src" \
            -c "$ICPP22_SRC/src/util.c" -o "$dir/util.o"
    fi
    if stale "$dir/normal_distribution.o" "$ICPP22_SRC/src/normal_distribution.cpp"; then
        run_logged "$log/normal_distribution-$mpi.log" "mpicxx.$mpi" -g -O2 -fopenmp \
            -c "$ICPP22_SRC/src/normal_distribution.cpp" -o "$dir/normal_distribution.o"
    fi
}

# Builds program $3 of flavour $2 for MPI $1 if it is missing or older than its inputs.
build_program() {  # $1 = mpi, $2 = flavour, $3 = program
    local mpi=$1 flavour=$2 prog=$3 dir="$build/bench-$1" inc=() lib=() deps=()
    local src="$ICPP22_SRC/src/pt2pt/$prog.c" bin="$build/bench-$1/$2/$3"
    local mdir
    case "$flavour" in
        mpipcl)
            mdir=$(mpipcl_build_dir "$mpi")
            inc=(-include "$root/include/mpipcl.h" -I"$root/include" -I"$mdir/include")
            lib=(-L"$mdir/src" "-Wl,-rpath,$mdir/src" -lmpipcl)
            deps=("$root/include/mpipcl.h") ;;
        native) ;;
        MPIPCL)
            inc=(-include "$here/mpipcl_names.h" -I"$MPIPCL_SRC/include")
            lib=(-L"$build/MPIPCL-$mpi" "-Wl,-rpath,$build/MPIPCL-$mpi" -lMPIPCL)
            deps=("$here/mpipcl_names.h" "$MPIPCL_SRC/include/mpipcl.h") ;;
    esac
    stale "$bin" "$src" "$ICPP22_SRC/src/util.h" "$dir/util.o" "${deps[@]}" || return 0
    mkdir -p "$dir/$flavour"
    run_logged "$log/$prog-$mpi-$flavour.log" "mpicc.$mpi" "${cflags[@]}" "${inc[@]}" -I"$dir" \
        -I"$ICPP22_SRC/src" -o "$bin" "$src" "$dir/util.o" "$dir/normal_distribution.o" \
        "${lib[@]}" -lstdc++ -lm || return 1
    # The MPI's wrapper appends the MPI library: libmpipcl / libMPIPCL must come first.
    if [ "$flavour" != native ]; then
        local needed want
        want=$([ "$flavour" = mpipcl ] && echo libmpipcl || echo libMPIPCL)
        needed=$(readelf -d "$bin" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }' |
            grep -E "^($want|libmpi|libmpich)[._]" | head -n 1)
        [[ $needed == "$want".* ]] || { echo "icpp22: $bin: $needed precedes $want" >&2; return 1; }
    fi
}

flavour_of() {  # target -> flavour
    case "$1" in mpipcl*) echo mpipcl ;; *) echo "$1" ;; esac
}

# The (mpi, target) combinations, built; a target that cannot exist on an MPI is left out.
combos=()
for mpi in $mpis; do
    command -v "mpicc.$mpi" >/dev/null || die "no mpicc.$mpi"
    command -v "mpiexec.$mpi" >/dev/null || die "no mpiexec.$mpi"
    build_common "$mpi"
    built=" "
    for t in ${TARGETS:-$(default_targets "$mpi")}; do
        fl=$(flavour_of "$t")
        if [[ $built != *" $fl "* ]]; then
            case "$fl" in
                mpipcl) build_mpipcl "$mpi" ;;
                MPIPCL) build_MPIPCL "$mpi" ;;
                native)
                    # An MPI without partitioned calls in mpi.h (Open MPI 4.1) has no native target.
                    if ! echo '#include <mpi.h>
int main(void) { MPI_Request r; return MPI_Psend_init(0, 1, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r); }' |
                        "mpicc.$mpi" -x c -fsyntax-only -Werror=implicit-function-declaration - 2>/dev/null; then
                        echo "icpp22: $mpi: mpi.h has no MPI_Psend_init: no native target" >&2
                        continue
                    fi ;;
            esac
            for p in $programs; do build_program "$mpi" "$fl" "$p"; done
            built="$built$fl "
        fi
        combos+=("$mpi $t")
    done
done
[ ${#combos[@]} -gt 0 ] || die "no target to run"

# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
csv="$out/icpp22.csv"
rm -f "$out"/raw/*.out "$out"/raw/*.err
echo "program,target,mpi,size,run,value" >"$csv"
{
    echo "mpipcl: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "icpp22: $ICPP22_SRC $(git -C "$ICPP22_SRC" rev-parse HEAD 2>/dev/null || echo '(not a git checkout)')"
    [ -z "${MPIPCL_SRC:-}" ] || echo "MPIPCL: $MPIPCL_SRC $(git -C "$MPIPCL_SRC" rev-parse HEAD 2>/dev/null || echo '(not a git checkout)')"
    echo "machine: $(nproc)-core $(uname -m), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "settings: programs '$programs', sizes '${labels[*]}' (${items[*]} bytes), runs $runs, threads $threads, compute $compute_ms ms, noise $noise % $noise_type, iterations $iterations, warmup $warmup"
    echo "combinations: ${combos[*]}"
} >"$out/meta.txt"

args=(--threads "$threads" --compute-time "$compute_ms" --percent-noise "$noise"
      --noise-type "$noise_type" --iterations "$iterations" --warmup "$warmup")

launch() {  # $1 = mpi, $2 = target, $3 = binary, then its arguments
    local mpi=$1 t=$2 bin=$3 envs=(env -u MPIPCL_BACKEND)
    shift 3
    case "$t" in mpipcl-*) envs=(env "MPIPCL_BACKEND=${t#mpipcl-}") ;; esac
    if [ "$mpi" = openmpi ]; then
        # Open MPI would bind each rank to one core, putting all threads of a rank on it.
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            timeout -k 10 "$timeout_s" "mpiexec.$mpi" -n 2 --oversubscribe --bind-to none \
            "${envs[@]}" "$bin" "$@"
    else
        timeout -k 10 "$timeout_s" "mpiexec.$mpi" -n 2 "${envs[@]}" "$bin" "$@"
    fi
}

failures=()
ncombo=${#combos[@]}
for ((r = 1; r <= runs; r++)); do
    for p in $programs; do
        for i in "${!items[@]}"; do
            item=${items[$i]} want=${counts[$i]} shown=${labels[$i]}
            # Targets interleaved; each run starts one combination further on.
            for ((k = 0; k < ncombo; k++)); do
                read -r mpi t <<<"${combos[$(((k + r - 1) % ncombo))]}"
                bin="$build/bench-$mpi/$(flavour_of "$t")/$p"
                raw="$out/raw/$p-$mpi-$t-${item/:/-}-run$r"
                start=$SECONDS rc=0
                launch "$mpi" "$t" "$bin" "${args[@]}" --message-size "$item" >"$raw.out" 2>"$raw.err" || rc=$?
                got=$(awk -v p="$p" -v t="$t" -v m="$mpi" -v r="$r" \
                    'NF == 2 && $1 ~ /^[0-9]+$/ { printf "%s,%s,%s,%s,%s,%s\n", p, t, m, $1, r, $2 }' "$raw.out")
                n=0
                [ -z "$got" ] || { n=$(printf '%s\n' "$got" | wc -l); printf '%s\n' "$got" >>"$csv"; }
                status=ok
                if [ "$rc" -ne 0 ] || [ "$n" -ne "$want" ]; then
                    case "$rc" in 124 | 137) status="TIMEOUT after ${timeout_s} s" ;; 0) status="INCOMPLETE" ;; *) status="FAILED (exit $rc)" ;; esac
                    failures+=("$p $mpi $t $shown run $r: $status, $n of $want values (raw $raw.out/.err)")
                fi
                printf '== run %d/%d %-19s %-8s %-7s %-17s %s, %d of %d values, %d s\n' \
                    "$r" "$runs" "$p" "$shown" "$mpi" "$t" "$status" "$n" "$want" $((SECONDS - start))
            done
        done
    done
done

# ---------------------------------------------------------------------------------------------
# Tables: per program, the median over the runs, one row per size, one column per MPI/target.
# ---------------------------------------------------------------------------------------------
awk -F, -v combos="${combos[*]}" -v runs="$runs" '
    BEGIN {
        n = split(combos, w, " ")
        for (i = 1; i < n; i += 2) { nc++; col[nc] = w[i] " " w[i + 1] }
        what["overhead"] = "partitioned round trip / MPI_Send round trip (lower is better)"
        what["early_bird"] = "% of the communication time inside the compute phase (higher is better)"
        what["perceived_bandwidth"] = "MB/s, sender-perceived (higher is better)"
    }
    NR == 1 { next }
    {
        p = $1; c = $3 " " $2; s = $4 + 0
        if (!(p in seenp)) { seenp[p] = 1; progs[++np] = p }
        if (!((p, s) in seens)) { seens[p, s] = 1; ns[p]++; size[p, ns[p]] = s }
        k = p SUBSEP c SUBSEP s
        v[k, ++cnt[k]] = $6
    }
    function median(k,    m, i, j, t, a) {
        m = cnt[k]
        for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    function label(b) {
        if (b % 1048576 == 0) return (b / 1048576) " MiB"
        if (b % 1024 == 0) return (b / 1024) " KiB"
        return b " B"
    }
    function num(x) {
        if (x >= 100) return sprintf("%.0f", x)
        if (x >= 10) return sprintf("%.1f", x)
        return sprintf("%.2f", x)
    }
    END {
        for (q = 1; q <= np; q++) {
            p = progs[q]
            printf "### %s: %s, median of %s run(s)\n\n", p, what[p], runs
            line = "| size |"; sep = "|---|"
            for (j = 1; j <= nc; j++) { line = line " " col[j] " |"; sep = sep "---|" }
            print line; print sep
            # sizes ascending
            for (i = 1; i <= ns[p]; i++) ss[i] = size[p, i]
            for (i = 2; i <= ns[p]; i++) { t = ss[i]; for (j = i - 1; j >= 1 && ss[j] > t; j--) ss[j + 1] = ss[j]; ss[j + 1] = t }
            for (i = 1; i <= ns[p]; i++) {
                line = "| " label(ss[i]) " |"
                for (j = 1; j <= nc; j++) {
                    k = p SUBSEP col[j] SUBSEP ss[i]
                    line = line " " ((k in cnt) ? num(median(k)) (cnt[k] < runs ? " (" cnt[k] ")" : "") : "–") " |"
                }
                print line
            }
            print ""
        }
    }' "$csv" >"$out/tables.md"

echo
cat "$out/tables.md"
echo "CSV: $csv; tables: $out/tables.md; raw outputs: $out/raw/; settings: $out/meta.txt"
if [ ${#failures[@]} -gt 0 ]; then
    echo "== ${#failures[@]} launch(es) failed:"
    printf '  %s\n' "${failures[@]}"
    exit 1
fi
