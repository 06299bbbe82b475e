#!/usr/bin/env bash
# Runs the Node client's tests against the real server: $NETMODEL_BIN, else
# .build/debug/netmodel (tests needing the binary are skipped when there is none).
# Extra arguments go to `node --test` (e.g. --test-name-pattern=reconnect).
set -euo pipefail
cd "$(dirname "$0")/../../.."
command -v node >/dev/null || { echo "clients/node/test/run.sh: node (18+) not found" >&2; exit 1; }
# Test files by name, not the folder: `node --test DIR` would also run helpers.mjs, and
# Node 21+ reads its arguments as globs rather than folders.
# A binary named explicitly must exist: CI must fail, not skip.
if [[ -n "${NETMODEL_BIN:-}" && ! -x "$NETMODEL_BIN" ]]; then
  echo "clients/node/test/run.sh: NETMODEL_BIN=$NETMODEL_BIN is not an executable" >&2
  exit 1
fi
exec node --test "$@" clients/node/test/*.test.mjs
