#!/usr/bin/env python3
"""The Python stdlib HTTP server at its best, for bench/http.sh.

How many requests/s can a test backend built on http.server's ThreadingHTTPServer
answer at all? If fewer than netmodel or curlmulti can send, tests and demos against
such a backend (examples/artsy/server.py) measure Python, not netmodel.

It answers like bench/httpserver.c, so curlmulti's body check holds:
  .../follow/artist/<id> (any method)  {"id":"<id>","following":true}
  GET with ids[]= in the query         ["a","b"]
  anything else                        {"ok":true}
and it does nothing else: no logging, no locks, no routing table. Any real backend on
the same class does more per request, so this is an upper bound for them.

  python3 bench/pyhttpserver.py [--port N] [--port-file F]

Prints "listening on 127.0.0.1:PORT" on stdout; exits 0 on SIGTERM/SIGINT.
"""

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; the default HTTP/1.0 closes after every response
    disable_nagle_algorithm = True  # else headers and body leave in two segments: ~40 ms stalls

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # leave the connection at the next request
        url = urlsplit(self.path)
        ids = parse_qs(url.query).get("ids[]") if self.command == "GET" else None
        head, _, last = url.path.rpartition("/")
        if ids:
            body = json.dumps(ids, separators=(",", ":"))
        elif head.endswith("/follow/artist") and last:
            body = json.dumps({"id": unquote(last), "following": True}, separators=(",", ":"))
        else:
            body = '{"ok":true}'
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = answer

    def log_message(self, fmt, *args):  # one stderr line per request would be the bottleneck
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections must not keep the process alive
    request_queue_size = 128  # listen backlog: 64 clients connect at once


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()  # shutdown() waits for serve_forever

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
