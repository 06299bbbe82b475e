"""The Bluesky demo server on its own: the documented answers netmodel's tests rely on."""

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parent / "server.py"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402
TOKEN = "demo-token"
ME = "did:plc:me000000000000000000000"
A, B = "did:plc:user0000000000000000000001", "did:plc:user0000000000000000000002"
FOLLOW = "app.bsky.graph.follow"


@pytest.fixture
def api(tmp_path):
    proc, port = start_server(SERVER, tmp_path)
    url = f"http://127.0.0.1:{port}"

    def call(method, path, body=None, token=TOKEN):
        request = urllib.request.Request(url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read()), response.headers
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), error.headers

    yield call
    stop_server(proc)


def create(api, subject):
    return api("POST", "/xrpc/com.atproto.repo.createRecord",
               {"repo": ME, "collection": FOLLOW, "record": {"$type": FOLLOW, "subject": subject, "createdAt": "x"}})


def test_a_follow_is_a_record_named_by_the_last_segment_of_its_uri(api):
    status, answer, _ = create(api, A)
    assert status == 200 and answer["uri"].startswith(f"at://{ME}/{FOLLOW}/")
    rkey = answer["uri"].rsplit("/", 1)[1]
    assert api("GET", "/_control/state")[1]["records"] == [{"rkey": rkey, "subject": A}]
    status, _, _ = api("POST", "/xrpc/com.atproto.repo.deleteRecord", {"repo": ME, "collection": FOLLOW, "rkey": rkey})
    assert status == 200 and api("GET", "/_control/state")[1]["records"] == []


def test_get_profiles_says_followed_by_the_uri_being_there(api):
    api("POST", "/_control/records", {"records": [{"rkey": "3kelsewhere22", "subject": A}]})
    _, answer, _ = api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}&actors={B}&actors=did:plc:nobody")
    profiles = {p["did"]: p["viewer"] for p in answer["profiles"]}
    assert profiles[A]["following"] == f"at://{ME}/{FOLLOW}/3kelsewhere22"
    assert "following" not in profiles[B] and len(profiles) == 2


def test_get_follows_pages_by_cursor(api):
    for n in range(1, 8):
        create(api, f"did:plc:user{n:022d}")
    seen, cursor = [], ""
    while cursor is not None:
        _, page, _ = api("GET", f"/xrpc/app.bsky.graph.getFollows?actor={ME}&limit=3" + (f"&cursor={cursor}" if cursor else ""))
        seen += [f["did"] for f in page["follows"]]
        cursor = page.get("cursor")
    assert len(seen) == 7 and seen[0].endswith("07")


def test_unhappy_answers(api):
    assert api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}", token=None)[:2] == (
        401, {"error": "AuthenticationRequired", "message": "Authentication Required"})
    assert api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}", token="wrong")[1]["error"] == "InvalidToken"
    assert api("GET", "/xrpc/app.bsky.actor.getProfiles")[1]["error"] == "InvalidRequest"
    status, body, _ = api("POST", "/xrpc/com.atproto.repo.deleteRecord", {"repo": ME, "collection": FOLLOW, "rkey": ""})
    assert status == 400 and body["error"] == "InvalidRequest"
    api("POST", "/_control/expire", {})
    assert api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}")[:2] == (
        400, {"error": "ExpiredToken", "message": "Token has expired"})
    api("POST", "/_control/expire", {"expired": False})
    api("POST", "/_control/ratelimit", {"remaining": 1, "resetSeconds": 60})
    assert api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}")[0] == 200
    status, body, headers = api("GET", f"/xrpc/app.bsky.actor.getProfiles?actors={A}")
    assert status == 429 and body["error"] == "RateLimitExceeded" and headers["ratelimit-remaining"] == "0"
    assert int(headers["ratelimit-reset"]) > time.time()
