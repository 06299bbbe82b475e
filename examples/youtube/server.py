#!/usr/bin/env python3
"""A loopback imitation of YouTube Data API v3 subscriptions (insert, delete, list), with faults.

Standard library only. Endpoints, parameters, answer shapes and errors follow the documentation
cited in README.md; what it does not say is marked there as a guess. The control API under
/_control/ lets tests read the server's own state and log, seed subscriptions and queue faults
(quotaExceeded in Google's documented error body, 5xx, dropped connections).
"""

import base64
import hashlib
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

API = "/youtube/v3/subscriptions"
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


class Rule(demoserver.Rule):
    """demoserver's faults, and `error`: a reason above, in its documented body."""

    FIELDS = demoserver.Rule.FIELDS | {"error"}

    def validate(self):
        if self.raw.get("error") is not None:
            if self.raw["error"] not in ERRORS:
                raise ValueError(f"error must be one of {sorted(ERRORS)}")
            self.status, self.body = error_body(self.raw["error"])
        if self.status is None and not (self.delay_ms or self.drop or self.hang):
            raise ValueError("a rule needs error, status or drop")
        super().validate()

    def default_body(self):
        return None


class State(demoserver.State):
    def seed(self):
        self.channels = dict(SEED_CHANNELS)
        self.subscriptions = {}  # channel id -> {"id", "publishedAt"}, in insertion order
        self.seq = 0

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


class Handler(demoserver.Handler):
    server_version = "YouTubeDemo/1.0"
    content_type = "application/json; charset=UTF-8"
    rule_class = Rule
    state_class = State

    def bug_body(self):
        return {"error": {"code": 500, "message": "demo server bug, see its stderr"}}

    def answer(self, method, url, body):
        return *self.api(method, url.path, url.query, body), None

    def api(self, method, path, query, body):
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

    def control_api(self, key, data):
        st = self.state
        if key == "POST subscriptions":
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
        if key in ("GET subscriptions", "POST subscriptions"):
            with st.lock:
                return self.send_json(200, {c: s["id"] for c, s in st.subscriptions.items()})
        if key == "POST channels":
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                return self.send_json(400, {"error": 'expected {"UC…": "title"}'})
            with st.lock:
                st.channels.update(data)
                return self.send_json(200, st.channels)
        return None


if __name__ == "__main__":
    demoserver.run(Handler, "Demo imitation of YouTube Data API v3 subscriptions (see README.md).",
                   token_env="YOUTUBE_DEMO_TOKEN",
                   token_help="require Authorization: Bearer TOKEN (default: $YOUTUBE_DEMO_TOKEN)")
