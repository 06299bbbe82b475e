#!/usr/bin/env python3
"""A loopback imitation of YouTube Data API v3 subscriptions (insert, delete, list), with faults.

Standard library only. Endpoints, parameters, answer shapes and errors follow the documentation
cited in README.md; what it does not say is marked there as a guess. The control API under
/_control/ lets tests read the server's own state and log, seed subscriptions and queue faults
(quotaExceeded in Google's documented error body, 5xx, dropped connections).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import signal
import socket
import sys
import threading
import traceback
from collections import Counter
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API = "/youtube/v3/subscriptions"
LOG_LIMIT = 10_000
SELF_CHANNEL = "UCdemoSubscriber000000000"  # the authorised user's own channel (guess: any id)
SEED_CHANNELS = {
    "UC_x5XG1OV2P6uZZ5FSM9Ttw": "Google for Developers",
    "UCVHFbqXqoYvEWM1Ddxl0QDg": "Android Developers",
    "UCnUYZLuoy1rq1aVMwx4aTzw": "Google Chrome Developers",
    "UCJS9pqu9BzkAMNTmzNMNhvg": "Google Cloud Tech",
}

# Google's error reasons as the YouTube docs list them: (HTTP status, domain, message).
# https://developers.google.com/youtube/v3/docs/errors and each method's "Errors" table.
ERRORS = {
    "subscriptionDuplicate": (400, "youtube.subscription", "The subscription that you are trying to create already exists."),
    "publisherRequired": (400, "youtube.subscription", "The subscription resource specified in the request must use the snippet.resourceId property to identify the channel that is being subscribed to."),
    "subscriptionForbidden": (403, "youtube.subscription", "The request is not properly authenticated or not supported for this channel."),
    "publisherNotFound": (404, "youtube.subscription", "The resource identified by the request's snippet.resourceId property cannot be found."),
    "subscriptionNotFound": (404, "youtube.subscription", "The subscription that you are trying to delete cannot be found. Check the value of the request's id parameter to ensure that it is correct."),
    "quotaExceeded": (403, "youtube.quota", "The request cannot be completed because you have exceeded your quota."),
    "authError": (401, "global", "Invalid Credentials"),
    # Guesses: the reasons Google's other APIs give for these (not in the subscriptions docs).
    "required": (400, "global", "Required parameter: part"),
    "invalidPageToken": (400, "youtube.parameter", "The request specifies an invalid page token."),
    "invalidValue": (400, "youtube.parameter", "Invalid value."),
    "backendError": (503, "global", "Backend Error"),
}


def error_body(reason, message=None, status=None):
    """Google's JSON error format (https://developers.google.com/youtube/v3/docs/errors)."""
    documented, domain, text = ERRORS[reason]
    status, text = status or documented, message or text
    return status, {"error": {"code": status, "message": text,
                              "errors": [{"message": text, "domain": domain, "reason": reason}]}}


class ApiError(Exception):
    def __init__(self, reason, message=None, status=None):
        super().__init__(reason)
        self.status, self.body = error_body(reason, message, status)


class Rule:
    """One queued fault: `error` (a reason above, in its documented body) or `status`/`body`,
    or `drop`; `applied`: the request does its work and only its answer is lost/replaced."""

    FIELDS = {"method", "path", "error", "status", "body", "drop", "times", "applied"}

    def __init__(self, raw):
        if not isinstance(raw, dict) or not set(raw) <= self.FIELDS:
            raise ValueError(f"a rule is an object with keys among {sorted(self.FIELDS)}")
        self.raw = dict(raw)
        self.method = (raw.get("method") or "").upper() or None
        self.path = re.compile(raw["path"]) if raw.get("path") else None
        self.times = raw.get("times", 1)
        self.drop, self.applied = bool(raw.get("drop")), bool(raw.get("applied"))
        if raw.get("error") is not None:
            if raw["error"] not in ERRORS:
                raise ValueError(f"error must be one of {sorted(ERRORS)}")
            self.status, self.body = error_body(raw["error"])
        else:
            self.status, self.body = raw.get("status"), raw.get("body")
        if self.status is not None and not (isinstance(self.status, int) and 100 <= self.status <= 599):
            raise ValueError("status must be an integer 100..599")
        if self.status is None and not self.drop:
            raise ValueError("a rule needs error, status or drop")
        if self.times is not None and not (isinstance(self.times, int) and self.times >= 1):
            raise ValueError("times must be an integer >= 1, or null for unlimited")

    def matches(self, method, path):
        return self.method in (None, method) and (self.path is None or self.path.search(path))


class State:
    def __init__(self, token):
        self.lock = threading.Lock()
        self.initial_token = token
        self.reset()

    def reset(self):
        with self.lock:
            self.token = self.initial_token
            self.channels = dict(SEED_CHANNELS)
            self.subscriptions = {}  # channel id -> {"id", "publishedAt"}, in insertion order
            self.seq = 0
            self.faults, self.log, self.calls = [], [], Counter()

    def subscribe(self, channel, when=None):
        self.seq += 1
        # Opaque like YouTube's subscription ids; new for every insert (guess at the shape).
        sid = base64.urlsafe_b64encode(hashlib.sha256(f"{channel}:{self.seq}".encode()).digest()[:24]).decode()
        when = when or datetime.now(timezone.utc)
        self.subscriptions[channel] = {"id": sid, "publishedAt": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        return sid

    def resource(self, channel):
        sub = self.subscriptions[channel]
        title = self.channels.get(channel, channel)
        return {"kind": "youtube#subscription", "etag": hashlib.md5(sub["id"].encode()).hexdigest(),
                "id": sub["id"],
                "snippet": {"publishedAt": sub["publishedAt"], "title": title, "description": f"{title} (demo)",
                            "resourceId": {"kind": "youtube#channel", "channelId": channel},
                            "channelId": SELF_CHANNEL,
                            "thumbnails": {"default": {"url": f"https://yt3.example.invalid/{channel}.jpg"}}}}

    def take_fault(self, method, path):
        with self.lock:
            for rule in self.faults:
                if rule.matches(method, path):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self.faults.remove(rule)
                    return rule
        return None


def page_token(offset):
    """Opaque to clients (a guess at the form; YouTube's look like "CAUQAA")."""
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def page_offset(token):
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        if text.startswith("o:") and text[2:].isdigit():
            return int(text[2:])
    except ValueError:
        pass
    raise ApiError("invalidPageToken")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "YouTubeDemo/1.0"
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
            self.send_json(500, {"error": {"code": 500, "message": "demo server bug, see its stderr"}})

    do_GET = do_POST = do_DELETE = do_PUT = dispatch

    def send_json(self, status, obj):
        data = b"" if status == 204 or obj is None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def handle_one(self):
        url = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if url.path.startswith("/_control/"):
            return self.control(self.command, url.path, body)
        st = self.state
        with st.lock:
            st.calls[f"{self.command} {url.path}"] += 1
        rule = st.take_fault(self.command, url.path)
        reply = None
        if rule is None or rule.applied:
            reply = self.answer(self.command, url.path, url.query, body)
        if rule is not None:
            reply = None if rule.drop else (rule.status, rule.body)
        entry = {"method": self.command, "path": url.path, "query": url.query,
                 "body": body.decode("utf-8", "replace"), "status": reply[0] if reply else None,
                 "faulted": rule is not None}
        with st.lock:
            st.log.append(entry)
            del st.log[:-LOG_LIMIT]
        if reply:
            self.send_json(*reply)
        else:
            self.drop()

    def answer(self, method, path, query, body):
        st = self.state
        if st.token is not None and self.headers.get("Authorization") != f"Bearer {st.token}":
            return error_body("authError")
        params = parse_qs(query, keep_blank_values=True)
        try:
            if path != API:
                return 404, {"error": {"code": 404, "message": "Not Found"}}
            with st.lock:
                if method == "POST":
                    return self.insert(params, body)
                if method == "DELETE":
                    return self.delete(params)
                if method == "GET":
                    return self.list(params)
            return 405, {"error": {"code": 405, "message": "Method Not Allowed"}}
        except ApiError as err:
            return err.status, err.body

    # ---- the three methods (state lock held) ---------------------------------------------

    def insert(self, params, body):
        if not params.get("part"):
            raise ApiError("required")
        try:
            resource = json.loads(body or b"{}")
        except ValueError:
            raise ApiError("invalidValue", "Invalid JSON payload received.")
        channel = ((resource.get("snippet") or {}).get("resourceId") or {}).get("channelId") \
            if isinstance(resource, dict) else None
        if not isinstance(channel, str) or not channel:
            raise ApiError("publisherRequired")
        if channel == SELF_CHANNEL:
            # insert's Errors table lists this case as badRequest (400), the reason's others as 403.
            raise ApiError("subscriptionForbidden", "Subscribing to your own channel is not supported.", 400)
        if channel not in self.state.channels:
            raise ApiError("publisherNotFound")
        if channel in self.state.subscriptions:
            raise ApiError("subscriptionDuplicate")
        self.state.subscribe(channel)
        return 200, self.state.resource(channel)

    def delete(self, params):
        sid = (params.get("id") or [""])[0]
        channel = next((c for c, s in self.state.subscriptions.items() if s["id"] == sid), None)
        if channel is None:
            raise ApiError("subscriptionNotFound")
        del self.state.subscriptions[channel]
        return 204, None

    def list(self, params):
        if not params.get("part"):
            raise ApiError("required")
        if (params.get("mine") or [""])[0] != "true":
            raise ApiError("invalidValue", "This demo lists only mine=true.")  # guess: the other filters are not emulated
        raw = (params.get("maxResults") or ["5"])[0]
        if not raw.isdigit() or int(raw) > 50:
            raise ApiError("invalidValue", "maxResults must be 0 to 50.")
        size = int(raw)
        channels = list(reversed(self.state.subscriptions))  # newest first (guess: order=relevance is opaque)
        wanted = [c for v in params.get("forChannelId", []) for c in v.split(",") if c]
        if wanted:
            channels = [c for c in channels if c in set(wanted)]
        offset = page_offset(params["pageToken"][0]) if params.get("pageToken") else 0
        page = channels[offset:offset + size]
        answer = {"kind": "youtube#subscriptionListResponse", "etag": f"demo-{self.state.seq}",
                  "pageInfo": {"totalResults": len(channels), "resultsPerPage": size},
                  "items": [self.state.resource(c) for c in page]}
        if offset + size < len(channels):
            answer["nextPageToken"] = page_token(offset + size)
        if offset > 0:
            answer["prevPageToken"] = page_token(max(0, offset - size))
        return 200, answer

    # ---- control API --------------------------------------------------------------------

    def control(self, method, path, body):
        st = self.state
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            return self.send_json(400, {"error": "Invalid JSON body"})
        key = f"{method} {path.rstrip('/')}"
        if key == "GET /_control/stats":
            with st.lock:
                return self.send_json(200, {"calls": dict(st.calls), "log": list(st.log)})
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
            return self.send_json(200, {"queued": len(st.faults)})
        if key == "DELETE /_control/faults":
            with st.lock:
                st.faults.clear()
            return self.send_json(200, {"queued": 0})
        if key == "POST /_control/subscriptions":
            # Seeds: {"channels": [ids, oldest first]}; unknown ids become channels of their own.
            channels = data.get("channels") if isinstance(data, dict) else None
            if not isinstance(channels, list) or not all(isinstance(c, str) and c for c in channels):
                return self.send_json(400, {"error": 'expected {"channels": ["UC…", …]}'})
            with st.lock:
                st.subscriptions = {}
                start = datetime.now(timezone.utc) - timedelta(seconds=len(channels))
                for age, channel in enumerate(dict.fromkeys(channels)):
                    st.channels.setdefault(channel, f"Channel {channel}")
                    st.subscribe(channel, start + timedelta(seconds=age))
        if key in ("GET /_control/subscriptions", "POST /_control/subscriptions"):
            with st.lock:
                return self.send_json(200, {c: s["id"] for c, s in st.subscriptions.items()})
        if key == "POST /_control/channels":
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                return self.send_json(400, {"error": 'expected {"UC…": "title"}'})
            with st.lock:
                st.channels.update(data)
                return self.send_json(200, st.channels)
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
    ap = argparse.ArgumentParser(description="Demo imitation of YouTube Data API v3 subscriptions (see README.md).")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", default=os.environ.get("YOUTUBE_DEMO_TOKEN") or None,
                    help="require Authorization: Bearer TOKEN (default: $YOUTUBE_DEMO_TOKEN)")
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
