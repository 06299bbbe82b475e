#!/usr/bin/env bash
# Instructions per request, counted by callgrind (issue 13, part 6): the cached
# `getFollowState` (newline-delimited, and with Content-Length framing: gfs-lsp), the
# unknown method, and the REST round trip through netmodel, and the bare libcurl-multi
# loop's round trip (the floor).
#
#   bash bench/instructions.sh BIN [TAG]
#
# BIN is a release build (`swift build -c release --scratch-path DIR --product netmodel`
# puts it in DIR/release/netmodel). Each figure is (the N-request run − the 1-request
# run) ÷ (N − 1): start-up cancels out. Counts are deterministic enough on a loaded
# machine, except the REST figure: how many requests one loop iteration handles
# depends on timing (compare binaries run one after the other, several times).
# Needs valgrind, gcc, libcurl's headers, python3. Writes its callgrind files to
# $OUT (default /tmp/nm-instructions); `callgrind_annotate --auto=no FILE` shows where.
# REST_ONLY=1 leaves out the cached read and the unknown method; IN_FLIGHT (default
# 16) is the REST configuration's `maxInFlight` and curlmulti's; NO_FLOOR=1 leaves
# out curlmulti.
set -euo pipefail
BIN=$(realpath "$1")
TAG=${2:-run}
OUT=${OUT:-/tmp/nm-instructions}
IN_FLIGHT=${IN_FLIGHT:-16}
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"

summary() { grep -m1 '^summary' "$1" | awk '{print $2}'; }
per() { echo $((($(summary "$2") - $(summary "$1")) / $3)); }

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for n in (1, 10001):
    for name, method, params in (("gfs", "getFollowState", {"kind": "artist", "id": "banksy"}),
                                 ("ping", "netmodel/ping", None)):
        with open(f"{out}/{name}{n}.ndjson", "w") as f, open(f"{out}/{name}-lsp{n}.ndjson", "w") as lsp:
            for i in range(n):
                m = {"jsonrpc": "2.0", "id": i + 1, "method": method}
                if params: m["params"] = params
                text = json.dumps(m, separators=(",", ":"))
                f.write(text + "\n")
                lsp.write(f"Content-Length: {len(text)}\r\n\r\n{text}")
PY

for name in gfs gfs-lsp ping; do
  [ -n "${REST_ONLY:-}" ] && break
  for n in 1 10001; do
    state=$(mktemp -d)
    # The first getFollowState goes to the backend: with one request allowed to wait,
    # reading pauses until it is answered, so every later one is answered from memory
    # (without it, the requests read with the first waited for its answer).
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$name-$TAG-$n.out" "$BIN" serve --state-dir "$state" \
      --max-pending-requests 1 <"$OUT/$name$n.ndjson" >"$OUT/$name-$TAG-$n.reply" 2>/dev/null
    rm -rf "$state"
  done
  echo "$name: $(per "$OUT/$name-$TAG-1.out" "$OUT/$name-$TAG-10001.out" 10000) instructions a request"
done

gcc -O2 -o "$OUT/httpserver" "$REPO/bench/httpserver.c"
gcc -O2 -pthread -o "$OUT/curlmulti" "$REPO/bench/curlmulti.c" -lcurl
rm -f "$OUT/port"
"$OUT/httpserver" --port-file "$OUT/port" >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 50); do [ -s "$OUT/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$OUT/port")/v1/me"
printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file="$CGOUT" %s "$@" 2>/dev/null\n' "$BIN" \
  >"$OUT/under-callgrind"
chmod +x "$OUT/under-callgrind"
for n in 1 3001; do
  CGOUT="$OUT/rest-$TAG-$n.out" python3 "$REPO/bench/http_netmodel.py" --url "$url" --in-flight "$IN_FLIGHT" --requests $n \
    --bin "$OUT/under-callgrind" >/dev/null
  [ -n "${NO_FLOOR:-}" ] && continue
  valgrind --tool=callgrind --callgrind-out-file="$OUT/curl-$TAG-$n.out" "$OUT/curlmulti" --url "$url" \
    --requests $n --in-flight "$IN_FLIGHT" >/dev/null 2>&1
done
echo "REST round trip: $(per "$OUT/rest-$TAG-1.out" "$OUT/rest-$TAG-3001.out" 3000) instructions a request"
[ -n "${NO_FLOOR:-}" ] || echo "curlmulti (the floor): $(per "$OUT/curl-$TAG-1.out" "$OUT/curl-$TAG-3001.out" 3000) instructions a request"
