"""Lists whose head moves between two page fetches (issue 31 §5; TanStack Query #4128),
through the real binary against a loopback API of this file: a newest-first list of
artists paged by page number, by offset, by cursor and by Link header, which the test
changes at its head between two pages. What subscribers see and what fetchList answers
never holds an item twice; a moved head is told in the log and walked again, and the
list then equals the API's. Items added show as repeats; items removed show only where
the answer can say so (a `total` that changed, an offset page's `overlap` item that is
not the last one shown), else a refresh finds them. A head that moved by exactly one
page is a move, not a paging failure. A cursor (the id after which to go on) does not
move.
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
    """GET /page?page=&size=, /offset?offset=&limit=, /cursor?after=&size=,
    /link?page=&size= (the next page in a Link header) over `items` (newest first),
    each answer with the list's `total`; every request is recorded."""

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
        link = None
        if url.path in ("/page", "/link"):
            size = int(query["size"])
            number = int(query["page"])
            start = (number - 1) * size
            body = {"data": page(items[start : start + size]), "total": len(items)}
            if url.path == "/link" and start + size < len(items):
                link = f'<{self.url}/link?page={number + 1}&size={size}>; rel="next"'
        elif url.path == "/offset":
            start, limit = int(query["offset"]), int(query["limit"])
            body = {"data": page(items[start : start + limit]), "total": len(items)}
        elif url.path == "/cursor":
            start = items.index(query["after"]) + 1 if "after" in query else 0
            chunk = items[start : start + int(query["size"])]
            body = {"data": page(chunk), "next": chunk[-1] if start + len(chunk) < len(items) else None}
        data = json.dumps(body).encode()
        request.send_response(200 if body else 404)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        if link:
            request.send_header("Link", link)
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
    "link": {"path": "/link", "query": {"page": "1", "size": str(SIZE)}, "paging": {"style": "link"}},
}
# The same lists reading the answer's total, and offset paging with a one-item overlap.
PAGING.update({f"{style}-total": {**PAGING[style], "total": "/total"} for style in ("page", "offset", "link")})
PAGING["offset-overlap"] = {"path": "/offset", "paging": {"style": "offset", "limit": SIZE, "overlap": True}}


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
            if "a list moved while it was paged" in line and re.search(rf'list="?{re.escape(style)}"?(\s|$)', line)]


def held(c, style):
    [entry] = [e for e in c.result("inspect", {"sections": ["lists"]})["lists"]["list"] if e["list"] == style]
    return entry


@pytest.mark.parametrize("style", ["page", "offset", "link"])
def test_items_added_at_the_head_are_never_shown_twice_and_the_list_is_walked_again(api, serve_rest, style):
    server = serve_rest(config(api))
    c = server.conn
    second, seen = walk(c, api, style, lambda items: ["n0", "n1", "n2"] + items)
    no_repeats([second, *seen])
    assert second["state"] == "loaded" and ids(second) == api.items[: 2 * SIZE], ids(second)
    assert shifted_lines(server, style), server.stderr()
    assert held(c, style)["shifted"] == "the next page holds 3 of 10 items the list already shows: walked again from the first page"
    paths = [p for p in api.requests() if p.startswith("/" + style)]
    assert len(paths) == 4, f"first page, the moved page, then the walk again from the first: {paths}"


@pytest.mark.parametrize("style", ["page", "offset", "link"])
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
    assert "shifted" not in held(c, "cursor")


@pytest.mark.parametrize("style, reason", [
    ("page-total", "the list's total went from 35 to 32"),
    ("offset-total", "the list's total went from 35 to 32"),
    ("link-total", "the list's total went from 35 to 32"),
    ("offset-overlap", 'the next page starts after "a12", not after "a09"'),
])
def test_items_removed_at_the_head_are_found_and_none_is_skipped(api, serve_rest, style, reason):
    server = serve_rest(config(api))
    c = server.conn
    second, seen = walk(c, api, style, lambda items: items[3:])
    no_repeats([second, *seen])
    shown = ids(second)
    # Without the check the walk shows a00..a09 then a13..: a10, a11 and a12 never.
    assert second["state"] == "loaded" and shown == api.items[: len(shown)], shown
    assert len(shown) >= 2 * SIZE - 1 and {"a10", "a11", "a12"} <= set(shown), shown
    assert shifted_lines(server, style), server.stderr()
    assert held(c, style)["shifted"] == reason + ": walked again from the first page"


def test_an_overlapping_offset_page_asks_from_one_item_before(api, serve_rest):
    server = serve_rest(config(api))
    c = server.conn
    second, _ = walk(c, api, "offset-overlap", lambda items: items)
    assert ids(second) == api.items[: 2 * SIZE - 1], "the overlap item is not shown twice"
    assert [p for p in api.requests() if p.startswith("/offset")] == [
        f"/offset?offset=0&limit={SIZE}", f"/offset?offset={SIZE - 1}&limit={SIZE}"]
    assert not shifted_lines(server, "offset-overlap") and "shifted" not in held(c, "offset-overlap")


@pytest.mark.parametrize("style", ["page", "offset", "link", "page-total", "offset-overlap"])
def test_a_head_that_moved_by_exactly_one_page_is_walked_again_not_failed(api, serve_rest, style):
    server = serve_rest(config(api))
    c = server.conn
    second, seen = walk(c, api, style, lambda items: [f"n{n}" for n in range(SIZE)] + items)
    no_repeats([second, *seen])
    assert second["state"] == "loaded", second
    shown = ids(second)
    assert shown == api.items[: len(shown)] and len(shown) >= 2 * SIZE - 1, shown
    assert shifted_lines(server, style), server.stderr()
    assert "walked again from the first page" in held(c, style)["shifted"]
    assert c.result("stats", {})["lists"]["pagingFailures"] == 0


def test_a_cursor_walk_skips_nothing_when_items_leave_the_head(api, serve_rest):
    server = serve_rest(config(api))
    c = server.conn
    before = list(api.items)
    second, seen = walk(c, api, "cursor", lambda items: items[3:])
    no_repeats([second, *seen])
    assert ids(second) == before[: 2 * SIZE], ids(second)
    assert not shifted_lines(server, "cursor"), server.stderr()
