#!/usr/bin/env python3
"""A stand-in for ``netmodel serve`` over stdio that answers every request with one big
message: ``{"result": {"blob": "xxx…"}}`` of about $BIG_REPLY_BYTES bytes (default
30 MB), written in 64 KiB pieces as a pipe delivers a real server's reply. For timing
how a client reads a message (clients/*/bench/big_message.*); any arguments are ignored."""

import json
import os
import sys

size = int(os.environ.get("BIG_REPLY_BYTES", str(30 * 1024 * 1024)))
for line in sys.stdin.buffer:
    try:
        rid = json.loads(line).get("id")
    except ValueError:
        continue
    if rid is None:
        continue
    # Multi-byte UTF-8 too, so a split sequence across pieces is exercised.
    blob = ("é" * (size // 4)) + ("x" * (size - 2 * (size // 4)))
    out = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"blob": blob}}, ensure_ascii=False).encode() + b"\n"
    for i in range(0, len(out), 65536):
        sys.stdout.buffer.write(out[i : i + 65536])
        sys.stdout.buffer.flush()
