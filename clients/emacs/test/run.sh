#!/usr/bin/env bash
# Runs each test/*-test.el in its own `emacs --batch` (ERT) against the real binary
# ($NETMODEL_BIN, default <repo>/.build/debug/netmodel). Exits non-zero on failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lisp="$(dirname "$here")"
export NETMODEL_BIN="${NETMODEL_BIN:-$(cd "$lisp/../.." && pwd)/.build/debug/netmodel}"
if [[ ! -x "$NETMODEL_BIN" ]]; then
  echo "netmodel binary not found: $NETMODEL_BIN (set NETMODEL_BIN)" >&2
  exit 2
fi
# Keep the default socket, the state folder and ~/.emacs.d away from the user's.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/run"
# XDG_CONFIG_HOME too: the user's netmodel.json would change every server spawned here.
export XDG_RUNTIME_DIR="$tmp/run" XDG_STATE_HOME="$tmp/state" HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config"

tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=("$here"/*-test.el)
failed=0
for t in "${tests[@]}"; do
  [[ "$t" == */* ]] || t="$here/$t"
  echo "== $(basename "$t")"
  timeout 300 emacs --batch -Q -L "$lisp" -L "$here" -l ert -l "$t" -f ert-run-tests-batch-and-exit </dev/null
  rc=$?
  if [[ $rc != 0 ]]; then
    echo "   $(basename "$t") failed (exit $rc)"
    failed=1
  fi
done
exit $failed
