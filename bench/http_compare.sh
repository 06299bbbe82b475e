#!/usr/bin/env bash
# bench/http_compare.sh — netmodel binaries side by side on REST round trips, against
# the bare libcurl floor, in interleaved rounds (bench/README, "libcurl on its own
# thread, built"): what a change to the HTTP path gives, old binary against new.
#
#   BINS="/tmp/netmodel-before .build/release/netmodel" bash bench/http_compare.sh
#
# Each round runs, for each number in flight: bench/curlmulti.c (the floor), then every
# binary through bench/http_netmodel.py, against one bench/httpserver.c. Prints, per in
# flight and row, the median round trips a second and its ratio to the floor's median.
# Knobs: BINS [.build/release/netmodel]  ROUNDS [5]  INFLIGHT ["1 16 64"]
# REQUESTS [30000] (a third of it at 1 in flight). A row is named by its binary's path.
set -euo pipefail

cd "$(dirname "$0")/.."
BINS=${BINS:-.build/release/netmodel}
ROUNDS=${ROUNDS:-5}
INFLIGHT=${INFLIGHT:-"1 16 64"}
REQUESTS=${REQUESTS:-30000}

# shellcheck source=bench/http_floor.sh
source bench/http_floor.sh

for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round of $ROUNDS" >&2
  for k in $INFLIGHT; do
    n=$REQUESTS
    ((k == 1)) && n=$((REQUESTS / 3))
    echo "$k floor $("$BUILD/curlmulti" --url "$url" --requests "$n" --in-flight "$k" | rate)"
    for bin in $BINS; do
      echo "$k $bin $(python3 bench/http_netmodel.py --url "$url" --in-flight "$k" --requests "$n" --bin "$bin" | rate)"
    done
  done
done >"$TMP/raw"

medians_table "$TMP/raw" "medians of $ROUNDS interleaved rounds"
