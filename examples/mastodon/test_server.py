"""The Mastodon demo server on its own: the documented answers netmodel's tests rely on."""

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parent / "server.py"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402
TOKEN = "demo-token"


@pytest.fixture
def api(tmp_path):
    proc, port = start_server(SERVER, tmp_path)
    url = f"http://127.0.0.1:{port}"

    def call(method, path, body=None, token=TOKEN):
        request = urllib.request.Request(url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read()), response.headers
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), error.headers

    yield call
    stop_server(proc)


def test_follow_of_a_locked_account_is_a_request_until_approved(api):
    status, rel, _ = api("POST", "/api/v1/accounts/7/follow")
    assert status == 200 and rel["following"] is False and rel["requested"] is True
    assert api("GET", "/_control/state")[1]["requested"] == ["7"]
    # Following again changes nothing.
    assert api("POST", "/api/v1/accounts/7/follow")[1]["requested"] is True
    api("POST", "/_control/approve", {})
    _, rels, _ = api("GET", "/api/v1/accounts/relationships?id[]=7")
    assert rels[0]["following"] is True and rels[0]["requested"] is False


def test_follow_unfollow_of_an_open_account(api):
    rel = api("POST", "/api/v1/accounts/5/follow")[1]
    assert rel["following"] is True and rel["requested"] is False
    assert "5" in api("GET", "/_control/state")[1]["following"]
    rel = api("POST", "/api/v1/accounts/5/unfollow")[1]
    assert rel["following"] is False
    assert "5" not in api("GET", "/_control/state")[1]["following"]


def test_an_unfollow_withdraws_a_request(api):
    api("POST", "/api/v1/accounts/13/follow")
    assert api("POST", "/api/v1/accounts/13/unfollow")[1]["requested"] is False
    assert api("GET", "/_control/state")[1]["requested"] == []


def test_relationships_answer_one_object_per_existing_id_in_their_own_order(api):
    _, rels, _ = api("GET", "/api/v1/accounts/relationships?id[]=5&id[]=2&id[]=99999&id[]=3")
    assert [r["id"] for r in rels] == ["2", "3", "5"]
    assert [r["following"] for r in rels] == [True, True, False]


def test_following_pages_by_link_until_the_end(api):
    api("POST", "/_control/follows", {"following": [str(n) for n in range(100, 190)]})
    seen, path = [], "/api/v1/accounts/1/following?limit=40"
    while path:
        status, page, headers = api("GET", path)
        assert status == 200
        seen += [a["id"] for a in page]
        link = headers.get("Link") or ""
        path = link.split(">")[0].split("127.0.0.1:")[1].split("/", 1)[1] if 'rel="next"' in link else None
        path = "/" + path if path else None
    assert len(seen) == 90 and seen[0] == "189" and seen[-1] == "100"


def test_unhappy_answers(api):
    assert api("POST", "/api/v1/accounts/5/follow", token=None)[:2] == (401, {"error": "The access token is invalid"})
    assert api("POST", "/api/v1/accounts/424242/follow")[0] == 404
    assert api("POST", "/api/v1/accounts/1/follow")[0] == 403
    api("POST", "/_control/ratelimit", {"remaining": 1, "resetSeconds": 60})
    assert api("GET", "/api/v1/accounts/relationships?id[]=2")[0] == 200
    status, body, headers = api("GET", "/api/v1/accounts/relationships?id[]=2")
    assert status == 429 and headers["X-RateLimit-Remaining"] == "0"
    assert headers["X-RateLimit-Reset"].endswith("Z") and "T" in headers["X-RateLimit-Reset"]
    api("POST", "/_control/ratelimit", {"remaining": None})
    api("POST", "/_control/faults", {"path": "/follow$", "status": 503, "times": 1})
    assert api("POST", "/api/v1/accounts/5/follow")[0] == 503
    assert api("POST", "/api/v1/accounts/5/follow")[0] == 200
