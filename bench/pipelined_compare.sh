#!/usr/bin/env bash
# bench/pipelined_compare.sh — netmodel binaries side by side on pipelined cached reads
# (`getFollowState`, 256 in flight, bench/loadgen.c), against the C null server, in
# interleaved rounds (bench/README, "Replies written while the read is answered"): what
# a change to the request path gives, old binary against new.
#
#   BINS="/tmp/netmodel-before .build/release/netmodel" bash bench/pipelined_compare.sh
#
# Each round runs, for stdio and a Unix socket, Content-Length and newline framing:
# the null server, then every binary (state on /dev/shm). Prints, per cell and row,
# the median requests a second and its ratio to the null server's median.
# Knobs: BINS [.build/release/netmodel]  ROUNDS [5]  COUNT [1000000]. A row is named by
# its binary's path.
set -euo pipefail

cd "$(dirname "$0")/.."
BINS=${BINS:-.build/release/netmodel}
ROUNDS=${ROUNDS:-5}
COUNT=${COUNT:-1000000}
BUILD=bench/bin
mkdir -p "$BUILD"
gcc -O2 -Wall -Wextra -o "$BUILD/nullserver" bench/nullserver.c
gcc -O2 -Wall -Wextra -o "$BUILD/loadgen" bench/loadgen.c

TMP=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$TMP"' EXIT
chmod 700 "$TMP"
# A socket server's stdin: a FIFO this script holds open both ways never ends (netmodel
# serves stdio too, and stops at its end).
mkfifo "$TMP/stdin"
exec 3<>"$TMP/stdin"
params='{"kind":"artist","id":"banksy"}'

# loadgen's requests a second against the server it is given ("--spawn CMD" or
# "--socket PATH").
load() { # framing target...
  local framing=$1
  shift
  "$BUILD/loadgen" "$@" --framing "$framing" --method getFollowState --params "$params" \
    --mode pipelined --count "$COUNT" --inflight 256 | grep -o 'rps=[0-9]*' | cut -d= -f2
}

# A server listening on $TMP/sock for one cell: started, waited for, measured, stopped
# (in this shell, not a command substitution's: `server` must be seen by the trap).
on_socket() { # framing command...
  local framing=$1
  shift
  rm -f "$TMP/sock"
  "$@" <&3 >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do [[ -S $TMP/sock ]] && break; sleep 0.05; done
  load "$framing" --socket "$TMP/sock"
  kill -INT "$server"
  wait "$server" || true
  server=
}

for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round of $ROUNDS" >&2
  for framing in lsp ndjson; do
    echo "stdio,$framing null $(load "$framing" --spawn "$BUILD/nullserver")"
    on_socket "$framing" "$BUILD/nullserver" --socket "$TMP/sock" >"$TMP/rate"
    echo "socket,$framing null $(<"$TMP/rate")"
    for bin in $BINS; do
      state=$(mktemp -d /dev/shm/netmodel-bench-XXXXXX)
      echo "stdio,$framing $bin $(load "$framing" --spawn "$bin serve --state-dir $state")"
      rm -rf "$state"
      state=$(mktemp -d /dev/shm/netmodel-bench-XXXXXX)
      on_socket "$framing" "$bin" serve --state-dir "$state" --socket="$TMP/sock" >"$TMP/rate"
      echo "socket,$framing $bin $(<"$TMP/rate")"
      rm -rf "$state"
    done
  done
done >"$TMP/raw"

python3 - "$TMP/raw" "$ROUNDS" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    cell, name, rate = line.split()
    rows[(cell, name)].append(float(rate))
print(f"medians of {sys.argv[2]} interleaved rounds\n")
print("| transport, framing | row | req/s | ÷ null server |")
print("| --- | --- | ---: | ---: |")
for cell in sorted({cell for cell, _ in rows}):
    null = statistics.median(rows[(cell, "null")])
    for (c, name), rates in rows.items():
        if c == cell:
            median = statistics.median(rates)
            print(f"| {cell.replace(',', ', ')} | {name} | {median:,.0f} | {median / null:.2f} |")
PY
