#!/usr/bin/env bash
# How long the Emacs client takes to read one big message: bench-read.sh [LISP-DIR] [MB...]
# (default: this client, 5 and 30 MB). A stand-in server (big-reply-server.py) answers
# `netmodel-request-sync' with one message of that size; the time is from the request to
# the parsed result (and the CPU time Emacs spent: the machine may be busy). Give another LISP-DIR (e.g. an older clients/emacs) to compare.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lisp="${1:-$(dirname "$here")}"
shift || true
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(5 30)
tmp="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
chmod 700 "$tmp"
for mb in "${sizes[@]}"; do
  sock="$tmp/s.sock"
  rm -f "$tmp/ready"
  python3 "$here/big-reply-server.py" "$sock" $((mb * 1000000)) >"$tmp/ready" &
  while ! grep -q ready "$tmp/ready" 2>/dev/null; do sleep 0.05; done
  emacs --batch -Q -L "$lisp" --eval "
(progn
  (require 'netmodel)
  (setq netmodel-socket \"$sock\" netmodel-spawn nil netmodel-quiet t)
  (let* ((t0 (float-time)) (cpu0 (float-time (get-internal-run-time)))
         (items (netmodel-request-sync \"big\" nil 600)))
    (message \"%s MB: %.2f s, Emacs CPU %.2f s (%d items)\" $mb (- (float-time) t0)
             (- (float-time (get-internal-run-time)) cpu0) (length items))))"
  wait
done
