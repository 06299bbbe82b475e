"""Tests for the GitHub demo server. Run: .venv/bin/pytest -q examples/github/test_server.py

The server runs as a real subprocess; each test starts its own.
"""

import http.client
import json
import sys
import time
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402


@pytest.fixture
def server(tmp_path):
    proc, port = start_server(SERVER, tmp_path, "--token", "t0k")
    yield Client(port)
    stop_server(proc)


class Client:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, token="t0k"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(data) if data else None

    def control(self, what, body=None, method=None):
        status, _, obj = self.request(method or ("POST" if body is not None else "GET"), f"/_control/{what}", body)
        assert status == 200, obj
        return obj


def test_follow_check_unfollow_round_trip(server):
    assert server.request("GET", "/user/following/octocat")[0] == 404
    assert server.request("PUT", "/user/following/octocat")[0] == 204
    assert server.request("GET", "/user/following/octocat")[0] == 204
    assert server.control("state")["following"] == ["octocat"]
    assert server.request("DELETE", "/user/following/octocat")[0] == 204
    assert server.request("GET", "/user/following/octocat")[0] == 404
    assert server.request("PUT", "/user/following/nobody-here")[0] == 404


def test_star_takes_two_segments_and_an_encoded_slash_is_not_found(server):
    assert server.request("PUT", "/user/starred/octocat/hello-world")[0] == 204
    assert server.request("GET", "/user/starred/octocat/hello-world")[0] == 204
    assert server.request("GET", "/user/starred/octocat%2Fhello-world")[0] == 404
    assert server.control("state")["starred"] == ["octocat/hello-world"]
    assert server.request("DELETE", "/user/starred/octocat/hello-world")[0] == 204
    assert server.control("state")["starred"] == []


def test_bad_or_missing_credentials_are_401(server):
    status, _, body = server.request("GET", "/user/following/octocat", token="wrong")
    assert status == 401 and body["message"] == "Bad credentials"
    assert server.request("GET", "/user/following/octocat", token=None)[2]["message"] == "Requires authentication"


def test_primary_rate_limit_is_403_with_remaining_zero_until_the_reset(server):
    reset = server.control("primary-limit", {"reset_in": 2})["reset"]
    status, headers, body = server.request("PUT", "/user/following/octocat")
    assert status == 403 and headers["x-ratelimit-remaining"] == "0" and headers["x-ratelimit-reset"] == str(reset)
    assert "rate limit exceeded" in body["message"]
    while time.time() < reset:
        time.sleep(0.05)
    status, headers, _ = server.request("PUT", "/user/following/octocat")
    assert status == 204 and headers["x-ratelimit-remaining"] != "0"


def test_secondary_rate_limit_is_403_with_retry_after(server):
    server.control("secondary-limit", {"retry_after": 30})
    status, headers, body = server.request("GET", "/user/starred")
    assert status == 403 and 1 <= int(headers["retry-after"]) <= 30 and "secondary" in body["message"]
    assert headers["x-ratelimit-remaining"] != "0"


def test_lists_are_paged_by_link_headers(server):
    server.control("state", {"starred": ["octocat/hello-world", "torvalds/linux", "curl/curl"]})
    status, headers, page1 = server.request("GET", "/user/starred?per_page=2")
    assert status == 200 and [r["full_name"] for r in page1] == ["curl/curl", "torvalds/linux"]
    assert 'rel="next"' in headers["link"] and "page=2" in headers["link"]
    status, headers, page2 = server.request("GET", "/user/starred?per_page=2&page=2")
    assert [r["full_name"] for r in page2] == ["octocat/hello-world"] and 'rel="next"' not in headers["link"]


def test_faults_answer_as_queued_then_stop(server):
    server.control("faults", [{"method": "PUT", "path": "^/user/following/", "status": 500, "times": 1}])
    assert server.request("PUT", "/user/following/octocat")[0] == 500
    assert server.request("PUT", "/user/following/octocat")[0] == 204
    log = server.control("log")["requests"]
    assert [entry["status"] for entry in log] == [500, 204]
