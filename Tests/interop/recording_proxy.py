"""A forward HTTP proxy on loopback that records every request it receives (method,
target, headers) as one JSON line each, for the tests of which hop a request takes
(test_proxy.py). An absolute-form request (`GET http://host:port/path`) is passed on to
its host when that host is this machine, and answered 502 otherwise (nothing leaves the
machine); CONNECT is recorded and answered 502 (no tunnel: the tests only ask whether
the proxy was asked).

    python3 recording_proxy.py --port-file FILE --log FILE
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import socket
import threading
import urllib.parse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *_):
            pass

        def record(self, body: bytes):
            entry = {"method": self.command, "target": self.path, "headers": dict(self.headers.items()),
                     "body": body.decode("utf-8", "replace")}
            with lock, open(args.log, "a") as log:
                log.write(json.dumps(entry) + "\n")

        def answer(self, status: int, body: bytes, headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_CONNECT(self):
            self.record(b"")
            self.answer(502, b"no tunnels here")
            self.close_connection = True

        def relay(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            self.record(body)
            target = urllib.parse.urlsplit(self.path)
            try:
                local = socket.gethostbyname(target.hostname or "").startswith("127.")
            except OSError:
                local = False
            if target.scheme != "http" or not local:
                return self.answer(502, b"this proxy reaches only this machine")
            upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=10)
            path = target.path + (f"?{target.query}" if target.query else "")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
            upstream.request(self.command, path or "/", body=body or None, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders()
                    if k.lower() not in ("content-length", "transfer-encoding", "connection")]
            upstream.close()
            self.answer(response.status, data, kept)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = relay

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file, "w") as port_file:
        port_file.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
