#!/usr/bin/env python3
"""A loopback imitation of Mastodon's follow API (accounts), with fault injection.

Standard library only. Endpoints, answers and errors follow the Mastodon documentation
(https://docs.joinmastodon.org/methods/accounts/, .../entities/Relationship/,
.../api/rate-limits/); README.md cites each one and marks what is a guess. The control
API under /_control/ lets tests read and seed the server's state, approve or reject
pending follow requests (as the locked account's owner would), set the token, limit the
rate and queue faults.
"""

import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

ME = "1"  # the user's own account id (what verify_credentials would answer)
DEFAULT_TOKEN = "demo-token"
RATE_LIMIT = 300  # calls per 5 minutes per account (the rate-limits page)
INVALID_TOKEN = {"error": "The access token is invalid"}
NOT_FOUND = {"error": "Record not found"}
NOT_ALLOWED = {"error": "This action is not allowed"}


def _account(account_id, username, locked=False):
    return {"id": account_id, "username": username, "acct": username, "display_name": username.title(),
            "locked": locked, "bot": False, "created_at": "2024-01-01T00:00:00.000Z",
            "url": f"https://mastodon.example/@{username}", "followers_count": 10, "following_count": 5,
            "statuses_count": 100, "note": "", "avatar": "", "header": "", "fields": [], "emojis": []}


# Ids are strings of digits, as Mastodon's are. Accounts 7 and 13 are locked (they
# approve their followers); 100..199 exist so that a following list can span pages.
SEED_ACCOUNTS = [_account(ME, "me")] + [
    _account(str(n), f"user{n}", locked=n in (7, 13)) for n in list(range(2, 30)) + list(range(100, 200))
]
SEED_FOLLOWING = ["2", "3"]


class Rule(demoserver.Rule):
    def default_body(self):
        return {"error": "fault"}


class State(demoserver.State):
    def seed(self):
        self.accounts = {a["id"]: dict(a) for a in SEED_ACCOUNTS}
        self.following = {}  # account id -> follow record id (grows: newest is largest)
        self.requested = set()
        self.follow_seq = 0
        for account_id in SEED_FOLLOWING:
            self.add_follow(account_id)
        self.rate = {"remaining": None, "reset_seconds": 300}

    def add_follow(self, account_id):
        self.follow_seq += 1
        self.following[account_id] = self.follow_seq
        self.requested.discard(account_id)

    def relationship(self, account_id):
        """The Relationship entity (https://docs.joinmastodon.org/entities/Relationship/)."""
        following = account_id in self.following
        return {"id": account_id, "following": following, "showing_reblogs": following, "notifying": False,
                "languages": None, "followed_by": False, "blocking": False, "blocked_by": False,
                "muting": False, "muting_notifications": False, "requested": account_id in self.requested,
                "requested_by": False, "domain_blocking": False, "endorsed": False, "note": ""}


class Handler(demoserver.Handler):
    server_version = "MastodonDemo/1.0"
    rule_class = Rule
    state_class = State

    def route_of(self, method, path, body):
        return f"{method} " + re.sub(r"/accounts/\d+/", "/accounts/:id/", path)

    def answer(self, method, url, body):
        state = self.state
        with state.lock:
            rate_headers, limited = self.rate_limit(state)
            if limited:
                return 429, {"error": "Too many requests"}, rate_headers
            if self.headers.get("Authorization") != f"Bearer {state.token}":
                return 401, INVALID_TOKEN, rate_headers
            status, body, headers = self.api(state, method, url.path, parse_qs(url.query))
        return status, body, rate_headers + headers

    def rate_limit(self, state):
        """X-RateLimit-* on every answer; 429 once `remaining` (set by /_control/ratelimit) is spent."""
        reset = datetime.now(timezone.utc) + timedelta(seconds=state.rate["reset_seconds"])
        remaining = state.rate["remaining"]
        limited = remaining is not None and remaining <= 0
        if remaining is not None and not limited:
            state.rate["remaining"] = remaining - 1
        left = RATE_LIMIT if remaining is None else max(remaining - 1, 0)
        headers = [("X-RateLimit-Limit", str(RATE_LIMIT)), ("X-RateLimit-Remaining", str(left)),
                   ("X-RateLimit-Reset", reset.isoformat(timespec="milliseconds").replace("+00:00", "Z"))]
        return headers, limited

    def api(self, state, method, path, query):
        match = re.fullmatch(r"/api/v1/accounts/(\d+)/(follow|unfollow|following)", path)
        if match:
            account_id, action = match.groups()
            if account_id not in state.accounts:
                return 404, NOT_FOUND, []
            if action == "following" and method == "GET":
                return self.following_page(state, account_id, query)
            if method != "POST" or action == "following":
                return 404, NOT_FOUND, []
            if action == "follow":
                if account_id == ME:
                    return 403, NOT_ALLOWED, []
                # A locked account's follow becomes a request until its owner approves it;
                # following again changes nothing (the same Relationship).
                if account_id not in state.following:
                    if state.accounts[account_id]["locked"]:
                        state.requested.add(account_id)
                    else:
                        state.add_follow(account_id)
            else:
                state.following.pop(account_id, None)
                state.requested.discard(account_id)  # an unfollow withdraws a request too
            return 200, state.relationship(account_id), []
        if path == "/api/v1/accounts/relationships" and method == "GET":
            asked = dict.fromkeys(query.get("id[]", []) + query.get("id", []))
            # One object per existing id asked; the order is the server's (by id), not the
            # order asked, and unknown ids are left out (a guess from the source).
            found = sorted((i for i in asked if i in state.accounts), key=int)
            return 200, [state.relationship(i) for i in found], []
        return 404, {"error": "Not Found"}, []

    def following_page(self, state, account_id, query):
        """Newest follow first, `limit` (default 40, at most 80) a page; `max_id` pages back.
        Only the user's own follows are known here: any other account follows nobody."""
        limit = min(max(int((query.get("limit") or ["40"])[0]), 1), 80)
        max_id = int((query.get("max_id") or ["0"])[0]) or None
        records = sorted(state.following.items(), key=lambda item: -item[1]) if account_id == ME else []
        records = [r for r in records if max_id is None or r[1] < max_id]
        page = records[:limit]
        headers = []
        if len(records) > limit:
            host = self.headers.get("Host")
            base = f"http://{host}/api/v1/accounts/{account_id}/following"
            headers.append(("Link", f'<{base}?limit={limit}&max_id={page[-1][1]}>; rel="next", '
                                    f'<{base}?limit={limit}&since_id={page[0][1]}>; rel="prev"'))
        return 200, [state.accounts[i] for i, _ in page], headers

    def control_api(self, key, body):
        state, body = self.state, body or {}
        method, what = key.split(" ", 1)
        with state.lock:
            if key == "GET state":
                answer = {"following": sorted(state.following, key=lambda i: -state.following[i]),
                          "requested": sorted(state.requested, key=int)}
            elif key == "POST follows":
                state.following, state.requested = {}, set()
                for account_id in body.get("following", []):
                    state.add_follow(account_id)
                state.requested = set(body.get("requested", []))
                answer = {"ok": True}
            elif what in ("approve", "reject") and method == "POST":
                ids = body.get("ids") or sorted(state.requested, key=int)
                for account_id in ids:
                    if account_id in state.requested and what == "approve":
                        state.add_follow(account_id)
                    state.requested.discard(account_id)
                answer = {"ok": True, what + "d": ids}
            elif key == "POST ratelimit":
                state.rate = {"remaining": body.get("remaining"), "reset_seconds": body.get("resetSeconds", 300)}
                answer = {"ok": True}
            else:
                return None
        return self.send_json(200, answer)


if __name__ == "__main__":
    demoserver.run(Handler, __doc__.splitlines()[0], port=8090, token=DEFAULT_TOKEN,
                   token_help="the Bearer token the API accepts")
