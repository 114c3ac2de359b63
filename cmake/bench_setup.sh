# SPDX-License-Identifier: BSD-3-Clause
# Shared set-up of the table scripts (bench_compute.sh, bench_app.sh, bench_progress.sh),
# sourced with the cmake/run.sh target of one host as $1: enters the source tree, reads
# SETUP (1host, the default, or 2hosts: the target "$1-2hosts"), sets $setup and $target,
# makes results/, and defines append.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
setup=${SETUP:-1host}
case "$setup" in
    1host) target=$1 ;;
    2hosts) target=$1-2hosts ;;
    *) echo "SETUP must be 1host or 2hosts, not '$setup'" >&2; exit 2 ;;
esac
mkdir -p results

# Appends the CSV $2 to $1, keeping one header.
append() {
    if [ -s "$1" ]; then tail -n +2 "$2" >>"$1"; else cat "$2" >"$1"; fi
}
