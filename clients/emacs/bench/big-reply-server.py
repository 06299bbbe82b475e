"""A stand-in server for bench-read.sh: on a Unix socket, answers every request
(Content-Length framing) with one result of about the size asked for, an array
of entity states, written in 64 KiB chunks.  Standard library only."""

import json
import os
import socket
import sys

path, size = sys.argv[1], int(sys.argv[2])
item = {"kind": "artist", "id": "", "following": True, "confirmed": True, "pending": False,
        "error": None, "attributes": {"name": "Artiste é", "blurb": "x" * 60}, "version": 1}
items, total, n = [], 0, 0
while total < size:
    item["id"] = f"artist-{n:07d}"
    text = json.dumps(item, ensure_ascii=False)
    items.append(text)
    total += len(text.encode()) + 1
    n += 1
result = "[" + ",".join(items) + "]"

if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
buf = b""
while True:
    data = conn.recv(65536)
    if not data:
        break
    buf += data
    while b"\r\n\r\n" in buf:
        head, rest = buf.split(b"\r\n\r\n", 1)
        length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0].split(b":")[1])
        if len(rest) < length:
            break
        body, buf = rest[:length], rest[length:]
        rid = json.loads(body)["id"]
        out = ('{"jsonrpc":"2.0","id":%d,"result":%s}' % (rid, result)).encode()
        msg = b"Content-Length: %d\r\n\r\n" % len(out) + out
        for i in range(0, len(msg), 65536):
            conn.sendall(msg[i:i + 65536])
