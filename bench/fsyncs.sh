#!/usr/bin/env bash
# bench/fsyncs.sh — fsyncs per mutating loop turn: a server on a fresh state folder
# (local backend) follows one entity per turn, N turns, under strace.
#
#   bash bench/fsyncs.sh [NETMODEL] [N]
#
# Prints the fsync/fdatasync count of a run with one follow and of a run with N+1;
# their difference divided by N is the cost of one turn (start, first write and
# shutdown cancel out).
set -euo pipefail
NETMODEL=${1:-.build/release/netmodel}
N=${2:-10}
command -v strace >/dev/null || { echo "needs strace" >&2; exit 2; }

count() { # follows
    local state trace
    state=$(mktemp -d)
    trace=$state.trace
    for ((i = 0; i < $1; i++)); do
        printf '{"jsonrpc":"2.0","id":%d,"method":"follow","params":{"kind":"artist","id":"a%d"}}\n' "$i" "$i"
        sleep 0.2 # one turn each (and the answer of the backend)
    done | strace -f -e trace=fsync,fdatasync -o "$trace" "$NETMODEL" serve --state-dir "$state" >/dev/null 2>&1
    grep -c 'fsync\|fdatasync' "$trace"
    rm -rf "$state" "$trace"
}
one=$(count 1)
many=$(count $((N + 1)))
echo "fsyncs: $one for 1 follow, $many for $((N + 1)); per turn: $(awk "BEGIN { print ($many - $one) / $N }")"
