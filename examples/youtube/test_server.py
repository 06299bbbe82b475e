"""Tests for the YouTube demo server. Run: .venv/bin/pytest -q examples/youtube/test_server.py

The server runs as a real subprocess and is reset before every test; requests go through
http.client.
"""

import http.client
import json
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402
API = "/youtube/v3/subscriptions"
GOOGLE_DEVS = "UC_x5XG1OV2P6uZZ5FSM9Ttw"
ANDROID = "UCVHFbqXqoYvEWM1Ddxl0QDg"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = start_server(SERVER, tmp_path_factory.mktemp("youtube"), "--token", "t0k")
    yield port
    stop_server(proc)


@pytest.fixture
def yt(server):
    client = Client(server)
    client.call("POST", "/_control/reset")
    return client


class Client:
    def __init__(self, port, token="t0k"):
        self.port, self.token = port, token

    def call(self, method, path, body=None, token=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        headers = {"Authorization": f"Bearer {self.token}"} if token else {}
        if body is not None:
            body, headers["Content-Type"] = json.dumps(body), "application/json"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, (json.loads(data) if data else None)

    def insert(self, channel):
        return self.call("POST", API + "?part=snippet",
                         {"snippet": {"resourceId": {"kind": "youtube#channel", "channelId": channel}}})

    def subscriptions(self):
        return self.call("GET", "/_control/subscriptions")[1]


def reason(body):
    return body["error"]["errors"][0]["reason"]


def test_insert_answers_the_subscription_and_delete_takes_its_id(yt):
    status, sub = yt.insert(GOOGLE_DEVS)
    assert status == 200 and sub["kind"] == "youtube#subscription"
    assert sub["snippet"]["resourceId"] == {"kind": "youtube#channel", "channelId": GOOGLE_DEVS}
    assert yt.subscriptions() == {GOOGLE_DEVS: sub["id"]}
    # The channel's id is not the subscription's.
    status, body = yt.call("DELETE", f"{API}?id={GOOGLE_DEVS}")
    assert status == 404 and reason(body) == "subscriptionNotFound"
    assert yt.call("DELETE", f"{API}?id={sub['id']}") == (204, None)
    assert yt.subscriptions() == {}


def test_the_documented_insert_errors(yt):
    yt.insert(GOOGLE_DEVS)
    status, body = yt.insert(GOOGLE_DEVS)
    assert status == 400 and reason(body) == "subscriptionDuplicate" and body["error"]["code"] == 400
    status, body = yt.insert("UCnope")
    assert status == 404 and reason(body) == "publisherNotFound"
    status, body = yt.insert("UCdemoSubscriber000000000")
    assert status == 400 and reason(body) == "subscriptionForbidden"
    status, body = yt.call("POST", API + "?part=snippet", {"snippet": {}})
    assert status == 400 and reason(body) == "publisherRequired"
    status, body = yt.call("GET", API + "?part=snippet&mine=true", token=False)
    assert status == 401 and reason(body) == "authError"


def test_list_filters_by_comma_separated_channels(yt):
    yt.insert(GOOGLE_DEVS)
    yt.insert(ANDROID)
    status, body = yt.call("GET", f"{API}?part=snippet&mine=true&forChannelId={ANDROID},UCother&maxResults=50")
    assert status == 200 and body["kind"] == "youtube#subscriptionListResponse"
    assert [i["snippet"]["resourceId"]["channelId"] for i in body["items"]] == [ANDROID]
    assert body["items"][0]["id"] == yt.subscriptions()[ANDROID]


def test_list_pages_with_next_page_tokens_to_the_end(yt):
    channels = [f"UCseed{n:03}" for n in range(12)]
    yt.call("POST", "/_control/subscriptions", {"channels": channels})
    seen, token, pages = [], None, 0
    while True:
        path = f"{API}?part=snippet&mine=true&maxResults=5" + (f"&pageToken={token}" if token else "")
        status, body = yt.call("GET", path)
        assert status == 200
        pages += 1
        seen += [i["snippet"]["resourceId"]["channelId"] for i in body["items"]]
        token = body.get("nextPageToken")
        if not token:
            break
    assert pages == 3 and seen == list(reversed(channels)) and body["pageInfo"]["totalResults"] == 12
    status, body = yt.call("GET", f"{API}?part=snippet&mine=true&pageToken=garbage!")
    assert status == 400 and reason(body) == "invalidPageToken"
    status, body = yt.call("GET", f"{API}?part=snippet&mine=true&maxResults=51")
    assert status == 400


def test_quota_exceeded_fault_has_the_documented_body(yt):
    yt.call("POST", "/_control/faults", {"method": "POST", "error": "quotaExceeded"})
    status, body = yt.insert(GOOGLE_DEVS)
    assert status == 403 and reason(body) == "quotaExceeded" and body["error"]["errors"][0]["domain"] == "youtube.quota"
    assert yt.subscriptions() == {}
    assert yt.insert(GOOGLE_DEVS)[0] == 200  # one use only


def test_a_dropped_answer_can_still_apply_the_change(yt):
    yt.call("POST", "/_control/faults", {"method": "POST", "drop": True, "applied": True})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        yt.insert(GOOGLE_DEVS)
    assert list(yt.subscriptions()) == [GOOGLE_DEVS]
    yt.call("POST", "/_control/faults", {"method": "GET", "status": 503})
    assert yt.call("GET", f"{API}?part=snippet&mine=true")[0] == 503


def test_bad_fault_rules_are_refused(yt):
    assert yt.call("POST", "/_control/faults", {"error": "nope"})[0] == 400
    assert yt.call("POST", "/_control/faults", {"method": "GET"})[0] == 400
