#!/usr/bin/env bash
# bench/models.sh — the network-model benchmark: what netmodel's follow models
# cost once the transport is paid for.
#
#   bash bench/models.sh
#
# Four figures, each the median of RUNS repetitions (repetitions are the outer
# loop, so a burst of background load spreads over all cells):
#   1. cached getFollowState: ping-pong p50/p99 and pipelined req/s, stdio and
#      socket, LSP and ndjson framing, with the null server on the same line;
#   2. fan-out: one follow reaching 1,000 subscribed connections (bench/fanout.c),
#      with the state folder on disk and on tmpfs, a null fan-out server
#      (fanout --floor) for this machine's floor, and the same with 1 subscriber;
#   3. memory per entity: 1M distinct reads, 100k reads, 100k follows, and the
#      local backend's share (a restart on the 100k follows) (bench/entities.c);
#   4. a subscriber that never reads while its entity toggles 100,000 times,
#      toggler window 256 and 8 (bench/stalled.py).
# Prints a markdown report on stdout (bench/models_report.py) and writes it to
# bench/results/models-<date>.md (raw lines next to it, .raw.txt).  Progress
# goes to stderr.  A full run takes about 4–5 minutes on 2 cores.  A server that
# crashes, exits non-zero, or ignores SIGTERM is reported as a finding.
# Environment knobs (defaults in brackets):
#   RUNS [5]                  repetitions; the median is reported
#   PARTS ["rpc fanout memory stalled"]  the parts to run (1 to 4)
#   MEM_RUNS [$RUNS]          repetitions of the memory figures (the slowest part)
#   PINGPONG_COUNT [20000]    requests per ping-pong measurement
#   PIPELINED_COUNT [500000]  requests per pipelined measurement
#   INFLIGHT [256]            pipelined window
#   PINGPONG_AWAKE ["0 1"]    ping-pong with the other vCPU idle (0) and kept busy
#                             by a spinning bash loop (1); see bench/README.md
#   MAX_SECONDS [8]           cap on one loadgen measurement
#   FANOUT_CONNS [1000]       subscribed connections
#   FANOUT_ITERATIONS [10]    follow/unfollow toggles per fan-out run
#   READ_COUNT [1000000]      distinct ids read in the big memory variant
#   FOLLOW_COUNT [100000]     distinct ids followed (see bench/README.md: the local
#                             backend re-sorts and rewrites its whole file per
#                             batch, so 1M follows would take far longer than 10 min)
#   TOGGLES [100000]          mutations in the stalled-subscriber test
#   NETMODEL [.build/release/netmodel]
#   SLOW_STATE_DIR [$TMPDIR or /tmp]  state folders for 1 and 2 (a real disk:
#                             every mutation is fsynced before its reply and its
#                             notifications)
#   FAST_STATE_DIR [/dev/shm] state folders for the fan-out's tmpfs variant and for
#                             3 and 4, whose subject is memory, not fsync latency
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PARTS=${PARTS:-"rpc fanout memory stalled"}
MEM_RUNS=${MEM_RUNS:-$RUNS}
PINGPONG_COUNT=${PINGPONG_COUNT:-20000}
PIPELINED_COUNT=${PIPELINED_COUNT:-500000}
INFLIGHT=${INFLIGHT:-256}
PINGPONG_AWAKE=${PINGPONG_AWAKE:-"0 1"}
MAX_SECONDS=${MAX_SECONDS:-8}
FANOUT_CONNS=${FANOUT_CONNS:-1000}
FANOUT_ITERATIONS=${FANOUT_ITERATIONS:-10}
READ_COUNT=${READ_COUNT:-1000000}
FOLLOW_COUNT=${FOLLOW_COUNT:-100000}
TOGGLES=${TOGGLES:-100000}
NETMODEL=${NETMODEL:-.build/release/netmodel}
SLOW_STATE_DIR=${SLOW_STATE_DIR:-${TMPDIR:-/tmp}}
FAST_STATE_DIR=${FAST_STATE_DIR:-/dev/shm}
PARAMS='{"kind":"artist","id":"banksy"}'

log() { printf '%s\n' "$*" >&2; }
wanted() { [[ " $PARTS " == *" $1 "* ]]; }

# ---- build -------------------------------------------------------------------
BUILD=bench/bin
RESULTS=${RESULTS:-bench/results}
mkdir -p "$BUILD" "$RESULTS"
log "building nullserver, loadgen, fanout, entities (gcc -O2)"
for tool in nullserver loadgen fanout entities; do
    gcc -O2 -Wall -Wextra -o "$BUILD/$tool" "bench/$tool.c"
done
if [[ ! -x $NETMODEL ]]; then
    log "ERROR: $NETMODEL not found (swift build -c release, or set NETMODEL)"
    exit 2
fi
[[ -d $FAST_STATE_DIR && -w $FAST_STATE_DIR ]] || FAST_STATE_DIR=$SLOW_STATE_DIR

# 1,000 subscribers + the server's own descriptors
if (($(ulimit -n) < 4096)); then
    ulimit -n 4096 || log "WARNING: could not raise the open-files limit to 4096"
fi

# ---- scratch space -------------------------------------------------------------
TMP=$(mktemp -d "$SLOW_STATE_DIR/nmmodels.XXXXXX")
FAST=$(mktemp -d "$FAST_STATE_DIR/nmmodels.XXXXXX")
chmod 700 "$TMP" "$FAST"
SOCK=$TMP/bench.sock
SERVER_LOG=$TMP/server.log
export XDG_STATE_HOME=$TMP/xdg # never the user's, even where --state-dir is missed
SERVER_PID=
cleanup() {
    [[ -z $SERVER_PID ]] || kill -KILL "$SERVER_PID" 2>/dev/null || true
    [[ -z ${SPINNER_PID:-} ]] || kill "$SPINNER_PID" 2>/dev/null || true
    rm -rf "$TMP" "$FAST"
}
trap cleanup EXIT

DATE=$(date +%Y-%m-%d)
OUT=$RESULTS/models-$DATE.md
RAW=$RESULTS/models-$DATE.raw.txt

# A fresh state folder under $1 for each server.
fresh_state() { mktemp -d "$1/state.XXXXXX"; }

# The binary must have the follow methods (an older build answers -32601).
probe=$(printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getFollowState\",\"params\":$PARAMS}" |
    timeout 10 "$NETMODEL" serve --state-dir "$(fresh_state "$TMP")" 2>/dev/null || true)
if [[ $probe != *'"result"'* ]]; then
    log "ERROR: $NETMODEL does not answer getFollowState: ${probe:-no reply}"
    exit 2
fi

# Starts netmodel on $SOCK with a fresh state folder under $1; sets SERVER_PID.
start_server() { start_server_in "$(fresh_state "$1")"; }

# Starts netmodel on $SOCK with the state folder $1; sets SERVER_PID.
start_server_in() {
    rm -f "$SOCK"
    "$NETMODEL" serve --no-stdio --socket="$SOCK" --state-dir "$1" \
        </dev/null >/dev/null 2>>"$SERVER_LOG" &
    SERVER_PID=$!
    local i
    for ((i = 0; i < 500; i++)); do
        [[ -S $SOCK ]] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.01
    done
    log "  ERROR: netmodel did not listen on $SOCK"
    tail -n 5 "$SERVER_LOG" >&2 || true
    return 1
}

# SIGTERM, then wait; a server that crashed, or does not exit within 5 s, is
# reported (stderr and the raw file) — it is a finding, not noise.
stop_server() { # what
    local status=0 i
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID"
        for ((i = 0; i < 500; i++)); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.01
        done
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            log "  SERVER HANG: $1: no exit 5 s after SIGTERM; SIGKILL"
            echo "part=server what=$1 finding=no_exit_after_sigterm" >>"$RAW"
            kill -KILL "$SERVER_PID"
        fi
    fi
    wait "$SERVER_PID" || status=$?
    if ((status != 0)); then
        log "  SERVER EXIT STATUS $status: $1 (log tail below)"
        tail -n 5 "$SERVER_LOG" >&2 || true
        echo "part=server what=$1 finding=exit_status_$status" >>"$RAW"
    fi
    SERVER_PID=
}

# One request over $SOCK; prints the result as compact JSON.
rpc() { # method [params-json]
    python3 - "$SOCK" "$1" "${2:-}" <<'EOF'
import json, socket, sys
path, method, params = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(path)
msg = {"jsonrpc": "2.0", "id": "rpc", "method": method}
if params:
    msg["params"] = json.loads(params)
s.sendall(json.dumps(msg).encode() + b"\n")
buf = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("rpc: connection closed")
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        reply = json.loads(line)
        if reply.get("id") == "rpc":
            print(json.dumps(reply.get("result", reply.get("error")), separators=(",", ":")))
            sys.exit(0)
EOF
}

# cacheHits, backend.reads and the getFollowState count from a stats result.
cache_fields() {
    python3 -c 'import json,sys; s=json.load(sys.stdin)
print("cache_hits=%d backend_reads=%d gfs_requests=%d" % (s["cacheHits"], s["backend"]["reads"],
      s["requests"]["byMethod"].get("getFollowState", 0)))'
}

# ---- 1. cached getFollowState -------------------------------------------------
# A busy loop on the other vCPU, for the ping-pong runs with AWAKE=1: on this VM
# an idle vCPU takes ~50 µs to wake (null server ping-pong: ~60 µs idle, ~9 µs
# with a busy neighbour), which would otherwise decide the figure.
SPINNER_PID=
spin_start() {
    bash -c 'while :; do :; done' &
    SPINNER_PID=$!
}
spin_stop() {
    [[ -n $SPINNER_PID ]] || return 0
    kill "$SPINNER_PID" 2>/dev/null || true
    wait "$SPINNER_PID" 2>/dev/null || true
    SPINNER_PID=
}

rpc_cell() { # server transport framing mode [awake]
    local server=$1 transport=$2 framing=$3 mode=$4 awake=${5:-0}
    local args=(--framing "$framing" --method getFollowState --params "$PARAMS" --label "$server"
        --server-log "$SERVER_LOG" --max-seconds "$MAX_SECONDS" --timeout 10)
    case $mode in
    pingpong) args+=(--mode pingpong --count "$PINGPONG_COUNT") ;;
    pipelined) args+=(--mode pipelined --count "$PIPELINED_COUNT" --inflight "$INFLIGHT") ;;
    esac
    local line extra=""
    case $server/$transport in
    null/stdio) args+=(--spawn "$BUILD/nullserver") ;;
    null/socket) args+=(--spawn "$BUILD/nullserver --socket $SOCK" --socket "$SOCK") ;;
    netmodel/stdio) args+=(--spawn "$NETMODEL serve --state-dir $(fresh_state "$TMP")") ;;
    netmodel/socket)
        # started here, not by loadgen, so `stats` can be read after the run
        start_server "$TMP" || return 0
        args+=(--socket "$SOCK")
        ;;
    esac
    ((awake)) && spin_start
    if ! line=$("$BUILD/loadgen" "${args[@]}"); then
        log "  FAILED: $server $transport $framing $mode (server log: last lines below)"
        tail -n 5 "$SERVER_LOG" >&2 || true
    fi
    spin_stop
    if [[ $server/$transport == netmodel/socket ]]; then
        extra=" $(rpc stats | cache_fields || echo stats=failed)"
        stop_server "rpc $transport $framing $mode"
    fi
    [[ -n $line ]] && printf 'part=rpc awake=%s %s%s\n' "$awake" "$line" "$extra" >>"$RAW"
    return 0
}

# The stdio runs cannot be asked for `stats` afterwards (loadgen closes stdin),
# so this check sends the same requests over stdio and then `stats`.
stdio_cache_check() {
    python3 - "$NETMODEL" "$(fresh_state "$TMP")" "$PARAMS" <<'EOF'
import json, subprocess, sys
netmodel, state, params = sys.argv[1:4]
n = 1000
reqs = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "getFollowState",
                    "params": json.loads(params)}) for i in range(1, n + 1)]
p = subprocess.Popen([netmodel, "serve", "--state-dir", state], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p.stdin.write((reqs[0] + "\n").encode()); p.stdin.flush()
p.stdout.readline()                   # the first read goes to the backend
p.stdin.write(("\n".join(reqs[1:]) + "\n").encode()); p.stdin.flush()
for _ in range(n - 1):
    p.stdout.readline()
p.stdin.write(b'{"jsonrpc":"2.0","id":"s","method":"stats"}\n'); p.stdin.flush()
s = json.loads(p.stdout.readline())["result"]
p.stdin.close(); p.wait(timeout=10)
print("part=stdio_cache requests=%d cache_hits=%d backend_reads=%d" %
      (s["requests"]["byMethod"].get("getFollowState", 0), s["cacheHits"], s["backend"]["reads"]))
EOF
}

# ---- 2. fan-out ------------------------------------------------------------------
fanout_run() { # storage-name state-base [conns] | floor
    local line conns=${3:-$FANOUT_CONNS}
    if [[ $1 == floor ]]; then # the null fan-out server: this machine's floor
        line=$("$BUILD/fanout" --floor --conns "$FANOUT_CONNS" --iterations "$FANOUT_ITERATIONS") ||
            log "  FAILED: fanout floor"
        [[ -n $line ]] && printf 'part=fanout storage=floor %s\n' "$line" >>"$RAW"
        return 0
    fi
    start_server "$2" || return 0
    if ! line=$("$BUILD/fanout" --socket "$SOCK" --conns "$conns" --iterations "$FANOUT_ITERATIONS"); then
        log "  FAILED: fanout ($1)"
    fi
    stop_server "fanout $1"
    [[ -n $line ]] && printf 'part=fanout storage=%s %s\n' "$1" "$line" >>"$RAW"
    return 0
}

# ---- 3. memory per entity ------------------------------------------------------
entities_run() { # method count
    local line state
    state=$(fresh_state "$FAST")
    start_server_in "$state" || return 0
    if ! line=$("$BUILD/entities" --socket "$SOCK" --method "$1" --count "$2" --pid "$SERVER_PID" \
        --max-seconds 120 --timeout 30); then
        log "  FAILED: entities $1 $2"
    fi
    stop_server "entities $1 $2"
    [[ -n $line ]] && printf 'part=memory %s\n' "$line" >>"$RAW"
    if [[ $1 == follow && $line == *status=ok* ]]; then
        # The local backend's share: a server started on that state folder loads
        # the follows (and nothing else: its store is empty until asked).
        local empty loaded
        empty=$(sed 's/.* rss_before=\([0-9]*\).*/\1/' <<<"$line")
        start_server_in "$state" || return 0
        loaded=$(rpc stats | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["residentMemoryBytes"], s["entities"])') || true
        stop_server "restart with $2 follows"
        [[ -n $loaded ]] && printf 'part=memory_local follows=%s rss_empty=%s rss_loaded=%s entities=%s status=ok\n' \
            "$2" "$empty" ${loaded} >>"$RAW"
    fi
    return 0
}

# ---- 4. a subscriber that never reads ------------------------------------------
stalled_run() { # toggler window
    start_server "$FAST" || return 0
    local line
    if ! line=$(timeout 120 python3 bench/stalled.py --socket "$SOCK" --pid "$SERVER_PID" \
        --toggles "$TOGGLES" --inflight "$1"); then
        log "  FAILED: stalled window $1"
    fi
    stop_server "stalled $1"
    [[ -n $line ]] && printf 'part=stalled %s\n' "$line" >>"$RAW"
    return 0
}

# ---- run ------------------------------------------------------------------------
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "# date=$DATE"
    echo "# commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)$(git diff --quiet HEAD -- Sources 2>/dev/null || echo ' (Sources modified)')"
    echo "# netmodel=$NETMODEL ($(date -r "$NETMODEL" '+%Y-%m-%d %H:%M'))"
    echo "# kernel=$(uname -r)"
    echo "# cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "# cores=$(nproc)"
    echo "# runs=$RUNS"
    echo "# mem_runs=$MEM_RUNS"
    echo "# slow_state=$(df -PT "$TMP" | awk 'NR==2 {print $2}') ($SLOW_STATE_DIR)"
    echo "# fast_state=$(df -PT "$FAST" | awk 'NR==2 {print $2}') ($FAST_STATE_DIR)"
    echo "# pingpong_count=$PINGPONG_COUNT"
    echo "# pipelined_count=$PIPELINED_COUNT"
    echo "# inflight=$INFLIGHT"
    echo "# pingpong_awake=$PINGPONG_AWAKE"
    echo "# fanout_conns=$FANOUT_CONNS"
    echo "# fanout_iterations=$FANOUT_ITERATIONS"
    echo "# read_count=$READ_COUNT"
    echo "# follow_count=$FOLLOW_COUNT"
    echo "# toggles=$TOGGLES"
    echo "# load_before=$(load_avg)"
} >"$RAW"
if awk '{ exit !($1 > 0.5) }' /proc/loadavg; then
    log "WARNING: load average $(load_avg): other work on this machine will skew the figures"
fi

if wanted rpc; then stdio_cache_check >>"$RAW" || log "  FAILED: stdio cache check"; fi
for ((rep = 1; rep <= RUNS; rep++)); do
    log "repetition $rep/$RUNS"
    if wanted rpc; then
        for server in null netmodel; do
            for transport in stdio socket; do
                for framing in lsp ndjson; do
                    for awake in $PINGPONG_AWAKE; do
                        rpc_cell "$server" "$transport" "$framing" pingpong "$awake"
                    done
                    rpc_cell "$server" "$transport" "$framing" pipelined
                done
            done
        done
    fi
    if wanted fanout; then
        fanout_run floor
        fanout_run disk "$TMP"
        fanout_run tmpfs "$FAST"
        fanout_run disk "$TMP" 1 # one subscriber: the mutation's own latency
        fanout_run tmpfs "$FAST" 1
    fi
    if wanted memory && ((rep <= MEM_RUNS)); then
        entities_run getFollowState "$READ_COUNT"
        entities_run getFollowState "$FOLLOW_COUNT"
        entities_run follow "$FOLLOW_COUNT"
    fi
    if wanted stalled; then
        stalled_run 256
        stalled_run 8
    fi
done
echo "# load_after=$(load_avg)" >>"$RAW"

# ---- report ---------------------------------------------------------------------
python3 bench/models_report.py "$RAW" | tee "$OUT"
log "wrote $OUT and $RAW"
