#!/usr/bin/env bash
# bench/all.sh — issue 30's closing table: every peer, in one run, in one markdown table.
#
#   bash bench/all.sh                                  # about 15 minutes on 2 cores
#   RUNS=5 START_RUNS=41 bash bench/all.sh
#
# Runs the benchmark of each figure with its own script, one after the other, each
# writing its report and raw lines into a folder of this run, then bench/all_report.py
# reads those into one table:
#   start.sh         spawn → first answer: netmodel (local backend on tmpfs and on disk,
#                    REST backend), the Go peer, the C null server, clangd; per call:
#                    `netmodel call` against socat
#   run.sh           ping-pong and pipelined, an unknown method (what every peer answers):
#                    the null server, the Go peer, netmodel, clangd
#   models.sh        ping-pong and pipelined, the cached getFollowState (PARTS=rpc): the
#                    null server, netmodel
#   http.sh          REST round trips at 1, 16 and 64 in flight: netmodel against the bare
#                    libcurl-multi loop, same loopback server
#   held_bytes.py    ΔRSS of one 200,000-item list page and of 30 details of 1.3 MB,
#                    --max-held-bytes off and on
#   memory_shapes.py ΔRSS of 100,000 entities read, at the peak and after eviction
# The table goes to stdout and to bench/results/all-<date>.md, which starts with the
# command that made it; the scripts' own reports and raw lines go to
# bench/results/all-<date>/.
#
# Environment (defaults in brackets):
#   RUNS [3]            repetitions of run.sh, models.sh and http.sh (medians)
#   START_RUNS [21]     rounds of start.sh
#   HELD_RUNS [3]       fresh servers per shape and bound in held_bytes.py
#   NETMODEL [.build/release/netmodel]   not built here: `swift build -c release` or
#                       scripts/release-build first
#   PYTHON [.venv/bin/python, else python3]   for the memory scripts, which import
#                       Tests/interop (pytest among its requirements)
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
START_RUNS=${START_RUNS:-21}
HELD_RUNS=${HELD_RUNS:-3}
NETMODEL=$(realpath "${NETMODEL:-.build/release/netmodel}")
if [[ -z ${PYTHON:-} ]]; then
    PYTHON=python3
    [[ -x .venv/bin/python ]] && PYTHON=$PWD/.venv/bin/python
fi
log() { printf '%s\n' "$*" >&2; }
[[ -x $NETMODEL ]] || { log "$NETMODEL not found: swift build -c release"; exit 1; }

DATE=$(date +%Y-%m-%d)
DIR=bench/results/all-$DATE
OUT=bench/results/all-$DATE.md
mkdir -p "$DIR"
COMMAND="RUNS=$RUNS START_RUNS=$START_RUNS HELD_RUNS=$HELD_RUNS bash bench/all.sh"
log "all.sh: results in $DIR (load $(cut -d' ' -f1-3 /proc/loadavg))"

# The shell scripts write their reports into $DIR themselves (RESULTS); the Python ones'
# output is kept there as NAME.txt. Progress goes to stderr.
step() { # name, then the command
    local name=$1 out=/dev/null
    shift
    [[ $1 == "$PYTHON" ]] && out=$DIR/$name.txt
    log "== $name"
    "$@" >"$out" || log "WARNING: $name exited with status $?; its rows may be missing"
}
export RESULTS=$DIR NETMODEL
step start env RUNS="$START_RUNS" bash bench/start.sh
step foundation env RUNS="$RUNS" SERVERS="null go netmodel clangd" MODES="pingpong pipelined" \
    SKIP_SWIFT_BUILD=1 bash bench/run.sh
step models env RUNS="$RUNS" PARTS=rpc PINGPONG_AWAKE=0 bash bench/models.sh
step http env RUNS="$RUNS" INFLIGHT="1 16 64" PY_INFLIGHT="" NETMODEL_BIN="$NETMODEL" bash bench/http.sh
step held "$PYTHON" bench/held_bytes.py "$NETMODEL" "$HELD_RUNS"
step shapes "$PYTHON" bench/memory_shapes.py e "$NETMODEL"

python3 bench/all_report.py --command "$COMMAND" --commit "$(git rev-parse --short HEAD)" "$DIR" | tee "$OUT"
log "wrote $OUT (the scripts' reports and raw lines: $DIR)"
