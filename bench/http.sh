#!/usr/bin/env bash
# bench/http.sh — HTTP round trips per second: the bare libcurl-multi loop
# (bench/curlmulti.c, the floor) against a loopback HTTP/1.1 server
# (bench/httpserver.c), at several in-flight limits; and the Python stdlib
# ThreadingHTTPServer (bench/pyhttpserver.py) under the same client, to show
# whether tests and demos against a Python backend are bound by Python.
# netmodel's REST backend is measured against the same server: see run_netmodel.
#
#   bash bench/http.sh
#
# Needs gcc, libcurl's headers (libcurl4-openssl-dev) and bash; python3 only for
# the Python row.  No ab, wrk or curl binary: /_stats is read through bash's
# /dev/tcp.  Prints a markdown report on stdout and writes it to
# bench/results/http-<date>.md (raw lines next to it, .raw.txt).  Progress goes
# to stderr.  About a minute with the defaults (in flight 1 is the slow part).
# Environment knobs (defaults in brackets):
#   RUNS [5]                 repetitions; the median is reported
#   INFLIGHT ["1 16 64"]     in-flight limits (= libcurl's connection limits)
#   REQUESTS [50000]         requests per curlmulti run against httpserver
#   METHOD [GET]             GET, PUT, POST or DELETE (no request body)
#   DELAY_US [0]             httpserver --delay-us: a backend with latency
#   PY_INFLIGHT [16]         in-flight limits against the Python server ("" skips it)
#   PY_REQUESTS [10000]      requests per run against the Python server
#   NETMODEL_BIN [.build/release/netmodel]  the netmodel measured (NETMODEL=0 skips it)
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
INFLIGHT=${INFLIGHT:-"1 16 64"}
REQUESTS=${REQUESTS:-50000}
METHOD=${METHOD:-GET}
DELAY_US=${DELAY_US:-0}
PY_INFLIGHT=${PY_INFLIGHT-16}
PY_REQUESTS=${PY_REQUESTS:-10000}

log() { printf '%s\n' "$*" >&2; }

# ---- build ---------------------------------------------------------------------
# bench/bin is where run.sh and models.sh put their binaries too; it is in .gitignore.
BUILD=bench/bin
RESULTS=${RESULTS:-bench/results}
mkdir -p "$BUILD" "$RESULTS"
log "building httpserver and curlmulti (gcc -O2)"
gcc -O2 -Wall -Wextra -o "$BUILD/httpserver" bench/httpserver.c
if ! gcc -O2 -Wall -Wextra -pthread -o "$BUILD/curlmulti" bench/curlmulti.c -lcurl; then
    log "ERROR: building curlmulti needs libcurl's headers: apt-get install libcurl4-openssl-dev"
    exit 2
fi
if [[ -n $PY_INFLIGHT ]] && ! command -v python3 >/dev/null; then
    log "WARNING: python3 not found; skipping the Python server"
    PY_INFLIGHT=
fi

# ---- scratch space and servers ---------------------------------------------------
TMP=$(mktemp -d /tmp/nmhttp.XXXXXX)
SERVER_PIDS=()
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

# Starts a server that writes its port to a file; sets STARTED_PID and STARTED_PORT.
start_server() { # name command...
    local name=$1
    shift
    rm -f "$TMP/$name.port"
    "$@" --port-file "$TMP/$name.port" >/dev/null 2>"$TMP/$name.log" &
    STARTED_PID=$!
    SERVER_PIDS+=("$STARTED_PID")
    local i
    for ((i = 0; i < 100; i++)); do # up to 5 s (Python takes ~50 ms)
        if [[ -s $TMP/$name.port ]]; then
            STARTED_PORT=$(<"$TMP/$name.port")
            return 0
        fi
        kill -0 "$STARTED_PID" 2>/dev/null || break
        sleep 0.05
    done
    log "ERROR: $name did not start:"
    cat "$TMP/$name.log" >&2
    exit 2
}

# SIGTERM, then wait for the exit and check its status; the stats line httpserver
# prints on the way out goes to stderr (its log).
stop_server() { # pid name
    local rc=0
    kill "$1"
    wait "$1" || rc=$?
    ((rc == 0)) || log "WARNING: $2 exited with status $rc after SIGTERM"
}

# httpserver's counters, read with bash alone: {"connections":N,"requests":N}.
# The read itself counts one connection and one request.
server_stats() { # port
    local response
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'GET /_stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    response=$(cat <&3)
    exec 3<&-
    printf '%s\n' "${response##*$'\r\n\r\n'}"
}

field() { # json name -> the number after "name":
    sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"
}

DATE=$(date +%Y-%m-%d)
OUT=$RESULTS/http-$DATE.md
RAW=$RESULTS/http-$DATE.raw.txt

# ---- measurements ------------------------------------------------------------------
# One curlmulti run; appends "label in_flight rc <curlmulti JSON> <server delta>"
# to the raw file.  With a server port, the server's own count of connections and
# requests during the run is recorded too (what the client opened, seen from the
# other side; the /_stats read's own connection and request are subtracted).
measure_curl() { # label port in_flight requests [stats]
    local label=$1 port=$2 k=$3 n=$4 with_stats=${5:-}
    local before='' after line rc=0 delta=-
    [[ -n $with_stats ]] && before=$(server_stats "$port")
    line=$("$BUILD/curlmulti" --url "http://127.0.0.1:$port/v1/me" --requests "$n" \
        --in-flight "$k" --method "$METHOD" 2>"$TMP/curlmulti.err") || rc=$?
    if [[ -n $with_stats ]]; then
        after=$(server_stats "$port")
        delta="server_connections=$(($(field "$after" connections) - $(field "$before" connections) - 1))"
        delta+=" server_requests=$(($(field "$after" requests) - $(field "$before" requests) - 1))"
    fi
    if ((rc != 0)); then
        log "  FAILED: $label in-flight $k (status $rc):"
        head -n 6 "$TMP/curlmulti.err" >&2
    elif [[ -n $with_stats && $delta != *" server_requests=$n" ]]; then
        log "  WARNING: $label in-flight $k: the server counted $delta for $n requests"
    fi
    [[ -n $line ]] || line='{}'
    printf '%s %s %s %s %s\n' "$label" "$k" "$rc" "$line" "$delta" >>"$RAW"
}

# ---- netmodel: the same round trips through the REST backend -----------------------
# bench/http_netmodel.py starts `netmodel serve --backend rest` with a configuration
# pointed at httpserver (`maxInFlight` = K) and sends REQUESTS `getFollowState` of
# distinct ids in one write: each costs exactly one HTTP round trip (nothing cached,
# nothing shared). The figure is requests ÷ the time until the last reply; the
# server's own count of requests and connections is checked as for curlmulti.
# NETMODEL_BIN (default .build/release/netmodel); NETMODEL=0 skips these rows.
NETMODEL_BIN=${NETMODEL_BIN:-.build/release/netmodel}
run_netmodel() { # port
    local port=$1 k line rc before after delta
    if [[ ${NETMODEL:-1} == 0 || ! -x $NETMODEL_BIN ]]; then
        log "  netmodel: skipped (NETMODEL=0, or no $NETMODEL_BIN: swift build -c release)"
        return 0
    fi
    for k in $INFLIGHT; do
        rc=0
        before=$(server_stats "$port")
        line=$(NETMODEL_BIN=$NETMODEL_BIN python3 bench/http_netmodel.py --url "http://127.0.0.1:$port" \
            --in-flight "$k" --requests "$REQUESTS" 2>"$TMP/netmodel.err") || rc=$?
        after=$(server_stats "$port")
        delta="server_connections=$(($(field "$after" connections) - $(field "$before" connections) - 1))"
        delta+=" server_requests=$(($(field "$after" requests) - $(field "$before" requests) - 1))"
        if [[ $rc == 0 && $(field "$line" errors) != 0 ]]; then rc=3; fi
        ((rc == 0)) || { log "  FAILED: netmodel in-flight $k (status $rc)"; head -n 6 "$TMP/netmodel.err" >&2; }
        [[ -n $line ]] || line='{}'
        printf '%s %s %s %s %s\n' netmodel "$k" "$rc" "$(tr -d ' ' <<<"$line")" "$delta" >>"$RAW"
    done
}

# ---- run ---------------------------------------------------------------------------------
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "# date=$DATE"
    echo "# commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
    echo "# kernel=$(uname -r)"
    echo "# cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "# cores=$(nproc)"
    echo "# libcurl=$(curl-config --version 2>/dev/null || echo unknown)"
    echo "# runs=$RUNS inflight=$INFLIGHT requests=$REQUESTS method=$METHOD delay_us=$DELAY_US"
    echo "# py_inflight=$PY_INFLIGHT py_requests=$PY_REQUESTS"
    echo "# load_before=$(load_avg)"
} >"$RAW"
if awk '{ exit !($1 > 0.5) }' /proc/loadavg; then
    log "WARNING: load average $(load_avg): other work on this machine will skew the figures"
fi

start_server httpserver "$BUILD/httpserver" --delay-us "$DELAY_US"
HTTP_PID=$STARTED_PID HTTP_PORT=$STARTED_PORT
PY_PID='' PY_PORT=''
if [[ -n $PY_INFLIGHT ]]; then
    start_server python python3 bench/pyhttpserver.py
    PY_PID=$STARTED_PID PY_PORT=$STARTED_PORT
fi

# Repetitions are the outer loop, so that a burst of background load spreads over
# all cells instead of spoiling every run of one cell.
for ((rep = 1; rep <= RUNS; rep++)); do
    log "repetition $rep/$RUNS"
    for k in $INFLIGHT; do
        measure_curl httpserver "$HTTP_PORT" "$k" "$REQUESTS" stats
    done
    for k in $PY_INFLIGHT; do
        measure_curl python "$PY_PORT" "$k" "$PY_REQUESTS"
    done
    run_netmodel "$HTTP_PORT"
done
echo "# load_after=$(load_avg)" >>"$RAW"

stop_server "$HTTP_PID" httpserver
log "httpserver totals: $(tail -n 1 "$TMP/httpserver.log")"
[[ -n $PY_PID ]] && stop_server "$PY_PID" python
SERVER_PIDS=()

# ---- report --------------------------------------------------------------------------------
median() { # numbers on stdin, one a line -> their median (rounded), or "-"
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.0f\n", m }'
}
span() { # numbers on stdin -> "min–max"
    sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s–%s\n", lo, hi; else print "-" }'
}
group() { awk -v l="$1" -v k="$2" '$1 == l && $2 == k' "$RAW"; }     # all runs of a cell
ok_runs() { group "$1" "$2" | awk '$3 == 0'; }                          # the successful ones
values() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }                    # a curlmulti field
server_values() { sed -n "s/.* $1=\([0-9-]*\).*/\1/p"; }                # a server delta

server_name() {
    case $1 in
    httpserver) if ((DELAY_US > 0)); then echo "httpserver.c, delay $DELAY_US µs"; else echo "httpserver.c"; fi ;;
    python) echo "Python ThreadingHTTPServer" ;;
    esac
}

{
    echo "# HTTP round trips — $DATE"
    echo
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo none), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(curl-config --version 2>/dev/null || echo libcurl)."
    echo "\`RUNS=$RUNS INFLIGHT=\"$INFLIGHT\" REQUESTS=$REQUESTS PY_INFLIGHT=\"$PY_INFLIGHT\" PY_REQUESTS=$PY_REQUESTS METHOD=$METHOD DELAY_US=$DELAY_US bash bench/http.sh\`;"
    echo "load average $(sed -n 's/^# load_before=//p' "$RAW") before, $(sed -n 's/^# load_after=//p' "$RAW") after."
    echo "Every request: \`$METHOD /v1/me/follow/artist/<n>\`, keep-alive, response body checked."
    echo
    echo "| client | server | in flight | requests/run | median req/s | range req/s | connections (client) | connections (server) | failed runs |"
    echo "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
    for cell in $(for k in $INFLIGHT; do echo "httpserver:$k"; done; for k in $PY_INFLIGHT; do echo "python:$k"; done); do
        label=${cell%%:*} k=${cell##*:}
        n=$REQUESTS
        [[ $label == python ]] && n=$PY_REQUESTS
        runs=$(group "$label" "$k" | wc -l)
        good=$(ok_runs "$label" "$k")
        failed=$((runs - $(printf '%s' "$good" | grep -c . || true)))
        rate=$(values per_second <<<"$good" | median)
        range=$(values per_second <<<"$good" | span)
        conns=$(values connections <<<"$good" | median)
        sconns=$(server_values server_connections <<<"$good" | median)
        printf '| curlmulti | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$(server_name "$label")" "$k" "$n" "$rate" "$range" "$conns" "$sconns" "$failed"
    done
    echo
    echo "connections (client): CURLINFO_NUM_CONNECTS summed over a run's transfers;"
    echo "connections (server): what httpserver accepted during the run (its /_stats before"
    echo "and after). Medians over the runs; failed runs are left out of them."
    if grep -q '^netmodel ' "$RAW"; then
        echo
        echo "Through netmodel (\`bench/http_netmodel.py\`: \`getFollowState\` of distinct ids over stdio,"
        echo "one HTTP GET each, \`maxInFlight\` = in flight), against the same httpserver:"
        echo
        echo "| in flight | median req/s | range req/s | ÷ curlmulti (median) | connections (netmodel) | connections (server) | failed runs |"
        echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"
        for k in $INFLIGHT; do
            runs=$(group netmodel "$k" | wc -l)
            good=$(ok_runs netmodel "$k")
            failed=$((runs - $(printf '%s' "$good" | grep -c . || true)))
            rate=$(values per_second <<<"$good" | median)
            floor=$(values per_second <<<"$(ok_runs httpserver "$k")" | median)
            ratio=$(awk -v a="$rate" -v b="$floor" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }')
            printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$k" "$rate" "$(values per_second <<<"$good" | span)" \
                "$ratio" "$(values connections <<<"$good" | median)" \
                "$(server_values server_connections <<<"$good" | median)" "$failed"
        done
    else
        echo
        echo "netmodel: not measured (NETMODEL=0, or no release binary)."
    fi
    bad=$(awk '$1 !~ /^#/ && $3 != 0' "$RAW")
    if [[ -n $bad ]]; then
        echo
        echo "Failed runs:"
        echo
        printf '    %s\n' "$bad"
    fi
} | tee "$OUT"
log "wrote $OUT and $RAW"
