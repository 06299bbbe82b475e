#!/usr/bin/env python3
"""A loopback imitation of Artsy's GraphQL API (metaphysics v2) for following artists and genes.

Standard library only, and no GraphQL parser: a request is recognised by the root field its
query text names (followArtist, followGene, artist, gene, artistsConnection, genesConnection),
its variables are read by fixed names, and the answer has a fixed selection whatever the query
selects. README.md cites metaphysics's schema for each field and marks what is guessed. The
control API under /_control/ counts calls, seeds follows and queues faults.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PATHS = ("/v2", "/graphql")
# kind -> (the mutation's id field in its input, the label of Gravity-style error texts)
KINDS = {"artist": ("artistID", "Artist"), "gene": ("geneID", "Gene")}
SEED = {
    "artist": [("banksy", "Banksy"), ("andy-warhol", "Andy Warhol"), ("kaws", "KAWS"),
               ("yayoi-kusama", "Yayoi Kusama"), ("jean-michel-basquiat", "Jean-Michel Basquiat"),
               ("keith-haring", "Keith Haring"), ("cindy-sherman", "Cindy Sherman"), ("ai-weiwei", "Ai Weiwei")],
    "gene": [("pop-art", "Pop Art"), ("street-art", "Street Art"), ("minimalism", "Minimalism")],
}
SEED_FOLLOWS = {"artist": ["andy-warhol"], "gene": ["pop-art"]}
SIGNED_OUT = "You need to be signed in to perform this action"  # metaphysics follow_artist.ts
LOG_LIMIT = 10_000


def internal_id(*parts):
    """A stable 24-hex id, shaped like the Mongo ids metaphysics answers as `internalID`."""
    return hashlib.md5(":".join(parts).encode()).hexdigest()[:24]


def cursor_of(offset):
    """graphql-relay's array-connection cursor: base64("arrayconnection:N") (a guess for metaphysics)."""
    return base64.b64encode(f"arrayconnection:{offset}".encode()).decode()


def offset_of(cursor):
    try:
        return int(base64.b64decode(cursor).decode().split(":", 1)[1]) + 1
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def gql_error(message, path=None, status=None):
    """One entry of `errors` (GraphQL spec §7.1.4), with metaphysics's extensions.httpStatusCodes."""
    error = {"message": message}
    if path:
        error["path"] = path
    if status:
        error["extensions"] = {"httpStatusCodes": [status]}
    return error


class Rule:
    """One queued fault, checked when queued so a typo in a test fails at POST /_control/faults.

    match: a regex searched in "operationName query" (none: every GraphQL request);
    status + body: that answer instead of the real one (body default: a GraphQL error);
    errors: a 200 {"errors": errors, "data": null} instead of the real one;
    partial: the real answer (its change made) with one error added: a partial answer;
    delay_ms; times (default 1, null: for ever).
    """

    FIELDS = {"match", "status", "body", "errors", "partial", "delay_ms", "times"}

    def __init__(self, raw):
        if not isinstance(raw, dict) or not set(raw) <= self.FIELDS:
            raise ValueError(f"a rule is an object with keys among {sorted(self.FIELDS)}")
        self.raw = dict(raw)
        self.match = re.compile(raw["match"]) if raw.get("match") is not None else None
        self.status, self.body = raw.get("status"), raw.get("body")
        self.errors, self.partial = raw.get("errors"), raw.get("partial")
        self.delay_ms, self.times = raw.get("delay_ms", 0), raw.get("times", 1)
        if self.status is not None and not (isinstance(self.status, int) and 100 <= self.status <= 599):
            raise ValueError("status must be an integer 100..599")
        if self.errors is not None and not (isinstance(self.errors, list) and self.errors):
            raise ValueError("errors must be a non-empty list")
        if self.partial is not None and not isinstance(self.partial, str):
            raise ValueError("partial must be the message of the added error")
        if not isinstance(self.delay_ms, int) or self.delay_ms < 0:
            raise ValueError("delay_ms must be an integer >= 0")
        if self.times is not None and not (isinstance(self.times, int) and self.times >= 1):
            raise ValueError("times must be an integer >= 1, or null for unlimited")
        if sum(x is not None for x in (self.status, self.errors, self.partial)) != 1 and not self.delay_ms:
            raise ValueError("a rule needs one of status, errors or partial (or only delay_ms)")

    def describe(self):
        return {**self.raw, "times": self.times}


class State:
    def __init__(self, token):
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.initial_token = token
        self.reset()

    def reset(self):
        with self.lock:
            self.token = self.initial_token
            self.catalog = {k: {slug: name for slug, name in items} for k, items in SEED.items()}
            self.follows = {}  # kind -> {slug: follow internalID}, oldest first
            self.follow_seq = 0
            for kind in KINDS:
                self.set_follows(kind, SEED_FOLLOWS.get(kind, []))
            self.faults, self.stuck_cursor = [], False
            self.requests, self.operations, self.log, self.log_dropped = 0, Counter(), [], 0

    def set_follows(self, kind, slugs):
        """Replace a kind's followed set; `slugs` in listing order (newest first)."""
        self.follows[kind] = {}
        for slug in reversed(list(dict.fromkeys(slugs))):
            self.catalog[kind].setdefault(slug, slug.replace("-", " ").title())
            self.add_follow(kind, slug)

    def add_follow(self, kind, slug):
        self.follow_seq += 1
        self.follows[kind][slug] = internal_id("follow", kind, slug, str(self.follow_seq))

    def listing(self, kind):
        return list(reversed(self.follows[kind]))  # newest follow first

    def slug(self, kind, key):
        """The slug of an artist or gene named by slug or internalID ("The slug or ID of the Artist")."""
        if key in self.catalog[kind]:
            return key
        return next((s for s in self.catalog[kind] if internal_id(kind, s) == key), None)

    def node(self, kind, slug):
        return {"internalID": internal_id(kind, slug), "slug": slug, "name": self.catalog[kind][slug],
                "isFollowed": slug in self.follows[kind]}

    def take_fault(self, text):
        with self.lock:
            for rule in self.faults:
                if rule.match is None or rule.match.search(text):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self.faults.remove(rule)
                    return rule
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "MetaphysicsDemo/1.0"
    state: State = None
    quiet = False

    def log_message(self, fmt, *args):
        if not self.quiet:
            sys.stderr.write(f"{self.address_string()} {fmt % args}\n")

    def dispatch(self):
        try:
            self.handle_one()
        except OSError:
            raise
        except Exception:
            traceback.print_exc()
            self.close_connection = True
            self.send_json(500, {"errors": [gql_error("Internal Server Error (demo server bug, see its stderr)")]})

    do_GET = do_POST = do_DELETE = do_PUT = dispatch

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_one(self):
        url = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if url.path.startswith("/_control/"):
            return self.control(self.command, url.path.rstrip("/"), body)
        status, answer, operation = self.graphql(url.path, body)
        st = self.state
        with st.lock:
            st.requests += 1
            st.operations[operation] += 1
            st.log.append({"path": url.path, "operation": operation, "body": body.decode("utf-8", "replace"),
                           "status": status, "at": time.monotonic()})
            if len(st.log) > LOG_LIMIT:
                del st.log[0]
                st.log_dropped += 1
        self.send_json(status, answer)

    # ---- GraphQL over HTTP ----------------------------------------------------------------

    def graphql(self, path, body):
        """(status, answer, operation counted in stats)."""
        if self.command != "POST" or path not in PATHS:
            return 404, {"errors": [gql_error(f"no GraphQL endpoint at {self.command} {path}")]}, "<unmatched>"
        try:
            request = json.loads(body)
            query, variables = request["query"], request.get("variables") or {}
            name = request.get("operationName") or ""
            assert isinstance(query, str) and isinstance(variables, dict) and isinstance(name, str)
        except (ValueError, KeyError, TypeError, AssertionError):
            return 400, {"errors": [gql_error("Must provide query string.")]}, "<invalid>"
        operation = self.operation(query)
        rule = self.state.take_fault(f"{name} {query}")
        if rule and rule.delay_ms and self.state.stop.wait(rule.delay_ms / 1000):
            return 503, {"errors": [gql_error("stopping")]}, operation
        if rule and rule.status is not None:
            default = {"errors": [gql_error(f"demo fault {rule.status}")], "data": None}
            return rule.status, rule.body if rule.body is not None else default, operation
        if rule and rule.errors is not None:
            return 200, {"errors": rule.errors, "data": None}, operation
        with self.state.lock:
            answer = self.execute(operation, variables)
        if rule and rule.partial is not None:
            answer.setdefault("errors", []).append(gql_error(rule.partial, ["followArtist", "popularArtists"]))
        return 200, answer, operation

    @staticmethod
    def operation(query):
        """The root field the query asks for, by name (the demo has no parser)."""
        for field in ("followArtist", "followGene", "artistsConnection", "genesConnection"):
            if re.search(rf"\b{field}\s*\(", query):
                return field
        for field in ("artist", "gene"):
            if re.search(rf"\b{field}\s*\(\s*id\s*:", query):
                return field
        return "<unknown>"

    def execute(self, operation, variables):
        st = self.state
        signed_in = st.token is None or self.headers.get("X-Access-Token") == st.token
        if operation in ("followArtist", "followGene"):
            kind = operation[len("follow"):].lower()
            if not signed_in:
                return {"data": {operation: None}, "errors": [gql_error(SIGNED_OUT, [operation])]}
            data = variables.get("input")
            key = data.get(KINDS[kind][0]) if isinstance(data, dict) else None
            slug = st.slug(kind, key) if isinstance(key, str) else None
            if slug is None:
                return {"data": {operation: None},
                        "errors": [gql_error(f"{KINDS[kind][1]} Not Found", [operation], 404)]}
            if data.get("unfollow"):
                st.follows[kind].pop(slug, None)
            elif slug not in st.follows[kind]:
                st.add_follow(kind, slug)
            return {"data": {operation: {kind: st.node(kind, slug), "clientMutationId": None}}}
        if operation in ("artist", "gene"):
            key = variables.get("id")
            slug = st.slug(operation, key) if isinstance(key, str) else None
            if slug is None:
                return {"data": {operation: None},
                        "errors": [gql_error(f"{KINDS[operation][1]} Not Found", [operation], 404)]}
            node = st.node(operation, slug)
            if not signed_in:
                node["isFollowed"] = None  # a guess: the viewer's flag needs a viewer
            return {"data": {operation: node}}
        if operation in ("artistsConnection", "genesConnection"):
            kind = operation[:-len("sConnection")]
            if not signed_in:  # a guess: `me` resolves to null without a viewer, with no error
                return {"data": {"me": None}}
            connection = self.connection_page(kind, variables)
            if connection is None:  # a guess: metaphysics's wording for a bad cursor is not documented
                return {"data": {"me": None}, "errors": [gql_error(f"not a cursor: {variables.get('after')!r}")]}
            return {"data": {"me": {"followsAndSaves": {operation: connection}}}}
        return {"data": None, "errors": [gql_error("the demo server does not know this query (see README.md)")]}

    def connection_page(self, kind, variables):
        """A Relay connection of the follows, newest first (Cursor Connections spec)."""
        st = self.state
        first = variables.get("first", 10)
        first = first if isinstance(first, int) and 1 <= first <= 100 else 10
        after = variables.get("after")
        start = 0 if st.stuck_cursor or after is None else offset_of(after)
        if start is None:
            return None
        slugs = st.listing(kind)
        page = slugs[start:start + first]
        edges = [{"cursor": cursor_of(start + n),
                  "node": {"internalID": st.follows[kind][slug], kind: st.node(kind, slug)}}
                 for n, slug in enumerate(page)]
        return {"edges": edges, "totalCount": len(slugs),
                "pageInfo": {"hasNextPage": start + len(page) < len(slugs), "hasPreviousPage": start > 0,
                             "startCursor": edges[0]["cursor"] if edges else None,
                             "endCursor": edges[-1]["cursor"] if edges else None}}

    # ---- the control API ----------------------------------------------------------------

    def control(self, method, path, body):
        st = self.state
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            return self.send_json(400, {"error": "Invalid JSON body"})
        key = f"{method} {path}"
        with st.lock:
            if key == "GET /_control/stats":
                return self.send_json(200, {"requests": st.requests, "operations": dict(st.operations),
                                            "log": list(st.log), "log_dropped": st.log_dropped})
            if key == "POST /_control/faults":
                try:
                    st.faults.extend(Rule(r) for r in (data if isinstance(data, list) else [data]))
                except (ValueError, TypeError, re.error) as err:
                    return self.send_json(400, {"error": str(err)})
            if key == "DELETE /_control/faults":
                st.faults.clear()
            if key in ("GET /_control/faults", "POST /_control/faults", "DELETE /_control/faults"):
                return self.send_json(200, [r.describe() for r in st.faults])
            if key == "POST /_control/follows":
                if not isinstance(data, dict) or not set(data) <= set(KINDS) or not all(
                        isinstance(v, list) and all(isinstance(s, str) and s for s in v) for v in data.values()):
                    return self.send_json(400, {"error": "expected {kind: [slugs]} with kinds among artist, gene"})
                for kind, slugs in data.items():
                    st.set_follows(kind, slugs)
            if key in ("GET /_control/follows", "POST /_control/follows"):
                return self.send_json(200, {kind: st.listing(kind) for kind in KINDS})
            if key == "POST /_control/stuck_cursor":
                if not isinstance(data, dict) or not isinstance(data.get("on"), bool):
                    return self.send_json(400, {"error": 'expected {"on": true | false}'})
                st.stuck_cursor = data["on"]
                return self.send_json(200, {"on": st.stuck_cursor})
            if key == "POST /_control/token":
                if not isinstance(data, dict) or not isinstance(data.get("token"), (str, type(None))):
                    return self.send_json(400, {"error": 'expected {"token": "..." | null}'})
                st.token = data["token"]
                return self.send_json(200, {"token_required": st.token is not None})
        if key == "POST /_control/reset":
            st.reset()
            return self.send_json(200, {"ok": True})
        return self.send_json(404, {"error": f"no control endpoint {key}"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def make_server(host="127.0.0.1", port=0, token=None, quiet=False):
    handler = type("BoundHandler", (Handler,), {"state": State(token), "quiet": quiet})
    return Server((host, port), handler)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Demo imitation of Artsy's GraphQL follow API (see README.md).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", default=os.environ.get("ARTSY_DEMO_TOKEN") or None,
                    help="require X-Access-Token for the viewer's data (default: $ARTSY_DEMO_TOKEN)")
    ap.add_argument("--quiet", action="store_true", help="no request log on stderr")
    args = ap.parse_args(argv)
    server = make_server(args.host, args.port, args.token, args.quiet)
    host, port = server.server_address[:2]

    def stop(_signum, _frame):
        server.RequestHandlerClass.state.stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on http://{host}:{port}", flush=True)
    if args.port_file:
        tmp = f"{args.port_file}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
