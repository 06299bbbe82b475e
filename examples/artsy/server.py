#!/usr/bin/env python3
"""A loopback imitation of Artsy's v1 follow API (artists, genes, profiles), with fault injection.

Standard library only. The endpoints, encodings, answer shapes and 404 rules follow what
Artsy's iOS app (artsy/eigen) sends and expects; ENDPOINTS.md cites the sources and marks
what had to be guessed. The control API under /_control/ lets tests count requests,
seed state and queue faults. See README.md.
"""

import argparse
import hashlib
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
from datetime import datetime, timedelta, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

# kind -> (plural used by the list endpoint, label used in Gravity-style error texts)
KINDS = {"artist": ("artists", "Artist"), "gene": ("genes", "Gene"), "profile": ("profiles", "Profile")}
LOG_LIMIT = 10_000  # keep the last N log entries so a long benchmark cannot eat the memory
PHRASES = {s.value: s.phrase for s in HTTPStatus}
UNAUTHORIZED = {"error": "Unauthorized", "text": "The access token is invalid or has expired."}


def _oid(*parts):
    """A stable 24-hex id, shaped like the Mongo ids Gravity uses for `_id` and follow ids."""
    return hashlib.md5(":".join(parts).encode()).hexdigest()[:24]


def _artist(slug, name, nationality, birthday, deathday="", works=0, forsale=0):
    years = f"{birthday}-{deathday}" if deathday else f"born {birthday}"
    base = f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}"
    return {"_id": _oid("artist", slug), "id": slug, "name": name, "sortable_id": slug,
            "years": years, "birthday": birthday, "deathday": deathday, "nationality": nationality,
            "blurb": f"{name} (demo data).", "published_artworks_count": works,
            "forsale_artworks_count": forsale, "image_url": f"{base}/:version.jpg",
            "image_versions": ["square", "large"],
            "image_urls": {v: f"{base}/{v}.jpg" for v in ("square", "large")}}


def _gene(slug, name, artists=0, artworks=0):
    return {"_id": _oid("gene", slug), "id": slug, "name": name,
            "description": f"{name} (demo data).", "counts": {"artists": artists, "artworks": artworks},
            "follow_count": artists * 10, "image_versions": ["thumb", "square500"],
            "image_url": f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}/:version.jpg"}


def _profile(slug, name, owner_type):
    return {"_id": _oid("profile", slug), "id": slug, "owner_type": owner_type,
            "owner": {"id": slug, "name": name}, "follow_count": 1000,
            "default_icon_version": "square140",
            "icon": {"image_urls": {"square140": f"https://d32dm0rphc51dk.cloudfront.net/demo/{slug}/square140.png"}}}


def _synthetic(kind, slug):
    """Detail object for an id that /_control/follows introduced (test setup only)."""
    name = slug.replace("-", " ").title()
    return {"artist": lambda: _artist(slug, name, "", ""), "gene": lambda: _gene(slug, name),
            "profile": lambda: _profile(slug, name, "User")}[kind]()


SEED_CATALOG = {
    "artist": [_artist("banksy", "Banksy", "British", "1974", works=120, forsale=80),
               _artist("andy-warhol", "Andy Warhol", "American", "1928", "1987", 9000, 3000),
               _artist("kaws", "KAWS", "American", "1974", works=900, forsale=500),
               _artist("yayoi-kusama", "Yayoi Kusama", "Japanese", "1929", works=2000, forsale=900),
               _artist("jean-michel-basquiat", "Jean-Michel Basquiat", "American", "1960", "1988", 400, 60),
               _artist("keith-haring", "Keith Haring", "American", "1958", "1990", 1500, 700),
               _artist("cindy-sherman", "Cindy Sherman", "American", "1954", works=600, forsale=150),
               _artist("ai-weiwei", "Ai Weiwei", "Chinese", "1957", works=500, forsale=200)],
    "gene": [_gene("pop-art", "Pop Art", 800, 30000), _gene("street-art", "Street Art", 600, 20000),
             _gene("photography", "Photography", 9000, 200000), _gene("minimalism", "Minimalism", 700, 15000),
             _gene("abstract-art", "Abstract Art", 5000, 150000)],
    "profile": [_profile("gagosian", "Gagosian", "PartnerGallery"),
                _profile("david-zwirner", "David Zwirner", "PartnerGallery"),
                _profile("pace-gallery", "Pace Gallery", "PartnerGallery"),
                _profile("white-cube", "White Cube", "PartnerGallery"),
                _profile("the-armory-show", "The Armory Show", "Fair")],
}
SEED_FOLLOWS = {"artist": ["andy-warhol"], "gene": ["pop-art"], "profile": ["gagosian"]}


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
        if self.status is not None and not (isinstance(self.status, int) and 100 <= self.status <= 599):
            raise ValueError("status must be an integer 100..599")
        if not isinstance(self.delay_ms, int) or self.delay_ms < 0:
            raise ValueError("delay_ms must be an integer >= 0")
        if self.times is not None and not (isinstance(self.times, int) and self.times >= 1):
            raise ValueError("times must be an integer >= 1, or null for unlimited")
        if not isinstance(self.headers, dict) or not all(isinstance(v, str) for v in self.headers.values()):
            raise ValueError("headers must map names to strings")
        if self.status is None and not (self.delay_ms or self.drop or self.hang):
            raise ValueError("a rule needs status, delay_ms, drop or hang")
        if self.applied and self.status is None and not (self.drop or self.hang):
            raise ValueError("applied needs status, drop or hang: the answer that replaces the real one")

    def answer(self, uses):
        """(status, body, headers); with `sequence`, "{n}" in the body's and headers' strings is
        the how-many-th answer of this rule (1, 2, …): a cursor or Link that never repeats."""
        body = self.body if self.body is not None else {"error": PHRASES.get(self.status, "Error")}
        headers = self.headers
        if self.sequence:
            body = json.loads(json.dumps(body).replace("{n}", str(uses)))
            headers = {name: value.replace("{n}", str(uses)) for name, value in headers.items()}
        return self.status, body, headers

    def matches(self, method, path):
        return (self.method in (None, method)) and (self.path is None or self.path.search(path))

    def describe(self):
        return {**self.raw, "times": self.times}


class State:
    """Everything the server remembers. One lock: every operation on it is quick."""

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
            self.catalog = {k: {o["id"]: o for o in objs} for k, objs in SEED_CATALOG.items()}
            self.follows, self.follow_seq = {}, 0
            for kind in KINDS:
                self.set_follows(kind, SEED_FOLLOWS.get(kind, []))
            self.faults = []
            self.requests = self.connections = self.api_connections = self.faulted = 0
            self.calls, self.routes, self.log, self.log_dropped = Counter(), Counter(), [], 0

    def set_follows(self, kind, ids):
        """Replace a kind's followed set; `ids` is in listing order (newest first)."""
        now = datetime.now(timezone.utc).replace(microsecond=0)
        self.follows[kind] = {}
        for age, slug in reversed(list(enumerate(dict.fromkeys(ids)))):
            if slug not in self.catalog[kind]:
                self.catalog[kind][slug] = _synthetic(kind, slug)
            self.add_follow(kind, slug, now - timedelta(seconds=age))

    def add_follow(self, kind, slug, when=None):
        self.follow_seq += 1  # follow ids are new for every follow, yet the same from run to run
        when = when or datetime.now(timezone.utc).replace(microsecond=0)
        self.follows[kind][slug] = {"id": _oid("follow", kind, slug, str(self.follow_seq)),
                                    "created_at": when.isoformat()}

    def follow_object(self, kind, slug):
        """The follow as Gravity answers it: its own id, with the whole followed object inside."""
        rec = self.follows[kind][slug]
        return {"id": rec["id"], kind: self.catalog[kind][slug], "created_at": rec["created_at"]}

    def listing(self, kind):
        return list(reversed(self.follows[kind]))  # newest follow first

    def take_fault(self, method, path):
        with self.lock:
            for rule in self.faults:
                if rule.matches(method, path):
                    rule.uses += 1
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self.faults.remove(rule)
                    return rule, rule.uses
        return None, 0


def _template_regex(template):
    return re.compile("^" + re.escape(template).replace(re.escape("{id}"), "([^/]+)") + "$")


def build_routes():
    """(method, template, regex, handler name, kind), one row per endpoint of ENDPOINTS.md."""
    rows = []
    for kind, (plural, _) in KINDS.items():
        rows += [("POST", f"/api/v1/me/follow/{kind}", "follow", kind),
                 ("DELETE", f"/api/v1/me/follow/{kind}/{{id}}", "unfollow", kind),
                 ("GET", f"/api/v1/me/follow/{plural}", "follows", kind),
                 ("GET", f"/api/v1/{kind}/{{id}}", "detail", kind)]
    rows.append(("GET", "/api/v1/me/follow/profile/{id}", "follow_state", "profile"))
    return [(m, t, _template_regex(t), h, k) for m, t, h, k in rows]


ROUTES = build_routes()


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status, self.body = status, body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: libcurl reuses the connection
    disable_nagle_algorithm = True  # else headers and body leave in two segments: ~40 ms stalls
    server_version = "ArtsyDemo/1.0"
    state: State = None  # set by make_server
    quiet = False

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
            self.send_json(500, {"error": "Internal Server Error (demo server bug, see its stderr)"})

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
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))  # on every answer: keeps the connection alive
        for name, value in (headers or {}).items():
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

    def params(self, query, body):
        """Query, form and JSON body merged, as Grape (Gravity's framework) merges them."""
        merged = parse_qs(query, keep_blank_values=True)
        ctype = self.headers.get("Content-Type", "")
        if body and "json" in ctype:
            try:
                obj = json.loads(body)
            except ValueError:
                raise ApiError(400, {"error": "Invalid JSON body"})
            if isinstance(obj, dict):
                for key, value in obj.items():  # JSON scalars become the strings a form would carry
                    for v in value if isinstance(value, list) else [value]:
                        merged.setdefault(key, []).append(v if isinstance(v, str) else json.dumps(v))
        elif body:
            for key, values in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items():
                merged.setdefault(key, []).extend(values)
        return merged

    # ---- one request ----------------------------------------------------------------------

    def handle_one(self):
        arrived = time.monotonic()
        url = urlsplit(self.path)
        path, method, body = url.path, self.command, self.read_body()
        if path.startswith("/_control/"):
            return self.control(method, path, body)
        st = self.state
        route = next((r for r in ROUTES if r[0] == method and r[2].match(path)), None)
        with st.lock:
            st.requests += 1
            st.calls[f"{method} {path}"] += 1
            st.routes[f"{method} {route[1] if route else '<unmatched>'}"] += 1
            if self.api_generation != st.generation:
                self.api_generation = st.generation
                st.api_connections += 1
        rule, uses = st.take_fault(method, path)
        reply = None  # (status, body, headers); None means drop or hang
        if rule:
            with st.lock:
                st.faulted += 1
        if rule and rule.applied:
            self.answer(route, method, path, url.query, body)  # the change happens; its answer is lost
        if rule and rule.delay_ms and st.stop.wait(rule.delay_ms / 1000):
            pass  # the server is stopping: drop rather than answer late
        elif rule and (rule.drop or rule.hang):
            pass
        elif rule and rule.status is not None:
            reply = rule.answer(uses)
        else:  # no fault, or a delay-only rule: the normal answer (which may change state)
            reply = self.answer(route, method, path, url.query, body)
        # Log before answering, so a client that asks for stats right after its answer sees it.
        self.record(method, path, url.query, body, reply[0] if reply else None, rule is not None, arrived)
        if reply:
            self.send_json(*reply)
        elif rule.hang and not st.stop.is_set():
            self.hang()
        else:
            self.drop()

    def answer(self, route, method, path, query, body):
        st = self.state
        if st.token is not None and self.headers.get("X-Access-Token") != st.token:
            return 401, UNAUTHORIZED, None
        if route is None:
            return 404, {"error": "Not Found"}, None
        _, _, regex, name, kind = route
        slug = unquote(regex.match(path).group(1)) if regex.groups else None
        try:
            params = self.params(query, body)
            with st.lock:
                return getattr(self, "api_" + name)(kind, slug, params)
        except ApiError as err:
            return err.status, err.body, None

    def record(self, method, path, query, body, status, faulted, arrived):
        headers = {}
        for name, value in self.headers.items():
            value = "<redacted>" if name.lower() == "x-access-token" else value
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        # requestline: the request's first line exactly as received (no decoding, no
        # dot-segment resolution), for tests of what a client really put on the wire.
        entry = {"method": method, "path": path, "query": query, "body": body.decode("utf-8", "replace"),
                 "headers": headers, "status": status, "faulted": faulted, "at": arrived,
                 "requestline": self.requestline}
        if status is None:
            self.log_message('"%s" dropped or hung (fault)', self.requestline)
        with self.state.lock:
            self.state.log.append(entry)
            if len(self.state.log) > LOG_LIMIT:
                del self.state.log[0]
                self.state.log_dropped += 1

    # ---- the Artsy endpoints (called with the state lock held) ------------------------------

    def known(self, kind, slug, followed=False):
        """404 with Gravity's wording: unknown id, or (when `followed` is asked) not followed."""
        if slug not in self.state.catalog[kind]:
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Found"})
        if followed and slug not in self.state.follows[kind]:
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Followed"})

    def api_follow(self, kind, _slug, params):
        slug = (params.get(f"{kind}_id") or [""])[0]
        if not slug:
            raise ApiError(400, {"error": f"{kind}_id is missing"})
        self.known(kind, slug)
        created = slug not in self.state.follows[kind]
        if created:
            self.state.add_follow(kind, slug)
        return (201 if created else 200), self.state.follow_object(kind, slug), None

    def api_unfollow(self, kind, slug, _params):
        self.known(kind, slug, followed=True)
        obj = self.state.follow_object(kind, slug)
        del self.state.follows[kind][slug]
        return 200, obj, None

    def api_follow_state(self, kind, slug, _params):
        self.known(kind, slug, followed=True)
        return 200, self.state.follow_object(kind, slug), None

    def api_detail(self, kind, slug, _params):
        self.known(kind, slug)
        return 200, self.state.catalog[kind][slug], None

    def api_follows(self, kind, _slug, params):
        plural = KINDS[kind][0]
        ids = params.get(f"{plural}[]", []) + params.get(plural, [])
        slugs = self.state.listing(kind)
        if ids:
            wanted = set(ids)
            slugs = [s for s in slugs if s in wanted]
        try:
            page = int((params.get("page") or ["1"])[0])
            size = int((params.get("size") or ["0"])[0])
        except ValueError:
            raise ApiError(400, {"error": "page and size must be integers"})
        if page < 1 or size < 0:
            raise ApiError(400, {"error": "page must be >= 1 and size >= 0"})
        total = len(slugs)
        paged = not ids or "size" in params or "page" in params
        if paged:
            size = min(size or 10, 100)
            slugs = slugs[(page - 1) * size: page * size]
        elif not slugs:  # an id check none of whose ids is followed: 404, as eigen expects (ENDPOINTS.md)
            raise ApiError(404, {"error": f"{KINDS[kind][1]} Not Followed"})
        flag = (params.get("total_count") or [""])[0].lower()
        headers = {"X-Total-Count": str(total)} if flag in ("1", "true") else None
        return 200, [self.state.follow_object(kind, s) for s in slugs], headers

    # ---- the control API ----------------------------------------------------------------------

    def control(self, method, path, body):
        st = self.state
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            return self.send_json(400, {"error": "Invalid JSON body"})
        key = f"{method} {path.rstrip('/')}"
        if key == "GET /_control/stats":
            with st.lock:
                return self.send_json(200, {
                    "requests": st.requests, "connections": st.connections,
                    "open_connections": st.open_connections, "api_connections": st.api_connections,
                    "faulted": st.faulted, "calls": dict(st.calls), "routes": dict(st.routes),
                    "log": list(st.log), "log_dropped": st.log_dropped,
                    "token_required": st.token is not None})
        if key == "POST /_control/reset":
            st.reset()
            return self.send_json(200, {"ok": True})
        if key == "POST /_control/faults":
            try:
                rules = [Rule(r) for r in (data if isinstance(data, list) else [data])]
            except (ValueError, TypeError, re.error) as err:
                return self.send_json(400, {"error": str(err)})
            with st.lock:
                st.faults.extend(rules)
        elif key == "DELETE /_control/faults":
            with st.lock:
                st.faults.clear()
        if key.endswith(" /_control/faults") and method in ("GET", "POST", "DELETE"):
            with st.lock:
                return self.send_json(200, [r.describe() for r in st.faults])
        if key == "POST /_control/follows":
            if not isinstance(data, dict) or not set(data) <= set(KINDS) or not all(
                    isinstance(v, list) and all(isinstance(s, str) and s for s in v) for v in data.values()):
                return self.send_json(400, {"error": "expected {kind: [ids]} with kinds among " + ", ".join(KINDS)})
            with st.lock:
                for kind, ids in data.items():
                    st.set_follows(kind, ids)
        if key in ("GET /_control/follows", "POST /_control/follows"):
            with st.lock:
                return self.send_json(200, {kind: st.listing(kind) for kind in KINDS})
        if key == "POST /_control/token":
            token = data.get("token") if isinstance(data, dict) else None
            if not isinstance(data, dict) or not isinstance(token, (str, type(None))):
                return self.send_json(400, {"error": 'expected {"token": "..." | null}'})
            with st.lock:
                st.token = token
        if key in ("GET /_control/token", "POST /_control/token"):
            return self.send_json(200, {"token_required": st.token is not None})
        return self.send_json(404, {"error": f"no control endpoint {key}"})


class Server(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections must not keep the process alive
    block_on_close = False

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a peer going away is not news


def make_server(host="127.0.0.1", port=0, token=None, quiet=False):
    handler = type("BoundHandler", (Handler,), {"state": State(token), "quiet": quiet})
    return Server((host, port), handler)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Demo imitation of Artsy's follow API (see README.md).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", default=os.environ.get("ARTSY_DEMO_TOKEN") or None,
                    help="require X-Access-Token on /api requests (default: $ARTSY_DEMO_TOKEN)")
    ap.add_argument("--quiet", action="store_true", help="no request log on stderr")
    args = ap.parse_args(argv)
    server = make_server(args.host, args.port, args.token, args.quiet)
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


if __name__ == "__main__":
    sys.exit(main())
