#!/usr/bin/env bash
# bench/start.sh — start-up (issue 30): what an editor waits for when it spawns the
# server, and what a script pays per `netmodel call`.
#
#   bash bench/start.sh                     # a few seconds
#   RUNS=31 BASELINE=/tmp/old/netmodel bash bench/start.sh
#
# In one run, every figure a median of RUNS rounds; each round runs every
# measurement once, in turn, so a burst of background load spreads over all of them:
#   - spawn → first answer to `initialize` on stdio (loadgen --mode startup): netmodel
#     on the local backend with its state folder on tmpfs and on disk, on the REST
#     backend (examples/artsy/config.json; libcurl is opened then), the Go
#     standard-library peer (goserver.go), the C null server, clangd;
#   - spawn → exit of `netmodel call getFollowState kind=artist id=banksy` and of socat
#     sending the same request to the same running server (spawntime), the entity
#     read once before, so both are answered from memory;
#   - spawn → exit of `netmodel --help`, `netmodel --version` and /bin/true.
# The report (stdout and bench/results/start-<date>.md, raw lines in .raw.txt) has
# the ratios of the goals: netmodel ÷ Go ≤ 2, `netmodel call` ÷ socat ≤ 1.3.
#
# Environment (defaults in brackets):
#   RUNS [41]                  rounds
#   NETMODEL [.build/release/netmodel]   the binary measured; build it with
#                              scripts/release-build (static Swift runtime) first
#   BASELINE [unset]           another netmodel binary, measured alongside (before/after)
#   CLANGD [/opt/swift/usr/bin/clangd]   skipped when absent
#   DISK_DIR [bench/bin]       where the on-disk state folders go (must not be tmpfs)
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-41}
NETMODEL=${NETMODEL:-.build/release/netmodel}
CLANGD=${CLANGD:-/opt/swift/usr/bin/clangd}
DISK_DIR=${DISK_DIR:-bench/bin}
log() { printf '%s\n' "$*" >&2; }

BUILD=bench/bin
RESULTS=${RESULTS:-bench/results}
mkdir -p "$BUILD" "$RESULTS"
scripts/install-deps --bench >&2
log "building nullserver, loadgen, spawntime (gcc -O2) and goserver (go build)"
gcc -O2 -Wall -Wextra -o "$BUILD/nullserver" bench/nullserver.c
gcc -O2 -Wall -Wextra -o "$BUILD/loadgen" bench/loadgen.c
gcc -O2 -Wall -Wextra -o "$BUILD/spawntime" bench/spawntime.c
command -v go >/dev/null || { log "go not found: apt-get install golang-go"; exit 1; }
GOCACHE=${GOCACHE:-$PWD/$BUILD/gocache} go build -o "$BUILD/goserver" bench/goserver.go
command -v socat >/dev/null || { log "socat not found: apt-get install socat"; exit 1; }
[[ -x $NETMODEL ]] || { log "$NETMODEL not found: run scripts/release-build"; exit 1; }
NETMODEL=$(realpath "$NETMODEL")
[[ -z ${BASELINE:-} ]] || BASELINE=$(realpath "$BASELINE")

TMP=$(mktemp -d /dev/shm/nmstart.XXXXXX)
DISK=$(mktemp -d "$(realpath "$DISK_DIR")/nmstart.XXXXXX")
chmod 700 "$TMP" "$DISK"
SERVERS=()
cleanup() {
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP" "$DISK"
}
trap cleanup EXIT
export XDG_STATE_HOME=$TMP/xdg-state XDG_RUNTIME_DIR=$TMP/run
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

DATE=$(date +%Y-%m-%d)
OUT=$RESULTS/start-$DATE.md
RAW=$RESULTS/start-$DATE.raw.txt
REQUEST=$TMP/request.ndjson
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"getFollowState","params":{"kind":"artist","id":"banksy"}}' >"$REQUEST"

# label, then the command loadgen spawns (split on spaces: no spaces in paths).
STARTS=(
    "null" "$BUILD/nullserver"
    "go" "$BUILD/goserver"
    "netmodel-tmpfs" "$NETMODEL serve --state-dir $TMP/state"
    "netmodel-disk" "$NETMODEL serve --state-dir $DISK/state"
    "netmodel-rest" "$NETMODEL serve --backend rest --config examples/artsy/config.json --state-dir $TMP/state-rest"
)
if [[ -n ${BASELINE:-} ]]; then
    STARTS+=(
        "baseline-tmpfs" "$BASELINE serve --state-dir $TMP/state-base"
        "baseline-disk" "$BASELINE serve --state-dir $DISK/state-base"
        "baseline-rest" "$BASELINE serve --backend rest --config examples/artsy/config.json --state-dir $TMP/state-base-rest"
    )
fi
[[ -x $CLANGD ]] && STARTS+=("clangd" "$CLANGD")

# The running servers `call` and socat talk to; the entity is read once first.
SOCK=$TMP/run/nm.sock
"$NETMODEL" serve --no-stdio --socket="$SOCK" --state-dir "$TMP/state-socket" 2>>"$TMP/server.log" &
SERVERS+=($!)
CALLS=("call=$NETMODEL call --socket $SOCK getFollowState kind=artist id=banksy" "socat=socat - UNIX-CONNECT:$SOCK")
if [[ -n ${BASELINE:-} ]]; then
    BSOCK=$TMP/run/base.sock
    "$BASELINE" serve --no-stdio --socket="$BSOCK" --state-dir "$TMP/state-base-socket" 2>>"$TMP/server.log" &
    SERVERS+=($!)
    CALLS+=("baseline-call=$BASELINE call --socket $BSOCK getFollowState kind=artist id=banksy"
        "baseline-socat=socat - UNIX-CONNECT:$BSOCK")
fi
for sock in "$SOCK" ${BSOCK:+"$BSOCK"}; do
    for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
    "$NETMODEL" call --socket "$sock" getFollowState kind=artist id=banksy >/dev/null
done
COMMANDS=("help=$NETMODEL --help" "version=$NETMODEL --version" "true=/bin/true")
[[ -z ${BASELINE:-} ]] || COMMANDS+=("baseline-help=$BASELINE --help")

load() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "# date=$(date -u +%Y-%m-%dT%H:%M:%SZ) runs=$RUNS commit=$(git rev-parse --short HEAD 2>/dev/null || echo ?)"
    echo "# netmodel=$NETMODEL size=$(stat -c %s "$NETMODEL") baseline=${BASELINE:-}"
    echo "# needed=$(readelf -d "$NETMODEL" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
    echo "# cpus=$(nproc) load_before=$(load)"
} >"$RAW"
log "$RUNS rounds (load $(load))"
for round in $(seq "$RUNS"); do
    for ((i = 0; i < ${#STARTS[@]}; i += 2)); do
        label=${STARTS[i]}
        framing=ndjson method=initialize params='{}'
        # clangd speaks LSP framing only, and is asked what it answers before initialize.
        [[ $label == clangd ]] && framing=lsp method=netmodel/ping params='null'
        args=(--spawn "${STARTS[i + 1]}" --framing "$framing" --method "$method" --mode startup --runs 1
            --label "$label" --server-log "$TMP/server.log")
        [[ $params == null ]] || args+=(--params "$params")
        "$BUILD/loadgen" "${args[@]}" >>"$RAW" || log "round $round: $label failed"
    done
    "$BUILD/spawntime" --runs 1 --stdin "$REQUEST" --expect '"following"' "${CALLS[@]}" >>"$RAW" ||
        log "round $round: a call failed"
    "$BUILD/spawntime" --runs 1 "${COMMANDS[@]}" >>"$RAW" || log "round $round: a command failed"
    ((round % 5 == 0)) && log "  round $round/$RUNS (load $(load))"
done
echo "# load_after=$(load)" >>"$RAW"
python3 bench/start_report.py "$RAW" | tee "$OUT"
log "wrote $OUT and $RAW"
