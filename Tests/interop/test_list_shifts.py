"""Lists whose head moves between two page fetches (issue 31 §5; TanStack Query #4128),
through the real binary against a loopback API of this file: a newest-first list of
artists paged by page number, by offset and by cursor, which the test changes at its
head between two pages. What subscribers see and what fetchList answers never holds an
item twice; a moved head is told in the log and walked again, and the list then equals
the API's; a cursor (the id after which to go on) does not move.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = pytest.mark.timeout(90)

SIZE = 10


class ShiftingAPI:
    """GET /page?page=&size=, /offset?offset=&limit=, /cursor?after=&size= over
    `items` (newest first); every request is recorded."""

    def __init__(self):
        self.items = [f"a{n:02d}" for n in range(35)]
        self.log: list[str] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                api.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, request: BaseHTTPRequestHandler):
        url = urlsplit(request.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with self.lock:
            self.log.append(request.path)
            items = list(self.items)
        body: dict = {}
        if url.path == "/page":
            size = int(query["size"])
            start = (int(query["page"]) - 1) * size
            body = {"data": page(items[start : start + size])}
        elif url.path == "/offset":
            start, limit = int(query["offset"]), int(query["limit"])
            body = {"data": page(items[start : start + limit])}
        elif url.path == "/cursor":
            start = items.index(query["after"]) + 1 if "after" in query else 0
            chunk = items[start : start + int(query["size"])]
            body = {"data": page(chunk), "next": chunk[-1] if start + len(chunk) < len(items) else None}
        data = json.dumps(body).encode()
        request.send_response(200 if body else 404)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def requests(self) -> list[str]:
        with self.lock:
            return list(self.log)


def page(ids):
    return [{"id": i, "name": f"Artist {i}"} for i in ids]


PAGING = {
    "page": {"path": "/page", "paging": {"style": "page", "size": SIZE}},
    "offset": {"path": "/offset", "paging": {"style": "offset", "limit": SIZE}},
    "cursor": {"path": "/cursor", "paging": {"style": "cursor", "parameter": "after", "next": "/next",
                                             "sizeParameter": "size", "size": SIZE}},
}


@pytest.fixture
def api():
    server = ShiftingAPI()
    yield server
    server.stop()


def config(api: ShiftingAPI) -> dict:
    return {
        "environments": {"local": api.url},
        "environment": "local",
        "retry": {"maxRetries": 0, "baseDelayMs": 10, "maxDelayMs": 10},
        "kinds": {"artist": {
            "follow": {"method": "POST", "path": "/f/{id}"}, "unfollow": {"method": "DELETE", "path": "/f/{id}"},
            "state": {"method": "GET", "path": "/f/{id}"}}},
        "lists": {style: {"method": "GET", **spec, "items": "/data", "item": {"kind": "artist", "id": "/id"}}
                  for style, spec in PAGING.items()},
    }


def ids(state):
    return [item["id"] for item in state["items"]]


def walk(c, api, style, change):
    """Subscribes to the list, loads two pages, applies `change` to the API's items
    between them; returns the second answer and every state a subscriber saw."""
    c.result("subscribe", {"topics": [{"type": "list", "list": style}]})
    first = c.result("fetchList", {"list": style})
    assert first["state"] == "loaded" and ids(first) == api.items[:SIZE], first
    with api.lock:
        api.items = change(api.items)
    second = c.result("fetchList", {"list": style, "page": "next"})
    # The server writes a turn's notifications before its reply: they are all kept.
    seen = [f.obj["params"]["state"] for f in c.stash if f.obj.get("method") == "stateChanged"]
    assert seen, "the subscriber was told nothing"
    return second, seen


def no_repeats(states):
    for state in states:
        assert len(set(ids(state))) == len(ids(state)), f"an item shown twice: {ids(state)}"


def shifted_lines(server, style):
    return [line for line in server.stderr().splitlines()
            if "a list moved while it was paged" in line and re.search(rf"list={style}\b", line)]


@pytest.mark.parametrize("style", ["page", "offset"])
def test_items_added_at_the_head_are_never_shown_twice_and_the_list_is_walked_again(api, serve_rest, style):
    server = serve_rest(config(api))
    c = server.conn
    second, seen = walk(c, api, style, lambda items: ["n0", "n1", "n2"] + items)
    no_repeats([second, *seen])
    assert second["state"] == "loaded" and ids(second) == api.items[: 2 * SIZE], ids(second)
    assert shifted_lines(server, style), server.stderr()
    [held] = [e for e in c.result("inspect", {"sections": ["lists"]})["lists"]["list"] if e["list"] == style]
    assert held["shifted"] == "the next page holds 3 of 10 items the list already shows: walked again from the first page"
    paths = [p for p in api.requests() if p.startswith("/" + style)]
    assert len(paths) == 4, f"first page, the moved page, then the walk again from the first: {paths}"


@pytest.mark.parametrize("style", ["page", "offset"])
def test_a_refresh_after_items_left_the_head_equals_the_api(api, serve_rest, style):
    server = serve_rest(config(api))
    c = server.conn
    second, seen = walk(c, api, style, lambda items: items[3:])
    no_repeats([second, *seen])
    refreshed = c.result("fetchList", {"list": style, "page": "refresh"})
    assert ids(refreshed) == api.items[:SIZE], ids(refreshed)


def test_a_cursor_walk_does_not_move(api, serve_rest):
    server = serve_rest(config(api))
    c = server.conn
    before = list(api.items)
    second, seen = walk(c, api, "cursor", lambda items: ["n0", "n1", "n2"] + items)
    no_repeats([second, *seen])
    assert ids(second) == before[: 2 * SIZE], ids(second)
    assert not shifted_lines(server, "cursor"), server.stderr()
    [held] = c.result("inspect", {"sections": ["lists"]})["lists"]["list"]
    assert "shifted" not in held, held
