"""Tests for the Artsy demo server. Run: .venv/bin/pytest -q examples/artsy/test_server.py

The server runs as a real subprocess (as netmodel's tests will run it) and is reset before
every test. Requests go through http.client so keep-alive can be checked.
"""

import http.client
import json
import socket
import sys
import time
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402


class Client:
    """One keep-alive connection; answers are (status, headers, decoded JSON or None)."""

    def __init__(self, port, token=None, timeout=5):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.token = token

    def request(self, method, path, body=None, headers=None, form=False):
        headers = dict(headers or {})
        if self.token:
            headers["X-Access-Token"] = self.token
        if isinstance(body, (dict, list)) and not form:
            body, headers["Content-Type"] = json.dumps(body), "application/json"
        elif isinstance(body, dict):
            body = "&".join(f"{k}={v}" for k, v in body.items())
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        assert resp.getheader("Content-Length") == str(len(data))
        return resp.status, resp.headers, (json.loads(data) if data else None)

    def close(self):
        self.conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = start_server(SERVER, tmp_path_factory.mktemp("artsy"))
    yield port
    assert stop_server(proc) == 0


@pytest.fixture
def ctl(server):
    """Control connection; the server is reset before each test."""
    c = Client(server)
    assert c.request("POST", "/_control/reset")[0] == 200
    yield c
    c.close()


@pytest.fixture
def api(server, ctl):
    c = Client(server)
    yield c
    c.close()


def stats(ctl):
    return ctl.request("GET", "/_control/stats")[2]


def followed(api, kind, plural, ids):
    """The followed subset of `ids`; [] when the check answers 404 (none of them is followed)."""
    query = "&".join(f"{plural}%5B%5D={i}" for i in ids)
    status, _, body = api.request("GET", f"/api/v1/me/follow/{plural}?{query}")
    if status == 404:
        assert body == {"error": f"{kind.title()} Not Followed"}, body
        return []
    assert status == 200
    return [f[kind]["id"] for f in body]


# ---- the Artsy endpoints --------------------------------------------------------------------

def test_prints_listening_line(tmp_path):
    proc, port = start_server(SERVER, tmp_path)
    assert stop_server(proc) == 0
    assert proc.stdout.read().splitlines()[0] == f"listening on http://127.0.0.1:{port}"


@pytest.mark.parametrize("kind,plural,label", [("artist", "artists", "Artist"), ("gene", "genes", "Gene")])
def test_follow_unfollow_and_batch_state(api, kind, plural, label):
    slug = "banksy" if kind == "artist" else "street-art"
    other = "kaws" if kind == "artist" else "minimalism"
    status, _, body = api.request("POST", f"/api/v1/me/follow/{kind}", {f"{kind}_id": slug}, form=True)
    assert status == 201 and body[kind]["id"] == slug and body[kind]["name"] and len(body["id"]) == 24
    # Following again is harmless and answers the same follow.
    status, _, again = api.request("POST", f"/api/v1/me/follow/{kind}", {f"{kind}_id": slug}, form=True)
    assert status == 200 and again == body
    assert followed(api, kind, plural, [slug, other]) == [slug]
    # Brackets may come unescaped; a bare repeated key works too.
    status, _, raw = api.request("GET", f"/api/v1/me/follow/{plural}?{plural}[]={slug}&{plural}={other}")
    assert status == 200 and [f[kind]["id"] for f in raw] == [slug]
    status, _, body = api.request("DELETE", f"/api/v1/me/follow/{kind}/{slug}")
    assert status == 200 and body[kind]["id"] == slug
    assert followed(api, kind, plural, [slug, other]) == []
    assert api.request("DELETE", f"/api/v1/me/follow/{kind}/{slug}")[1:][1] == {"error": f"{label} Not Followed"}
    assert api.request("DELETE", f"/api/v1/me/follow/{kind}/{slug}")[0] == 404


@pytest.mark.parametrize("kind,plural", [("artist", "artists"), ("gene", "genes")])
def test_an_id_check_none_of_whose_ids_is_followed_answers_404(api, kind, plural):
    """Artsy answers 404, not [], when none of the ids asked is followed: eigen's
    checkFavoriteStatusForArtist/ForGene read that 404 as "not following" (ENDPOINTS.md)."""
    label = kind.title()
    status, _, body = api.request("GET", f"/api/v1/me/follow/{plural}?{plural}[]=nobody&{plural}[]=nobody-else")
    assert (status, body) == (404, {"error": f"{label} Not Followed"})
    # One followed id among them: 200 with the subset. A paged list past its end stays [].
    seeded = "andy-warhol" if kind == "artist" else "pop-art"
    status, _, body = api.request("GET", f"/api/v1/me/follow/{plural}?{plural}[]=nobody&{plural}[]={seeded}")
    assert status == 200 and [f[kind]["id"] for f in body] == [seeded]
    assert api.request("GET", f"/api/v1/me/follow/{plural}?{plural}[]=nobody&page=1")[::2] == (200, [])


@pytest.mark.parametrize("kind,label", [("artist", "Artist"), ("gene", "Gene"), ("profile", "Profile")])
def test_unknown_ids_404(api, kind, label):
    not_found = {"error": f"{label} Not Found"}
    assert api.request("POST", f"/api/v1/me/follow/{kind}", {f"{kind}_id": "nobody"}, form=True)[::2] == (404, not_found)
    assert api.request("DELETE", f"/api/v1/me/follow/{kind}/nobody")[::2] == (404, not_found)
    assert api.request("GET", f"/api/v1/{kind}/nobody")[::2] == (404, not_found)
    assert api.request("POST", f"/api/v1/me/follow/{kind}", {})[::2] == (400, {"error": f"{kind}_id is missing"})


def test_follow_accepts_json_and_query_params(api):
    assert api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})[0] == 201
    assert api.request("POST", "/api/v1/me/follow/gene?gene_id=minimalism")[0] == 201
    assert followed(api, "artist", "artists", ["kaws"]) == ["kaws"]
    assert followed(api, "gene", "genes", ["minimalism"]) == ["minimalism"]


def test_profile_state_is_a_single_get_whose_404_means_not_following(api):
    status, _, body = api.request("GET", "/api/v1/me/follow/profile/gagosian")  # seeded as followed
    assert status == 200 and body["profile"]["id"] == "gagosian" and body["profile"]["owner"]["name"] == "Gagosian"
    assert api.request("GET", "/api/v1/me/follow/profile/white-cube")[::2] == (404, {"error": "Profile Not Followed"})
    status, _, body = api.request("POST", "/api/v1/me/follow/profile", {"profile_id": "white-cube"}, form=True)
    assert status == 201 and body["profile"]["id"] == "white-cube"
    assert api.request("GET", "/api/v1/me/follow/profile/white-cube")[0] == 200
    # eigen sends profile_id in the DELETE's query too.
    assert api.request("DELETE", "/api/v1/me/follow/profile/white-cube?profile_id=white-cube")[0] == 200
    assert api.request("GET", "/api/v1/me/follow/profile/white-cube")[0] == 404
    assert api.request("DELETE", "/api/v1/me/follow/profile/white-cube")[::2] == (404, {"error": "Profile Not Followed"})
    assert followed(api, "profile", "profiles", ["gagosian", "white-cube"]) == ["gagosian"]


def test_detail_endpoints(api):
    status, _, artist = api.request("GET", "/api/v1/artist/andy-warhol")
    assert status == 200 and artist["name"] == "Andy Warhol" and artist["years"] == "1928-1987"
    status, _, gene = api.request("GET", "/api/v1/gene/pop-art")
    assert status == 200 and gene["name"] == "Pop Art" and "artworks" in gene["counts"]
    status, _, profile = api.request("GET", "/api/v1/profile/the-armory-show")
    assert status == 200 and profile["owner_type"] == "Fair"
    status, _, follow = api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "andy-warhol"})
    assert follow["artist"] == artist  # a follow answers the whole object


def test_seed_follows(ctl):
    assert ctl.request("GET", "/_control/follows")[2] == {
        "artist": ["andy-warhol"], "gene": ["pop-art"], "profile": ["gagosian"]}


def test_paging_newest_first_and_total_count(api, ctl):
    ids = ["banksy", "kaws", "yayoi-kusama", "keith-haring", "cindy-sherman"]
    assert ctl.request("POST", "/_control/follows", {"artist": ids})[2]["artist"] == ids
    pages = []
    for page in (1, 2, 3, 4):
        status, headers, body = api.request("GET", f"/api/v1/me/follow/artists?size=2&page={page}&total_count=1")
        assert status == 200 and headers["X-Total-Count"] == "5"
        pages.append([f["artist"]["id"] for f in body])
    assert pages == [ids[0:2], ids[2:4], ids[4:], []]
    status, headers, body = api.request("GET", "/api/v1/me/follow/artists")
    assert "X-Total-Count" not in headers and len(body) == 5
    # A follow goes to the front; the default page size is 10.
    api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "ai-weiwei"})
    assert [f["artist"]["id"] for f in api.request("GET", "/api/v1/me/follow/artists?page=1")[2]][:2] == [
        "ai-weiwei", "banksy"]
    for kind, plural, slug in (("gene", "genes", "pop-art"), ("profile", "profiles", "gagosian")):
        status, headers, body = api.request("GET", f"/api/v1/me/follow/{plural}?total_count=true")
        assert headers["X-Total-Count"] == "1" and body[0][kind]["id"] == slug
    assert api.request("GET", "/api/v1/me/follow/artists?size=x")[0] == 400


def test_default_page_size_is_10_but_an_id_check_answers_every_match(api, ctl):
    ids = [f"artist-{i:02}" for i in range(15)]
    ctl.request("POST", "/_control/follows", {"artist": ids})
    assert len(api.request("GET", "/api/v1/me/follow/artists")[2]) == 10
    assert len(api.request("GET", "/api/v1/me/follow/artists?size=100")[2]) == 15
    assert followed(api, "artist", "artists", ids) == ids
    # Ids introduced by /_control/follows get a made-up detail object.
    assert api.request("GET", "/api/v1/artist/artist-03")[2]["name"] == "Artist 03"


# ---- auth -------------------------------------------------------------------------------------

def test_token_required_when_set(api, ctl, server):
    assert ctl.request("POST", "/_control/token", {"token": "s3cret"})[2] == {"token_required": True}
    status, _, body = api.request("GET", "/api/v1/artist/banksy")
    assert (status, body) == (401, {"error": "Unauthorized", "text": "The access token is invalid or has expired."})
    assert api.request("GET", "/api/v1/artist/banksy", headers={"X-Access-Token": "wrong"})[0] == 401
    assert api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})[0] == 401
    authed = Client(server, token="s3cret")
    assert authed.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})[0] == 201
    authed.close()
    log = stats(ctl)["log"]  # control calls never need the token
    assert log[-1]["headers"]["X-Access-Token"] == "<redacted>" and log[-1]["status"] == 201
    assert log[1]["headers"]["X-Access-Token"] == "<redacted>" and log[1]["status"] == 401
    ctl.request("POST", "/_control/token", {"token": None})
    assert api.request("GET", "/api/v1/artist/banksy")[0] == 200
    assert ctl.request("POST", "/_control/token", {"token": 5})[0] == 400


def test_the_log_keeps_the_request_line_as_received(api, ctl):
    assert api.request("GET", "/api/v1/me/../artist/./banksy%2F..?x=%2e")[0] == 404
    assert stats(ctl)["log"][-1]["requestline"] == "GET /api/v1/me/../artist/./banksy%2F..?x=%2e HTTP/1.1"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_token_from_command_line_or_environment(tmp_path, how):
    args, env = (["--token", "abc"], None) if how == "flag" else ([], {"ARTSY_DEMO_TOKEN": "abc"})
    proc, port = start_server(SERVER, tmp_path, *args, env=env)
    try:
        assert Client(port).request("GET", "/api/v1/artist/banksy")[0] == 401
        assert Client(port, token="abc").request("GET", "/api/v1/artist/banksy")[0] == 200
        c = Client(port)
        c.request("POST", "/_control/token", {"token": None})
        c.request("POST", "/_control/reset")  # reset brings back the startup token
        assert Client(port).request("GET", "/api/v1/artist/banksy")[0] == 401
    finally:
        assert stop_server(proc) == 0


# ---- faults -----------------------------------------------------------------------------------

def test_status_fault_with_headers_and_times(api, ctl):
    rule = {"method": "POST", "path": "^/api/v1/me/follow/artist$", "status": 503,
            "headers": {"Retry-After": "1"}, "times": 2}
    assert ctl.request("POST", "/_control/faults", [rule])[2] == [rule]
    for _ in range(2):
        status, headers, body = api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})
        assert (status, headers["Retry-After"], body) == (503, "1", {"error": "Service Unavailable"})
    assert ctl.request("GET", "/_control/faults")[2] == []
    assert followed(api, "artist", "artists", ["kaws"]) == []  # a faulted request changes nothing
    assert api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})[0] == 201
    s = stats(ctl)
    assert s["faulted"] == 2 and [e["faulted"] for e in s["log"]] == [True, True, False, False]
    assert [e["status"] for e in s["log"]] == [503, 503, 404, 201]  # 404: the id check found none


def test_sequence_fault_numbers_its_answers(api, ctl):
    ctl.request("POST", "/_control/faults", {"path": "follow/artists$", "status": 200, "times": None,
                                              "sequence": True, "body": {"items": [], "next": "c{n}"},
                                              "headers": {"Link": "</api/v1/me/follow/artists?page={n}>; rel=\"next\""}})
    for n in (1, 2, 3):
        status, headers, body = api.request("GET", "/api/v1/me/follow/artists")
        assert (status, body, headers["Link"]) == (200, {"items": [], "next": f"c{n}"},
                                                   f'</api/v1/me/follow/artists?page={n}>; rel="next"')


def test_fault_matching_body_and_queue_order(api, ctl):
    ctl.request("POST", "/_control/faults", [
        {"method": "DELETE", "status": 500},
        {"path": "/gene", "status": 429, "body": {"error": "slow down"}},
        {"path": "/gene", "status": 418},
    ])
    assert api.request("GET", "/api/v1/artist/banksy")[0] == 200  # matches no rule
    assert api.request("GET", "/api/v1/gene/pop-art")[::2] == (429, {"error": "slow down"})
    assert api.request("GET", "/api/v1/gene/pop-art")[0] == 418
    assert api.request("GET", "/api/v1/gene/pop-art")[0] == 200
    assert api.request("DELETE", "/api/v1/me/follow/gene/pop-art")[0] == 500
    assert api.request("DELETE", "/api/v1/me/follow/gene/pop-art")[0] == 200


def test_unlimited_fault_and_clearing(api, ctl):
    ctl.request("POST", "/_control/faults", {"path": "banksy", "status": 502, "times": None})
    for _ in range(3):
        assert api.request("GET", "/api/v1/artist/banksy")[0] == 502
    assert ctl.request("GET", "/_control/faults")[2][0]["times"] is None
    assert ctl.request("DELETE", "/_control/faults")[2] == []
    assert api.request("GET", "/api/v1/artist/banksy")[0] == 200


@pytest.mark.parametrize("bad", [{"status": 99}, {"path": "("}, {"times": 0}, {"method": "GET"},
                                 {"status": 500, "nope": 1}, {"headers": {"A": 1}, "status": 500}, "x"])
def test_invalid_fault_rules_are_refused(ctl, bad):
    assert ctl.request("POST", "/_control/faults", [bad])[0] == 400
    assert ctl.request("GET", "/_control/faults")[2] == []


def test_delay_only_then_normal_answer(api, ctl):
    ctl.request("POST", "/_control/faults", [{"path": "follow/artist$", "delay_ms": 300}])
    start = time.monotonic()
    assert api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})[0] == 201
    assert time.monotonic() - start >= 0.3
    assert followed(api, "artist", "artists", ["kaws"]) == ["kaws"]  # the delayed call did its work
    start = time.monotonic()
    ctl.request("POST", "/_control/faults", [{"delay_ms": 200, "status": 504}])
    assert api.request("GET", "/api/v1/artist/kaws")[0] == 504
    assert time.monotonic() - start >= 0.2


def test_drop_closes_without_an_answer(server, ctl):
    ctl.request("POST", "/_control/faults", [{"path": "follow/artist$", "drop": True}])
    c = Client(server)
    with pytest.raises(http.client.RemoteDisconnected):
        c.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})
    c.close()
    assert Client(server).request("GET", "/api/v1/me/follow/artists?artists[]=kaws")[0] == 404
    entry = stats(ctl)["log"][0]
    assert entry["status"] is None and entry["faulted"] is True and entry["body"] == '{"artist_id": "kaws"}'


def test_applied_fault_does_the_work_and_loses_the_answer(server, ctl, api):
    ctl.request("POST", "/_control/faults", [{"path": "follow/artist$", "drop": True, "applied": True},
                                             {"method": "DELETE", "status": 503, "applied": True}])
    c = Client(server)
    with pytest.raises(http.client.RemoteDisconnected):
        c.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"})
    c.close()
    assert followed(api, "artist", "artists", ["kaws"]) == ["kaws"]  # done, though unanswered
    assert api.request("DELETE", "/api/v1/me/follow/artist/kaws")[0] == 503
    assert followed(api, "artist", "artists", ["kaws"]) == []  # done, though answered 503
    assert api.request("DELETE", "/api/v1/me/follow/artist/kaws")[0] == 404  # the retry meets a 404
    assert ctl.request("POST", "/_control/faults", [{"applied": True, "delay_ms": 5}])[0] == 400
    assert ctl.request("POST", "/_control/faults", [{"applied": 1, "status": 500}])[0] == 400


def test_hang_until_the_client_gives_up(server, ctl):
    ctl.request("POST", "/_control/faults", [{"path": "artist/banksy", "hang": True}])
    open_before = stats(ctl)["open_connections"]
    c = Client(server, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(socket.timeout):
        c.request("GET", "/api/v1/artist/banksy")
    assert time.monotonic() - start >= 0.5
    assert stats(ctl)["open_connections"] == open_before + 1  # held open
    c.close()
    deadline = time.monotonic() + 3
    while stats(ctl)["open_connections"] != open_before:  # released once the client went away
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert Client(server).request("GET", "/api/v1/artist/banksy")[0] == 200


def test_sigterm_exits_cleanly_while_a_request_hangs(tmp_path):
    proc, port = start_server(SERVER, tmp_path)
    c = Client(port)
    c.request("POST", "/_control/faults", [{"hang": True}])
    hung = socket.create_connection(("127.0.0.1", port))
    hung.sendall(b"GET /api/v1/artist/banksy HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.2)
    start = time.monotonic()
    assert stop_server(proc) == 0 and time.monotonic() - start < 3
    assert hung.recv(100) == b""  # closed with no answer
    hung.close()


# ---- counting ---------------------------------------------------------------------------------

def test_stats_count_calls_routes_and_connections(server, ctl):
    api = Client(server)
    api.request("POST", "/api/v1/me/follow/artist", {"artist_id": "kaws"}, form=True)
    api.request("GET", "/api/v1/me/follow/artists?artists%5B%5D=kaws&artists%5B%5D=banksy")
    api.request("DELETE", "/api/v1/me/follow/artist/kaws")
    api.request("DELETE", "/api/v1/me/follow/artist/kaws")
    api.request("DELETE", "/api/v1/me/follow/gene/pop-art")
    api.request("GET", "/api/v1/me/follow/profile/gagosian")
    api.request("GET", "/api/v2/nothing")
    s = api.request("GET", "/_control/stats")[2]  # on the same connection: control is not counted
    assert s["requests"] == 7 and s["faulted"] == 0
    assert s["calls"] == {
        "POST /api/v1/me/follow/artist": 1, "GET /api/v1/me/follow/artists": 1,
        "DELETE /api/v1/me/follow/artist/kaws": 2, "DELETE /api/v1/me/follow/gene/pop-art": 1,
        "GET /api/v1/me/follow/profile/gagosian": 1, "GET /api/v2/nothing": 1}
    assert s["routes"] == {
        "POST /api/v1/me/follow/artist": 1, "GET /api/v1/me/follow/artists": 1,
        "DELETE /api/v1/me/follow/artist/{id}": 2, "DELETE /api/v1/me/follow/gene/{id}": 1,
        "GET /api/v1/me/follow/profile/{id}": 1, "GET <unmatched>": 1}
    # One keep-alive connection carried everything (the control connection predates the reset).
    assert (s["connections"], s["api_connections"]) == (1, 1)
    assert s["open_connections"] >= 2
    first, second = s["log"][0], s["log"][1]
    assert first == {"method": "POST", "path": "/api/v1/me/follow/artist", "query": "",
                     "body": "artist_id=kaws", "headers": first["headers"], "status": 201, "faulted": False,
                     "at": first["at"],
                     "requestline": "POST /api/v1/me/follow/artist HTTP/1.1"}
    assert first["at"] <= second["at"] <= time.monotonic()  # arrival, on the shared monotonic clock
    assert first["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert second["query"] == "artists%5B%5D=kaws&artists%5B%5D=banksy" and second["status"] == 200
    assert [e["status"] for e in s["log"]] == [201, 200, 200, 404, 200, 200, 404]
    api.close()


def test_new_connections_are_counted(server, ctl):
    for _ in range(3):
        c = Client(server)
        c.request("GET", "/api/v1/artist/kaws")
        c.close()
    s = stats(ctl)
    assert (s["connections"], s["api_connections"], s["requests"]) == (3, 3, 3)


def test_reset_restores_everything(api, ctl):
    ctl.request("POST", "/_control/follows", {"artist": ["kaws"], "profile": []})
    ctl.request("POST", "/_control/faults", [{"status": 500, "times": 5}])
    api.request("GET", "/api/v1/artist/kaws")
    ctl.request("POST", "/_control/token", {"token": "t"})
    assert ctl.request("POST", "/_control/reset")[2] == {"ok": True}
    s = stats(ctl)
    assert (s["requests"], s["calls"], s["routes"], s["log"], s["faulted"]) == (0, {}, {}, [], 0)
    assert s["token_required"] is False
    assert ctl.request("GET", "/_control/faults")[2] == []
    assert ctl.request("GET", "/_control/follows")[2] == {
        "artist": ["andy-warhol"], "gene": ["pop-art"], "profile": ["gagosian"]}
    assert api.request("GET", "/api/v1/artist/kaws")[0] == 200
    assert stats(ctl)["api_connections"] == 1  # an open connection counts again after a reset


def test_control_errors(ctl):
    assert ctl.request("POST", "/_control/follows", {"painter": ["x"]})[0] == 400
    assert ctl.request("POST", "/_control/follows", {"artist": "banksy"})[0] == 400
    assert ctl.request("GET", "/_control/nothing")[0] == 404
    assert ctl.request("POST", "/_control/faults", body="{", headers={"Content-Type": "application/json"})[0] == 400
