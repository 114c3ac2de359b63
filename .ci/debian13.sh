#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs `bash cmake/run.sh <what>` inside a Debian 13 (trixie) chroot: Open MPI 5.0, MPICH 4.2.
#   bash .ci/debian13.sh [test|bench]      (root; Debian host with debootstrap)
# Environment:
#   MPIPCL_CHROOT=DIR      where the chroot lives (default: a new directory under /var/tmp);
#                          an existing chroot there is reused, not rebuilt
#   MPIPCL_CHROOT_KEEP=1   keep it afterwards (default: a chroot made by this run is deleted)
#   MPIS, JOBS, CTEST_ARGS, CTEST_ARGS_OPENMPI, CTEST_ARGS_MPICH, FINALIZE, BUILD_TYPE,
#   BENCH_ARGS             passed to cmake/run.sh
#   MULTIHOST, MULTIHOST_ARGS  passed too; MULTIHOST defaults to skip here (the emulated hosts
#                          are made on Debian 12, outside the chroot)
# The source tree is copied in (without build directories); results/ is copied back.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
what=${1:-test}
root=${MPIPCL_CHROOT:-}
made=0
if [ -z "$root" ]; then
    root=$(mktemp -d /var/tmp/mpipcl-trixie.XXXXXX)
    chmod 755 "$root"  # apt's _apt user must reach /var/lib/apt inside
fi
packages=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libmpich-dev mpich
          libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev gnuplot-nox)

# The Debian mirror apt already uses here (deb822 "URIs:" or one-line "deb URI suite").
mirror() {
    local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources)
    local uri
    uri=$(cat "${files[@]}" 2>/dev/null | sed -nE \
        -e 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p' \
        -e 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
        | grep -E '/debian/?$' | head -n 1) || true
    echo "${uri:-http://deb.debian.org/debian}"
}

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
    done
    if [ "$made" = 1 ] && [ "${MPIPCL_CHROOT_KEEP:-0}" != 1 ]; then
        # Only after every mount is gone: never follow a bind mount into the host.
        if ! grep -q " $root/" /proc/mounts; then
            rm -rf --one-file-system "$root"
        fi
    fi
}
trap cleanup EXIT

mount_in() {  # mount_in <target below root> <mount args...>
    local target="$root/$1"
    shift
    mount "$@" "$target"
    mounted+=("$target")
}

t0=$SECONDS
if [ ! -x "$root/usr/bin/apt-get" ]; then
    made=1
    m=$(mirror)
    echo "== debootstrap trixie into $root from $m"
    debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$m" \
        >"$root.debootstrap.log" 2>&1 || { tail -n 30 "$root.debootstrap.log"; exit 1; }
    rm -f "$root.debootstrap.log"
fi
mount_in proc --bind /proc
mount_in dev --bind /dev
mount_in dev/pts --bind /dev/pts
mount_in dev/shm --bind /dev/shm
mount_in sys -t sysfs sysfs
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

in_root() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive CI="${CI:-}" "$@"
}
echo "== installing Debian 13 packages in the chroot"
in_root apt-get update -q >/dev/null
in_root apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
echo "== chroot ready after $((SECONDS - t0)) s: $(in_root mpicc.openmpi --showme:version 2>&1 | head -n 1);" \
    "$(in_root mpichversion | head -n 1 | tr -s ' ')"

# A fresh copy of the tree (build directories of the host would not fit Debian 13's tools).
rm -rf "$root/src/mpipcl"
mkdir -p "$root/src/mpipcl"
tar -C "$here" --exclude='./build*' --exclude=./results --exclude=./.git --exclude=./.chroot \
    -cf - . | tar -C "$root/src/mpipcl" -xf -

rc=0
in_root env MPIS="${MPIS:-openmpi mpich}" JOBS="${JOBS:-}" CTEST_ARGS="${CTEST_ARGS:-}" \
    CTEST_ARGS_OPENMPI="${CTEST_ARGS_OPENMPI:-}" CTEST_ARGS_MPICH="${CTEST_ARGS_MPICH:-}" \
    FINALIZE="${FINALIZE:-}" BUILD_TYPE="${BUILD_TYPE:-}" BENCH_ARGS="${BENCH_ARGS:-}" \
    MULTIHOST="${MULTIHOST:-skip}" MULTIHOST_ARGS="${MULTIHOST_ARGS:-}" \
    bash -c 'cd /src/mpipcl && bash cmake/run.sh "$1"' run "$what" || rc=$?
if [ -d "$root/src/mpipcl/results" ]; then
    mkdir -p "$here/results/debian13"
    cp -r "$root/src/mpipcl/results/." "$here/results/debian13/"
fi
echo "== Debian 13 $what: exit $rc after $((SECONDS - t0)) s"
exit $rc
