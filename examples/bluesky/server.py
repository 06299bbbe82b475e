#!/usr/bin/env python3
"""A loopback imitation of Bluesky's follow API (atproto XRPC), with fault injection.

Standard library only. A follow is a record of the user's repository in the collection
`app.bsky.graph.follow`, made by com.atproto.repo.createRecord (which answers its at-uri,
https://docs.bsky.app/docs/api/com-atproto-repo-create-record) and deleted by
com.atproto.repo.deleteRecord, which names it by `repo`, `collection` and `rkey`, the
at-uri's last segment (https://docs.bsky.app/docs/api/com-atproto-repo-delete-record).
app.bsky.actor.getProfiles says a profile is followed by the follow record's at-uri at
`viewer.following`, absent when not (https://docs.bsky.app/docs/api/app-bsky-actor-get-profiles);
app.bsky.graph.getFollows lists the follows with a cursor
(https://docs.bsky.app/docs/api/app-bsky-graph-get-follows). Errors are
`{"error": NAME, "message": …}` (400 InvalidRequest / ExpiredToken / InvalidToken, 401
AuthenticationRequired); a rate limit is 429 with `ratelimit-*` headers
(https://docs.bsky.app/docs/advanced-guides/rate-limits). README.md marks the guesses.
The control API lets tests seed follows made "elsewhere" (by another client, with
rkeys this client never saw), expire the token and limit the rate.
"""

import json
import re
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/, run from anywhere
import demoserver  # noqa: E402

ME = "did:plc:me000000000000000000000"
DEFAULT_TOKEN = "demo-token"
FOLLOW = "app.bsky.graph.follow"
MAX_ACTORS = 25  # getProfiles: "actors" maxLength 25
RATE_LIMIT = 3000  # a guess: the documented PDS limit is per 5 minutes per IP


def error(name, message):
    return {"error": name, "message": message}


def actor(n):
    return {"did": f"did:plc:user{n:022d}", "handle": f"user{n}.bsky.social", "displayName": f"User {n}"}


SEED_ACTORS = [actor(n) for n in range(1, 60)]


class Rule(demoserver.Rule):
    def default_body(self):
        return error("InternalServerError", "fault")


class State(demoserver.State):
    def seed(self):
        self.actors = {a["did"]: dict(a) for a in SEED_ACTORS}
        self.records = {}  # rkey -> subject did, in creation order
        self.seq = 0
        self.expired = False
        self.rate = {"remaining": None, "reset_seconds": 300}

    def new_rkey(self):
        # A TID: 13 characters of base32-sortable; a counter in that alphabet is enough here.
        self.seq += 1
        alphabet, n, text = "234567abcdefghijklmnopqrstuvwxyz", self.seq + 2**60, ""
        while n:
            n, digit = divmod(n, 32)
            text = alphabet[digit] + text
        return text[-13:]

    def uri(self, rkey):
        return f"at://{ME}/{FOLLOW}/{rkey}"

    def follow_of(self, did):
        return next((rkey for rkey, subject in self.records.items() if subject == did), None)

    def profile(self, did):
        viewer = {"muted": False, "blockedBy": False}
        rkey = self.follow_of(did)
        if rkey is not None:
            viewer["following"] = self.uri(rkey)
        return {**self.actors[did], "viewer": viewer}


class Handler(demoserver.Handler):
    server_version = "BlueskyDemo/1.0"
    rule_class = Rule
    state_class = State

    def answer(self, method, url, body):
        state = self.state
        with state.lock:
            headers, limited = self.rate_limit(state)
            if limited:
                return 429, error("RateLimitExceeded", "Rate Limit Exceeded"), headers
            auth = self.headers.get("Authorization")
            if auth is None:
                return 401, error("AuthenticationRequired", "Authentication Required"), headers
            if auth != f"Bearer {state.token}":
                return 400, error("InvalidToken", "Token could not be verified"), headers
            if state.expired:
                return 400, error("ExpiredToken", "Token has expired"), headers
            status, answer = self.api(state, method, url.path, parse_qs(url.query), body)
        return status, answer, headers

    def rate_limit(self, state):
        """ratelimit-limit/-remaining/-reset (epoch seconds)/-policy on every answer."""
        reset = int(time.time()) + state.rate["reset_seconds"]
        remaining = state.rate["remaining"]
        limited = remaining is not None and remaining <= 0
        if remaining is not None and not limited:
            state.rate["remaining"] = remaining - 1
        left = RATE_LIMIT if remaining is None else max(remaining - 1, 0)
        return [("ratelimit-limit", str(RATE_LIMIT)), ("ratelimit-remaining", str(left)),
                ("ratelimit-reset", str(reset)), ("ratelimit-policy", f"{RATE_LIMIT};w=300")], limited

    def api(self, state, method, path, query, raw):
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return 400, error("InvalidRequest", "Request body is not JSON")
        if path == "/xrpc/com.atproto.repo.createRecord" and method == "POST":
            if not isinstance(body, dict) or body.get("repo") != ME or body.get("collection") != FOLLOW:
                return 400, error("InvalidRequest", "repo must be the user's DID and collection app.bsky.graph.follow")
            subject = (body.get("record") or {}).get("subject")
            if subject not in state.actors:
                return 400, error("InvalidRequest", "Record/subject must be a valid did")
            # Bluesky keeps one record per follow made: a second follow makes a second record
            # (the app checks first). Here too, so an unfollow must name the right one.
            rkey = state.new_rkey()
            state.records[rkey] = subject
            return 200, {"uri": state.uri(rkey), "cid": f"bafyrei{rkey}",
                         "commit": {"cid": f"bafyreic{rkey}", "rev": rkey}, "validationStatus": "valid"}
        if path == "/xrpc/com.atproto.repo.deleteRecord" and method == "POST":
            if not isinstance(body, dict) or body.get("repo") != ME or body.get("collection") != FOLLOW:
                return 400, error("InvalidRequest", "repo must be the user's DID and collection app.bsky.graph.follow")
            rkey = body.get("rkey")
            if not isinstance(rkey, str) or not re.fullmatch(r"[A-Za-z0-9._:~-]{1,512}", rkey):
                return 400, error("InvalidRequest", "Error: rkey must be a valid record key")
            # Deleting a record that is not there succeeds and changes nothing (a guess from the PDS).
            state.records.pop(rkey, None)
            return 200, {"commit": {"cid": "bafyreicommit", "rev": state.new_rkey()}}
        if path == "/xrpc/app.bsky.actor.getProfiles" and method == "GET":
            actors = query.get("actors", [])
            if not actors or len(actors) > MAX_ACTORS:
                return 400, error("InvalidRequest", f"Error: actors must have between 1 and {MAX_ACTORS} items")
            # One profile per actor found, unknown ones left out.
            return 200, {"profiles": [state.profile(a) for a in dict.fromkeys(actors) if a in state.actors]}
        if path == "/xrpc/app.bsky.graph.getFollows" and method == "GET":
            who = (query.get("actor") or [""])[0]
            if who != ME and who not in state.actors:
                return 400, error("InvalidRequest", "Profile not found")
            limit = min(max(int((query.get("limit") or ["50"])[0]), 1), 100)
            start = int((query.get("cursor") or ["0"])[0])
            records = list(state.records.items())[::-1] if who == ME else []  # newest first
            page = records[start:start + limit]
            answer = {"subject": state.actors.get(who, {"did": ME, "handle": "me.bsky.social"}),
                      "follows": [state.profile(did) for _, did in page]}
            if start + limit < len(records):
                answer["cursor"] = str(start + limit)
            return 200, answer
        return 400, error("MethodNotImplemented", "Method Not Implemented")

    def control_api(self, key, body):
        state, body = self.state, body or {}
        with state.lock:
            if key == "GET state":
                answer = {"records": [{"rkey": k, "subject": s} for k, s in state.records.items()]}
            elif key == "POST records":
                # Follows made elsewhere: {"records": [{"rkey": …, "subject": did}]}, rkeys this client never saw.
                for record in body.get("records", []):
                    state.records[record["rkey"]] = record["subject"]
                answer = {"ok": True}
            elif key == "POST expire":
                state.expired = bool(body.get("expired", True))
                answer = {"ok": True}
            elif key == "POST ratelimit":
                state.rate = {"remaining": body.get("remaining"), "reset_seconds": body.get("resetSeconds", 300)}
                answer = {"ok": True}
            else:
                return None
        return self.send_json(200, answer)


if __name__ == "__main__":
    demoserver.run(Handler, __doc__.splitlines()[0], port=8095, token=DEFAULT_TOKEN,
                   token_help="the Bearer access token (accessJwt) the API accepts")
