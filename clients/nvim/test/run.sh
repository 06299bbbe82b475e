#!/usr/bin/env bash
# Runs each test/test_*.lua in its own headless Neovim against the real binary
# ($NETMODEL_BIN, default <repo>/.build/debug/netmodel). Exits non-zero on failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
plugin="$(dirname "$here")"
export NETMODEL_BIN="${NETMODEL_BIN:-$(cd "$plugin/../.." && pwd)/.build/debug/netmodel}"
if [[ ! -x "$NETMODEL_BIN" ]]; then
  echo "netmodel binary not found: $NETMODEL_BIN (set NETMODEL_BIN)" >&2
  exit 2
fi
# Keep the default socket and state folder away from the user's.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/run"
# XDG_CONFIG_HOME too: the user's netmodel.json would change every server spawned here.
export XDG_RUNTIME_DIR="$tmp/run" XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config"

tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=("$here"/test_*.lua)
failed=0
for t in "${tests[@]}"; do
  [[ "$t" == */* ]] || t="$here/$t"
  echo "== $(basename "$t")"
  # `cquit 99` only runs when the test file itself broke before H.finish().
  timeout 180 nvim --headless -u NONE -i NONE -n \
    --cmd "set rtp^=$plugin" -c "runtime plugin/netmodel.lua" \
    -c "luafile $t" -c "cquit 99" </dev/null
  rc=$?
  echo
  if [[ $rc != 0 ]]; then
    echo "   $(basename "$t") failed (exit $rc)"
    failed=1
  fi
done
exit $failed
