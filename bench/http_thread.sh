#!/usr/bin/env bash
# bench/http_thread.sh — what libcurl on a thread of its own would give netmodel,
# measured before it is built (issue 30 §2; bench/README, "HTTP at the floor").
#
#   bash bench/http_thread.sh
#
# Against one bench/httpserver.c, rounds interleaved so that a slow spell of a
# shared machine hits every row alike:
#   floor     curlmulti as it is
#   inline    curlmulti --work-us U: U µs of CPU on each answer, on the loop's
#             thread (netmodel's design today: one thread does libcurl's work
#             and the models' in turn)
#   worker    curlmulti --work-us U --worker: the same work on a second thread,
#             handles handed back through an eventfd (the design measured)
#   netmodel  the REST backend through bench/http_netmodel.py
# Prints the medians and each row ÷ the floor.  Knobs (defaults in brackets):
#   ROUNDS [5]  INFLIGHT ["1 16 64"]  WORK_US [25]  REQUESTS [30000]
#   NETMODEL_BIN [.build/release/netmodel] (NETMODEL=0 leaves it out)
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
INFLIGHT=${INFLIGHT:-"1 16 64"}
WORK_US=${WORK_US:-25}
REQUESTS=${REQUESTS:-30000}
NETMODEL_BIN=${NETMODEL_BIN:-.build/release/netmodel}

# shellcheck source=bench/http_floor.sh
source bench/http_floor.sh

for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round of $ROUNDS" >&2
  for k in $INFLIGHT; do
    n=$REQUESTS
    ((k == 1)) && n=$((REQUESTS / 3))
    echo "$k floor $("$BUILD/curlmulti" --url "$url" --requests "$n" --in-flight "$k" | rate)"
    echo "$k inline $("$BUILD/curlmulti" --url "$url" --requests "$n" --in-flight "$k" --work-us "$WORK_US" | rate)"
    echo "$k worker $("$BUILD/curlmulti" --url "$url" --requests "$n" --in-flight "$k" --work-us "$WORK_US" --worker | rate)"
    if [[ ${NETMODEL:-1} != 0 ]]; then
      echo "$k netmodel $(python3 bench/http_netmodel.py --url "$url" --in-flight "$k" --requests "$n" \
        --bin "$NETMODEL_BIN" | rate)"
    fi
  done
done >"$TMP/raw"

medians_table "$TMP/raw" \
  "medians of $ROUNDS interleaved rounds; inline and worker spend $WORK_US µs of CPU an answer"
