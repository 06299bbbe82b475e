#!/usr/bin/env python3
"""A loopback imitation of GitHub's REST API for following users and starring repositories,
with its rate limits and fault injection.

Standard library only. Endpoints, statuses, headers and answer shapes follow GitHub's REST
documentation; README.md cites the page for each and marks what had to be guessed. The
control API under /_control/ lets tests read the server's state and request log, seed
state, switch rate limits on and queue faults.
"""

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

PHRASES = {s.value: s.phrase for s in HTTPStatus}
DOCS = "https://docs.github.com/rest"
LIMIT = 5000  # the primary limit of a user's token, per hour
USERS = ["octocat", "torvalds", "gvanrossum", "mojombo", "defunkt", "pjhyett", "wycats", "ezmobius"]
REPOS = ["octocat/hello-world", "octocat/Spoon-Knife", "torvalds/linux", "python/cpython", "swiftlang/swift",
         "curl/curl", "akheron/jansson", "github/docs"]


def simple_user(login, number):
    """GitHub's `simple-user` object (the fields a list item carries)."""
    return {"login": login, "id": number, "node_id": f"MDQ6VXNlcj{number}", "type": "User", "site_admin": False,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
            "url": f"https://api.github.com/users/{login}", "html_url": f"https://github.com/{login}"}


def repository(full_name, number):
    owner, name = full_name.split("/")
    return {"id": number, "node_id": f"MDEwOlJlcG9zaXRvcnk{number}", "name": name, "full_name": full_name,
            "owner": simple_user(owner, 1000 + number), "private": False,
            "html_url": f"https://github.com/{full_name}", "description": f"{name} (demo data)",
            "url": f"https://api.github.com/repos/{full_name}", "stargazers_count": 100 * number}


class Rule:
    """One queued fault: answer `status` (with `headers` and `body`) to matching requests, `times` times."""

    FIELDS = {"method", "path", "status", "headers", "body", "times"}

    def __init__(self, raw):
        if not isinstance(raw, dict) or not set(raw) <= self.FIELDS or not isinstance(raw.get("status"), int):
            raise ValueError(f"a rule is an object with an integer status and keys among {sorted(self.FIELDS)}")
        self.raw, self.method = raw, (raw.get("method") or "").upper() or None
        self.path = re.compile(raw["path"]) if raw.get("path") else None
        self.times = raw.get("times", 1)
        self.headers = raw.get("headers") or {}
        if not isinstance(self.headers, dict) or not all(isinstance(v, str) for v in self.headers.values()):
            raise ValueError("headers must map names to strings")

    def matches(self, method, path):
        return self.method in (None, method) and (self.path is None or self.path.search(path))


class State:
    """Everything the server remembers, under one lock."""

    def __init__(self, token):
        self.lock = threading.Lock()
        self.initial_token = token
        self.reset()

    def reset(self):
        with self.lock:
            self.token = self.initial_token
            self.users = {login: simple_user(login, n + 1) for n, login in enumerate(USERS)}
            self.repos = {name: repository(name, n + 1) for n, name in enumerate(REPOS)}
            self.following = []  # logins, in the order followed
            self.starred = []  # full names, in the order starred
            self.faults = []
            self.log = []  # {"t", "method", "path", "status"} per /user request
            self.primary_until = 0  # epoch seconds: the primary limit is spent until then
            self.secondary_until = 0.0  # epoch seconds: a secondary limit until then
            self.used = 0

    def snapshot(self):
        return {"following": list(self.following), "starred": list(self.starred)}


class ApiError(Exception):
    def __init__(self, status, message, headers=None):
        super().__init__(status)
        self.status, self.message, self.headers = status, message, headers or {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "GitHubDemo/1.0"
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
            self.send_json(500, {"message": "Internal Server Error (demo server bug, see its stderr)"})

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = dispatch

    def send_json(self, status, obj, headers=None):
        data = b"" if status in (204, 304) or obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        return status

    def handle_one(self):
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if parts.path.startswith("/_control/"):
            return self.control(parts.path[len("/_control/"):], body)
        arrived = time.time()
        try:
            status, obj, headers = self.api(parts)
        except ApiError as error:
            status, obj, headers = error.status, {"message": error.message, "documentation_url": DOCS}, error.headers
        with self.state.lock:
            self.state.log.append({"t": arrived, "method": self.command, "path": parts.path, "status": status})
        self.send_json(status, obj, headers)

    # ---- the API ---------------------------------------------------------------------------

    def rate_headers(self, remaining=None):
        """x-ratelimit-* on every answer (rate-limits-for-the-rest-api#checking-the-status-of-your-rate-limit)."""
        st = self.state
        reset = st.primary_until or int(time.time()) + 3600
        left = 0 if remaining == 0 else max(0, LIMIT - st.used)
        return {"x-ratelimit-limit": str(LIMIT), "x-ratelimit-remaining": str(left),
                "x-ratelimit-used": str(LIMIT - left), "x-ratelimit-reset": str(reset),
                "x-ratelimit-resource": "core"}

    def api(self, parts):
        st, method, path = self.state, self.command, parts.path
        with st.lock:
            for rule in st.faults:
                if rule.matches(method, path):
                    rule.times = None if rule.times is None else rule.times - 1
                    if rule.times == 0:
                        st.faults.remove(rule)
                    body = rule.raw.get("body", {"message": PHRASES.get(rule.raw["status"], "Error"),
                                                 "documentation_url": DOCS})
                    return rule.raw["status"], body, dict(rule.headers)
            token = st.token
        auth = self.headers.get("Authorization", "")
        if token is not None:
            if not auth:
                raise ApiError(401, "Requires authentication")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() not in ("bearer", "token") or given != token:
                raise ApiError(401, "Bad credentials")
        now = time.time()
        with st.lock:
            if now < st.primary_until:
                raise ApiError(403, "API rate limit exceeded for user ID 1. (demo)", self.rate_headers(remaining=0))
            if now < st.secondary_until:
                wait = str(max(1, int(st.secondary_until - now + 0.999)))
                raise ApiError(403, "You have exceeded a secondary rate limit. Please wait a few minutes before "
                                    "you try again. (demo)", {"retry-after": wait, **self.rate_headers()})
            st.used += 1
            status, body, headers = self.route(method, path, parse_qs(parts.query))
            return status, body, {**headers, **self.rate_headers()}

    def route(self, method, path, query):
        """(status, body, headers) of one endpoint; called under the lock."""
        st = self.state
        # Segments are decoded one by one: an encoded "/" (%2F) stays inside its segment,
        # so "octocat%2Fhello-world" is one segment and no route has it (GitHub: 404).
        segments = [unquote(s) for s in path.split("/")[1:]]
        if segments[:2] == ["user", "following"] and len(segments) == 3:
            return self.toggle(method, segments[2], st.users, st.following)
        if segments[:2] == ["user", "starred"] and len(segments) == 4:
            return self.toggle(method, f"{segments[2]}/{segments[3]}", st.repos, st.starred)
        if method == "GET" and path == "/user/following":
            return self.page(query, [st.users[login] for login in st.following], path)
        if method == "GET" and path == "/user/starred":
            # sort=created, direction=desc by default: the latest star first.
            return self.page(query, [st.repos[name] for name in reversed(st.starred)], path)
        raise ApiError(404, "Not Found")

    @staticmethod
    def toggle(method, name, known, chosen):
        """PUT adds, DELETE removes (both 204, also when nothing changes), GET answers 204 or 404."""
        if name not in known:
            raise ApiError(404, "Not Found")
        if method == "GET":
            if name not in chosen:
                raise ApiError(404, "Not Found")
        elif method == "PUT":
            if name not in chosen:
                chosen.append(name)
        elif method == "DELETE":
            if name in chosen:
                chosen.remove(name)
        else:
            raise ApiError(404, "Not Found")
        return 204, None, {}

    def page(self, query, items, path):
        """One page and its Link header (using-pagination-in-the-rest-api)."""
        try:
            per_page = min(100, max(1, int(query.get("per_page", ["30"])[0])))
            number = max(1, int(query.get("page", ["1"])[0]))
        except ValueError:
            raise ApiError(422, "Validation Failed")
        last = max(1, -(-len(items) // per_page))
        base = f"http://{self.headers.get('Host')}{path}"

        def url(n):
            return f"<{base}?{urlencode({'per_page': per_page, 'page': n})}>"

        links = []
        if number > 1:
            links += [f'{url(number - 1)}; rel="prev"']
        if number < last:
            links += [f'{url(number + 1)}; rel="next"', f'{url(last)}; rel="last"']
        if number > 1:
            links += [f'{url(1)}; rel="first"']
        return 200, items[(number - 1) * per_page:number * per_page], {"Link": ", ".join(links)} if links else {}

    # ---- control ---------------------------------------------------------------------------

    def control(self, what, body):
        st = self.state
        try:
            arg = json.loads(body) if body else None
            if what == "reset":
                st.reset()
                return self.send_json(200, {"ok": True})
            if what == "state" and self.command == "GET":
                with st.lock:
                    return self.send_json(200, st.snapshot())
            if what == "state":  # {"following": [...], "starred": [...]}: seed
                with st.lock:
                    for login in arg.get("following", []):
                        st.users.setdefault(login, simple_user(login, 100 + len(st.users)))
                    for name in arg.get("starred", []):
                        st.repos.setdefault(name, repository(name, 100 + len(st.repos)))
                    st.following = list(arg.get("following", st.following))
                    st.starred = list(arg.get("starred", st.starred))
                    return self.send_json(200, st.snapshot())
            if what == "log":
                with st.lock:
                    return self.send_json(200, {"requests": list(st.log)})
            if what == "faults":
                rules = [Rule(raw) for raw in (arg if isinstance(arg, list) else [arg])]
                with st.lock:
                    st.faults.extend(rules)
                return self.send_json(200, {"queued": len(rules)})
            if what == "primary-limit":  # {"reset_in": seconds}: the limit is spent until then
                with st.lock:
                    st.primary_until = int(time.time()) + int(arg["reset_in"])
                    return self.send_json(200, {"reset": st.primary_until})
            if what == "secondary-limit":  # {"retry_after": seconds}
                with st.lock:
                    st.secondary_until = time.time() + float(arg["retry_after"])
                    return self.send_json(200, {"until": st.secondary_until})
            if what == "token":  # {"token": "..."} or {"token": null}
                with st.lock:
                    st.token = arg.get("token")
                return self.send_json(200, {"ok": True})
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            return self.send_json(400, {"error": f"bad control request: {error}"})
        return self.send_json(404, {"error": f"no control endpoint {what}"})


def make_server(host, port, token, quiet):
    handler = type("BoundHandler", (Handler,), {"state": State(token), "quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv=None):
    ap = argparse.ArgumentParser(description="Demo imitation of GitHub's follow and star API (see README.md).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8788, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", default=os.environ.get("GITHUB_DEMO_TOKEN") or None,
                    help="require Authorization: Bearer TOKEN (default: $GITHUB_DEMO_TOKEN; none: no auth)")
    ap.add_argument("--quiet", action="store_true", help="no request log on stderr")
    args = ap.parse_args(argv)
    server = make_server(args.host, args.port, args.token, args.quiet)
    host, port = server.server_address[:2]

    def stop(_signum, _frame):
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
