#!/usr/bin/env bash
# bench/run.sh — the foundation benchmark: netmodel against the null server
# (the floor) and clangd (a real JSON-RPC server from the toolchain).
#
#   bash bench/run.sh
#
# Prints a markdown report on stdout and writes it to
# bench/results/foundation-<date>.md (raw loadgen lines next to it, .raw.txt).
# Progress goes to stderr.  Environment knobs (defaults in brackets):
#   RUNS [5]                 repetitions of every measurement; the median is reported
#   SERVERS ["null netmodel clangd"]   also `go`: the Go peer (bench/goserver.go, stdio)
#   MODES ["pingpong pipelined startup"]  which measurements of each cell
#   RESULTS [bench/results]  where the report and the raw lines go
#   PINGPONG_COUNT [20000]   requests per ping-pong measurement
#   PIPELINED_COUNT [500000] requests per pipelined measurement (clangd: 1/10)
#   INFLIGHT [256]           pipelined window
#   STARTUP_RUNS [10]        fresh spawns per start-up measurement
#   MAX_SECONDS [8]          cap on one measurement (loadgen stops sending then)
#   NETMODEL [.build/release/netmodel]   CLANGD [/opt/swift/usr/bin/clangd]
#   SKIP_SWIFT_BUILD=1       use the existing netmodel binary as it is
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SERVERS=${SERVERS:-"null netmodel clangd"}
MODES=${MODES:-"pingpong pipelined startup"}
PINGPONG_COUNT=${PINGPONG_COUNT:-20000}
PIPELINED_COUNT=${PIPELINED_COUNT:-500000}
INFLIGHT=${INFLIGHT:-256}
STARTUP_RUNS=${STARTUP_RUNS:-10}
MAX_SECONDS=${MAX_SECONDS:-8}
NETMODEL=${NETMODEL:-.build/release/netmodel}
CLANGD=${CLANGD:-/opt/swift/usr/bin/clangd}
UNKNOWN_METHOD=netmodel/ping

log() { printf '%s\n' "$*" >&2; }

# ---- build -------------------------------------------------------------------
BUILD=bench/bin
RESULTS=${RESULTS:-bench/results}
mkdir -p "$BUILD" "$RESULTS"
log "building nullserver and loadgen (gcc -O2)"
gcc -O2 -Wall -Wextra -o "$BUILD/nullserver" bench/nullserver.c
gcc -O2 -Wall -Wextra -o "$BUILD/loadgen" bench/loadgen.c

if [[ " $SERVERS " == *" go "* ]]; then
    log "building goserver (go build)"
    if ! command -v go >/dev/null ||
        ! GOCACHE=${GOCACHE:-$PWD/$BUILD/gocache} go build -o "$BUILD/goserver" bench/goserver.go >&2; then
        log "WARNING: go build failed (apt-get install golang-go); skipping the Go peer"
        SERVERS=${SERVERS//go/}
    fi
fi
if [[ " $SERVERS " == *" netmodel "* ]]; then
    if [[ -z "${SKIP_SWIFT_BUILD:-}" && -f Package.swift ]]; then
        log "building netmodel (swift build -c release)"
        swift build -c release >&2 || log "WARNING: swift build failed; netmodel rows will be missing"
    fi
    if [[ ! -x "$NETMODEL" ]]; then
        log "WARNING: $NETMODEL not found; skipping netmodel"
        SERVERS=${SERVERS//netmodel/}
    fi
fi
if [[ " $SERVERS " == *" clangd "* && ! -x "$CLANGD" ]]; then
    log "WARNING: $CLANGD not found; skipping clangd"
    SERVERS=${SERVERS//clangd/}
fi

# ---- scratch space -------------------------------------------------------------
# The socket lives in a private 0700 folder (sun_path allows 107 bytes).  netmodel
# gets a fresh state folder so that the runs neither read nor touch the user's.
TMP=$(mktemp -d /tmp/nmbench.XXXXXX)
chmod 700 "$TMP"
SOCK=$TMP/bench.sock
export XDG_STATE_HOME=$TMP/state
SERVER_LOG=$TMP/server.log
trap 'rm -rf "$TMP"' EXIT

DATE=$(date +%Y-%m-%d)
OUT=$RESULTS/foundation-$DATE.md
RAW=$RESULTS/foundation-$DATE.raw.txt

# ---- the matrix ----------------------------------------------------------------
# Prints the command that starts server $1 on transport $2, or nothing when the
# server has no such transport.
server_cmd() {
    case "$1/$2" in
    null/stdio) echo "$BUILD/nullserver" ;;
    null/socket) echo "$BUILD/nullserver --socket $SOCK" ;;
    netmodel/stdio) echo "$NETMODEL serve" ;;
    netmodel/socket) echo "$NETMODEL serve --no-stdio --socket=$SOCK" ;;
    clangd/stdio) echo "$CLANGD" ;;
    go/stdio) echo "$BUILD/goserver" ;;
    esac
}

# Methods to send: an unknown method is what clangd can answer (with an error)
# before `initialize`, so every server gets it to compare like with like: it costs
# the whole transport, framing, JSON and dispatch path and no model work. `stats`
# (METHODS="netmodel/ping stats") builds a large reply and measures the JSON
# builder instead; bench/models.sh measures the cached getFollowState.
server_methods() {
    case "$1" in
    clangd) echo "$UNKNOWN_METHOD" ;;
    *) echo "${METHODS:-$UNKNOWN_METHOD}" ;;
    esac
}

server_framings() {
    case "$1" in
    clangd) echo "lsp" ;; # clangd speaks only the LSP base protocol
    *) echo "lsp ndjson" ;;
    esac
}

# One loadgen run; its output line (also when it failed) goes to the raw file.
measure() { # server transport framing method mode
    local server=$1 transport=$2 framing=$3 method=$4 mode=$5
    local cmd args=()
    cmd=$(server_cmd "$server" "$transport")
    args=(--spawn "$cmd" --framing "$framing" --method "$method" --label "$server"
        --server-log "$SERVER_LOG" --max-seconds "$MAX_SECONDS" --timeout 10)
    [[ $transport == socket ]] && args+=(--socket "$SOCK")
    case $mode in
    pingpong) args+=(--mode pingpong --count "$PINGPONG_COUNT") ;;
    pipelined)
        local count=$PIPELINED_COUNT
        [[ $server == clangd ]] && count=$((PIPELINED_COUNT / 10)) # ~35k req/s
        args+=(--mode pipelined --count "$count" --inflight "$INFLIGHT")
        ;;
    startup) args+=(--mode startup --runs "$STARTUP_RUNS") ;;
    esac
    local line
    if ! line=$("$BUILD/loadgen" "${args[@]}"); then
        log "  FAILED: $server $transport $framing $method $mode (server log: last lines below)"
        tail -n 5 "$SERVER_LOG" >&2 || true
    fi
    [[ -n $line ]] && printf '%s\n' "$line" >>"$RAW"
    return 0
}

# ---- run ----------------------------------------------------------------------
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "# date=$DATE"
    echo "# commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
    echo "# kernel=$(uname -r)"
    echo "# cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "# cores=$(nproc)"
    echo "# runs=$RUNS"
    echo "# pingpong_count=$PINGPONG_COUNT"
    echo "# pipelined_count=$PIPELINED_COUNT"
    echo "# inflight=$INFLIGHT"
    echo "# startup_runs=$STARTUP_RUNS"
    echo "# load_before=$(load_avg)"
} >"$RAW"
if awk '{ exit !($1 > 0.5) }' /proc/loadavg; then
    log "WARNING: load average $(load_avg): other work on this machine will skew the figures"
fi

# Repetitions are the outer loop, so that a burst of background load spreads over
# all cells instead of spoiling all five runs of one cell.
for ((rep = 1; rep <= RUNS; rep++)); do
    log "repetition $rep/$RUNS"
    for server in $SERVERS; do
        for transport in stdio socket; do
            [[ -z $(server_cmd "$server" "$transport") ]] && continue
            for framing in $(server_framings "$server"); do
                for method in $(server_methods "$server"); do
                    for mode in $MODES; do
                        measure "$server" "$transport" "$framing" "$method" "$mode"
                    done
                done
            done
        done
    done
done
echo "# load_after=$(load_avg)" >>"$RAW"

python3 bench/report.py "$RAW" | tee "$OUT"
log "wrote $OUT and $RAW"
