# bench/http_floor.sh — sourced by http_thread.sh and http_compare.sh: builds
# bench/httpserver.c and bench/curlmulti.c into $BUILD, starts one httpserver for the
# run (stopped on exit, with $TMP), and sets `url` to its /v1/me. `rate` reads the
# round trips a second from a client's last JSON line (curlmulti and http_netmodel.py
# print the same one); `medians_table` prints the rounds' medians against the floor.
BUILD=bench/bin
mkdir -p "$BUILD"
gcc -O2 -Wall -Wextra -o "$BUILD/httpserver" bench/httpserver.c
gcc -O2 -Wall -Wextra -pthread -o "$BUILD/curlmulti" bench/curlmulti.c -lcurl

TMP=$(mktemp -d)
"$BUILD/httpserver" --port-file "$TMP/port" >/dev/null 2>"$TMP/server.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [[ -s $TMP/port ]] && break; sleep 0.05; done
url="http://127.0.0.1:$(<"$TMP/port")/v1/me"

rate() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["per_second"])'; }

# From lines "K ROW RATE" (the file $1), per number in flight, each row's median round
# trips a second and its ratio to the floor's median, rows in the order they first
# appear; $2 heads the table.
medians_table() { # raw heading
  python3 - "$1" "$2" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, name, rate = line.split()
    rows[(int(k), name)].append(float(rate))
print(sys.argv[2] + "\n")
print("| in flight | row | round trips/s | ÷ floor |")
print("| ---: | --- | ---: | ---: |")
for k in sorted({k for k, _ in rows}):
    floor = statistics.median(rows[(k, "floor")])
    for (kk, name), rates in rows.items():
        if kk == k:
            median = statistics.median(rates)
            print(f"| {k} | {name} | {median:,.0f} | {median / floor:.2f} |")
PY
}
