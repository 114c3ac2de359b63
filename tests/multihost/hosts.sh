#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two emulated hosts on one machine: two network namespaces joined by a veth pair (TCP only),
# each "host" with its own hostname (UTS namespace) and a hosts file that names both.
#   hosts.sh up       create the hosts (replaces leftovers of an earlier run)
#   hosts.sh down     kill every process inside them and remove them (idempotent)
#   hosts.sh check    exit 0 when both hosts exist, 77 when this user cannot create them
#   hosts.sh kill     kill every process inside the hosts, keep the hosts
#   hosts.sh exec HOST COMMAND...
#                     run COMMAND on HOST: in its network namespace, with its hostname and its
#                     own /proc/sys/kernel/random/boot_id (UCX and others tell machines apart by
#                     it: without it the two "hosts" would talk through shared memory)
# Environment: MPIPCL_MH_NAME (namespace prefix, default mpipcl-mh), MPIPCL_MH_SUBNET (the
# first three octets of a /24 that exists only inside the namespaces, default 10.231.77).
# Needs root (ip netns, unshare); the addresses exist only inside the two namespaces.
set -euo pipefail

prefix=${MPIPCL_MH_NAME:-mpipcl-mh}
subnet=${MPIPCL_MH_SUBNET:-10.231.77}
hosts=(h1 h2)
dev=mh0  # both veth ends carry this name inside their namespace (one UCX_NET_DEVICES fits)

ns_of() { echo "$prefix-$1"; }
state=/run/mpipcl-multihost
boot_id_of() { echo "$state/$(ns_of "$1").boot_id"; }

can_run() {
    [ "$(id -u)" -eq 0 ] || { echo "multihost: needs root (ip netns)"; return 77; }
    command -v ip >/dev/null || { echo "multihost: needs iproute2 (ip)"; return 77; }
    command -v unshare >/dev/null || { echo "multihost: needs unshare (util-linux)"; return 77; }
}

# Every process inside the hosts (pids, one per line).
pids_inside() {
    local h ns
    for h in "${hosts[@]}"; do
        ns=$(ns_of "$h")
        ip netns list 2>/dev/null | grep -qw "^$ns" || continue
        ip netns pids "$ns" 2>/dev/null || true
    done
}

# TERM, up to 0.5 s to go, then KILL; returns at once when nothing runs inside (the usual case
# after a launch that ended by itself).
kill_inside() {
    local pids
    pids=$(pids_inside)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086  # one word per pid
    kill -s TERM $pids 2>/dev/null || true
    for _ in 1 2 3 4 5; do
        sleep 0.1
        pids=$(pids_inside)
        [ -n "$pids" ] || return 0
    done
    # shellcheck disable=SC2086
    kill -s KILL $pids 2>/dev/null || true
}

down() {
    kill_inside
    local h ns
    for h in "${hosts[@]}"; do
        ns=$(ns_of "$h")
        ip netns del "$ns" 2>/dev/null || true
        rm -rf "/etc/netns/$ns"
        rm -f "$(boot_id_of "$h")"
    done
    ip link del "$prefix-a" 2>/dev/null || true  # a pair not yet moved into the namespaces
}

up() {
    can_run || exit $?
    down
    local i h ns
    ip link add "$prefix-a" type veth peer name "$prefix-b"
    for h in "${hosts[@]}"; do
        ns=$(ns_of "$h")
        ip netns add "$ns"
        mkdir -p "/etc/netns/$ns"
        {
            echo "127.0.0.1 localhost"
            local j=1
            for other in "${hosts[@]}"; do
                echo "$subnet.$j $other"
                j=$((j + 1))
            done
        } >"/etc/netns/$ns/hosts"
        ip netns exec "$ns" ip link set lo up
        mkdir -p "$state"
        cat /proc/sys/kernel/random/uuid >"$(boot_id_of "$h")"
    done
    ip link set "$prefix-a" netns "$(ns_of h1)"
    ip link set "$prefix-b" netns "$(ns_of h2)"
    i=1
    for h in "${hosts[@]}"; do
        ns=$(ns_of "$h")
        local end="$prefix-a"
        [ "$h" = h2 ] && end="$prefix-b"
        ip netns exec "$ns" ip link set "$end" name "$dev"
        ip netns exec "$ns" ip addr add "$subnet.$i/24" dev "$dev"
        ip netns exec "$ns" ip link set "$dev" up
        i=$((i + 1))
    done
    echo "multihost: h1=$subnet.1 ($(ns_of h1)), h2=$subnet.2 ($(ns_of h2)), device $dev"
}

check() {
    can_run || exit $?
    local h
    for h in "${hosts[@]}"; do
        ip netns list | grep -qw "^$(ns_of "$h")" || { echo "multihost: host $h is not up (hosts.sh up)"; exit 1; }
    done
}

enter() {
    local h=$1
    shift
    exec ip netns exec "$(ns_of "$h")" unshare --uts sh -c \
        'mount --bind "$0" /proc/sys/kernel/random/boot_id && hostname "$1" && shift && exec "$@"' \
        "$(boot_id_of "$h")" "$h" "$@"
}

case "${1:-}" in
    up) up ;;
    down) can_run >/dev/null || exit 0; down; echo "multihost: hosts removed" ;;
    check) check ;;
    kill) can_run >/dev/null || exit 0; kill_inside ;;
    exec) [ $# -ge 3 ] || { echo "usage: $0 exec HOST COMMAND..." >&2; exit 2; }; shift; enter "$@" ;;
    *) echo "usage: $0 up|down|check|kill|exec HOST COMMAND..." >&2; exit 2 ;;
esac
