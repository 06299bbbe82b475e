"""What every demo API server in examples/ shares (standard library only).

An API's server.py subclasses `State` (its data, seeded by `seed()`), `Handler` (its
routes in `answer()`, its own control endpoints in `control_api()`) and, for faults of its
own, `Rule`; then calls `main()`. This module keeps the rest the same everywhere:

- a threaded HTTP/1.1 server with keep-alive, started by `main()` (--port, --port-file,
  --token, --quiet), stopped by SIGTERM or SIGINT;
- the request log (tests read it: GET /_control/stats or /_control/log), call and route
  counts, connection counts;
- fault injection (POST /_control/faults): an answer replaced by another status, a delay,
  a dropped connection, a request that is never answered, or, with `applied`, the real
  change made and only its answer lost;
- /_control/reset, /_control/token, /_control/faults; anything else goes to `control_api()`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections import Counter
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOG_LIMIT = 10_000  # keep the last N log entries so a long benchmark cannot eat the memory
PHRASES = {s.value: s.phrase for s in HTTPStatus}


class Rule:
    """One queued fault. Validated up front so a typo in a test fails at POST /_control/faults."""

    FIELDS = {"method", "path", "status", "body", "headers", "delay_ms", "drop", "hang", "times", "sequence",
              "applied"}

    def __init__(self, raw):
        if not isinstance(raw, dict) or not set(raw) <= self.FIELDS:
            raise ValueError(f"a rule is an object with keys among {sorted(self.FIELDS)}")
        self.raw = dict(raw)
        if not all(isinstance(raw.get(k), (str, type(None))) for k in ("method", "path")):
            raise ValueError("method and path must be strings or null")
        self.method = (raw.get("method") or "").upper() or None
        self.path = re.compile(raw["path"]) if raw.get("path") is not None else None
        self.status, self.body, self.headers = raw.get("status"), raw.get("body"), raw.get("headers") or {}
        self.delay_ms, self.times = raw.get("delay_ms", 0) or 0, raw.get("times", 1)
        self.drop, self.hang = bool(raw.get("drop")), bool(raw.get("hang"))
        self.sequence, self.uses = bool(raw.get("sequence")), 0
        # applied: the request does its work first and only its answer is lost or replaced,
        # as when a connection breaks after the API committed a change (the ambiguous case a
        # client's retry must survive: an unfollow retried after it was done meets a 404).
        self.applied = raw.get("applied", False)
        if not isinstance(self.applied, bool):
            raise ValueError("applied must be a boolean")
        if not isinstance(self.delay_ms, int) or self.delay_ms < 0:
            raise ValueError("delay_ms must be an integer >= 0")
        if self.times is not None and not (isinstance(self.times, int) and self.times >= 1):
            raise ValueError("times must be an integer >= 1, or null for unlimited")
        if not isinstance(self.headers, dict) or not all(isinstance(v, str) for v in self.headers.values()):
            raise ValueError("headers must map names to strings")
        self.validate()
        if self.status is not None and not (isinstance(self.status, int) and 100 <= self.status <= 599):
            raise ValueError("status must be an integer 100..599")

    def validate(self):
        """What a rule must say; an API's own rule fields are read here."""
        if self.status is None and not (self.delay_ms or self.drop or self.hang):
            raise ValueError("a rule needs status, delay_ms, drop or hang")
        if self.applied and self.status is None and not (self.drop or self.hang):
            raise ValueError("applied needs status, drop or hang: the answer that replaces the real one")

    def replaces(self):
        """Whether this rule's answer stands in for the real one."""
        return self.status is not None

    def default_body(self):
        return {"error": PHRASES.get(self.status, "Error")}

    def answer(self, uses):
        """(status, body, headers); with `sequence`, "{n}" in the body's and headers' strings is
        the how-many-th answer of this rule (1, 2, …): a cursor or Link that never repeats."""
        body = self.body if self.body is not None else self.default_body()
        headers = self.headers
        if self.sequence:
            body = json.loads(json.dumps(body).replace("{n}", str(uses)))
            headers = {name: value.replace("{n}", str(uses)) for name, value in headers.items()}
        return self.status, body, dict(headers)

    def matches(self, method, path):
        return (self.method in (None, method)) and (self.path is None or self.path.search(path))

    def describe(self):
        return {**self.raw, "times": self.times}


class State:
    """Everything a server remembers. One lock: every operation on it is quick."""

    def __init__(self, token):
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set on SIGTERM/SIGINT: delays and hangs give up
        self.initial_token = token
        self.open_connections = 0  # a gauge of live sockets: reset does not touch it
        self.generation = 0  # bumped by reset, so open connections count again afterwards
        self.reset()

    def reset(self):
        with self.lock:
            self.generation += 1
            self.token = self.initial_token
            self.faults = []
            self.requests = self.connections = self.api_connections = self.faulted = 0
            self.calls, self.routes, self.log, self.log_dropped = Counter(), Counter(), [], 0
            self.seed()

    def seed(self):
        """The API's own data as it is at start (called with the lock held)."""

    def stats(self):
        """GET /_control/stats (called with the lock held); an API adds its own counts."""
        return {"requests": self.requests, "connections": self.connections,
                "open_connections": self.open_connections, "api_connections": self.api_connections,
                "faulted": self.faulted, "calls": dict(self.calls), "routes": dict(self.routes),
                "log": list(self.log), "log_dropped": self.log_dropped, "token_required": self.token is not None}

    def take_fault(self, *key):
        """The first queued rule matching `key` (what `Handler.fault_key` says), and its use count."""
        with self.lock:
            for rule in self.faults:
                if rule.matches(*key):
                    rule.uses += 1
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self.faults.remove(rule)
                    return rule, rule.uses
        return None, 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: libcurl reuses the connection
    disable_nagle_algorithm = True  # else headers and body leave in two segments: ~40 ms stalls
    server_version = "Demo/1.0"
    content_type = "application/json; charset=utf-8"
    secret_headers = ("x-access-token",)  # logged as <redacted>
    rule_class = Rule
    state_class = State
    state: State = None  # set by make_server
    quiet = False

    # ---- hooks an API overrides -----------------------------------------------------------

    def answer(self, method, url, body):
        """(status, body, headers) of the API's own answer; may change the state."""
        return 404, {"error": "Not Found"}, None

    def route_of(self, method, path, body):
        """The label a request is counted under in stats' `routes`."""
        return f"{method} {path}"

    def fault_key(self, method, path, body):
        """What a fault rule is matched against (Rule.matches's arguments); None: no fault."""
        return method, path

    def log_extra(self):
        """Fields an API adds to each log entry."""
        return {}

    def bug_body(self):
        return {"error": "Internal Server Error (demo server bug, see its stderr)"}

    def control_api(self, key, data):
        """The API's own control endpoints: key is "METHOD name" (/_control/name); answers
        with send_json, or returns None for an unknown endpoint."""
        return None

    # ---- connections ----------------------------------------------------------------------

    def setup(self):
        super().setup()
        self.api_generation = 0  # which reset generation already counted this connection
        with self.state.lock:
            self.state.connections += 1
            self.state.open_connections += 1

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        finally:
            with self.state.lock:
                self.state.open_connections -= 1

    def log_message(self, fmt, *args):
        if not self.quiet:
            sys.stderr.write(f"{self.address_string()} {fmt % args}\n")

    def dispatch(self):
        try:
            self.handle_one()
        except OSError:
            raise  # the peer went away: nothing to answer
        except Exception:  # a bug here: say so on stderr and answer 500 rather than hang up
            traceback.print_exc()
            self.close_connection = True
            self.send_json(500, self.bug_body())

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = dispatch

    # ---- plumbing -------------------------------------------------------------------------

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, status, obj, headers=None):
        data = b"" if status in (204, 304) or obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if data or status != 204:
            self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(data)))  # on every answer: keeps the connection alive
        for name, value in (headers.items() if isinstance(headers, dict) else headers or ()):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        return status

    def drop(self):
        """Close the TCP connection with no answer at all (curl: 'Empty reply from server')."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hang(self):
        """Never answer; give up when the client closes its end or the server stops."""
        poller = select.poll()
        poller.register(self.connection, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not self.state.stop.is_set():
            if poller.poll(100):
                try:
                    if not self.connection.recv(65536):
                        break  # EOF: the client went away
                except OSError:
                    break
        self.drop()

    # ---- one request ----------------------------------------------------------------------

    def handle_one(self):
        arrived, self.arrived_epoch = time.monotonic(), time.time()
        url = urlsplit(self.path)
        path, method, body = url.path, self.command, self.read_body()
        if path.startswith("/_control/"):
            return self.control(method, path, body)
        st = self.state
        self.route_label = self.route_of(method, path, body)
        with st.lock:
            st.requests += 1
            st.calls[f"{method} {path}"] += 1
            st.routes[self.route_label] += 1
            if self.api_generation != st.generation:
                self.api_generation = st.generation
                st.api_connections += 1
        key = self.fault_key(method, path, body)
        rule, uses = st.take_fault(*key) if key is not None else (None, 0)
        self.rule = rule
        reply = None  # (status, body, headers); None means drop or hang
        if rule:
            with st.lock:
                st.faulted += 1
        if rule and rule.applied:
            self.answer(method, url, body)  # the change happens; its answer is lost
        if rule and rule.delay_ms and st.stop.wait(rule.delay_ms / 1000):
            pass  # the server is stopping: drop rather than answer late
        elif rule and (rule.drop or rule.hang):
            pass
        elif rule and rule.replaces():
            reply = rule.answer(uses)
        else:  # no fault, or a delay-only rule: the normal answer (which may change state)
            reply = self.answer(method, url, body)
        # Log before answering, so a client that asks for stats right after its answer sees it.
        self.record(method, path, url.query, body, reply[0] if reply else None, rule is not None, arrived)
        if reply:
            self.send_json(*reply)
        elif rule.hang and not st.stop.is_set():
            self.hang()
        else:
            self.drop()

    def record(self, method, path, query, body, status, faulted, arrived):
        headers = {}
        for name, value in self.headers.items():
            value = "<redacted>" if name.lower() in self.secret_headers else value
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        # requestline: the request's first line exactly as received (no decoding, no
        # dot-segment resolution), for tests of what a client really put on the wire.
        entry = {"method": method, "path": path, "query": query, "body": body.decode("utf-8", "replace"),
                 "headers": headers, "status": status, "faulted": faulted, "at": arrived,
                 "requestline": self.requestline, **self.log_extra()}
        if status is None:
            self.log_message('"%s" dropped or hung (fault)', self.requestline)
        with self.state.lock:
            self.state.log.append(entry)
            if len(self.state.log) > LOG_LIMIT:
                del self.state.log[0]
                self.state.log_dropped += 1

    # ---- the control API ------------------------------------------------------------------

    def control(self, method, path, body):
        st = self.state
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            return self.send_json(400, {"error": "Invalid JSON body"})
        name = path[len("/_control/"):].rstrip("/")
        key = f"{method} {name}"
        if key == "GET stats":
            with st.lock:
                return self.send_json(200, st.stats())
        if key == "GET log":
            with st.lock:
                return self.send_json(200, {"requests": list(st.log)})
        if key == "POST reset":
            st.reset()
            return self.send_json(200, {"ok": True})
        if key == "POST faults":
            try:
                rules = [self.rule_class(r) for r in (data if isinstance(data, list) else [data])]
            except (ValueError, TypeError, re.error) as err:
                return self.send_json(400, {"error": str(err)})
            with st.lock:
                st.faults.extend(rules)
        elif key == "DELETE faults":
            with st.lock:
                st.faults.clear()
        if key in ("GET faults", "POST faults", "DELETE faults"):
            with st.lock:
                return self.send_json(200, [r.describe() for r in st.faults])
        if key == "POST token":
            token = data.get("token") if isinstance(data, dict) else None
            if not isinstance(data, dict) or not isinstance(token, (str, type(None))):
                return self.send_json(400, {"error": 'expected {"token": "..." | null}'})
            with st.lock:
                st.token = token
        if key in ("GET token", "POST token"):
            return self.send_json(200, {"token_required": st.token is not None})
        try:
            if self.control_api(key, data) is not None:
                return
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return self.send_json(400, {"error": f"bad control request: {error!r}"})
        return self.send_json(404, {"error": f"no control endpoint {method} {path}"})


class Server(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections must not keep the process alive
    block_on_close = False

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a peer going away is not news


def make_server(handler, host="127.0.0.1", port=0, token=None, quiet=False):
    bound = type("BoundHandler", (handler,), {"state": handler.state_class(token), "quiet": quiet})
    return Server((host, port), bound)


def main(handler, description, argv=None, *, port=0, token_env=None, token=None, token_help=""):
    """Serve until SIGTERM/SIGINT. The token defaults to $token_env, else `token`."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=port, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", default=(os.environ.get(token_env) if token_env else None) or token,
                    help=token_help)
    ap.add_argument("--quiet", action="store_true", help="no request log on stderr")
    args = ap.parse_args(argv)
    server = make_server(handler, args.host, args.port, args.token, args.quiet)
    host, port = server.server_address[:2]

    def stop(_signum, _frame):
        server.RequestHandlerClass.state.stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()  # shutdown() waits for serve_forever

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on http://{host}:{port}", flush=True)
    if args.port_file:  # write then rename, so a waiting test never reads half a number
        tmp = f"{args.port_file}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


def run(handler, description, **options):
    """`python3 examples/<api>/server.py …`: main() with the command line, as the exit status."""
    sys.exit(main(handler, description, **options))
