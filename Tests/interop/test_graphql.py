"""GraphQL through the real binary: examples/graphql/config.json against the metaphysics-like
demo server (examples/graphql/server.py) on loopback. Round trips are checked in the server's
own state, call counts in its stats (GET /_control/stats), never in netmodel's.
"""

from __future__ import annotations

import json

import pytest
from demo import DemoServer, error_of

pytestmark = pytest.mark.timeout(90)

UNAVAILABLE, REJECTED = -32001, -32002


class Metaphysics(DemoServer):
    """examples/graphql/server.py on a free port, with its control API."""

    api = "graphql"

    def follows(self, kind: str) -> list[str]:
        return self.control("GET", "follows")[kind]

    def operations(self) -> dict:
        return self.control("GET", "stats")["operations"]

    def variables(self, operation: str) -> list[dict]:
        return [json.loads(e["body"])["variables"] for e in self.log() if e["operation"] == operation]


@pytest.fixture
def api(demo):
    return demo(Metaphysics)


# Today's way to page a GraphQL list, and its bug: page numbers in the URL, which a
# GraphQL server never reads, so every page is the first one.
PAGED_BY_NUMBER = {
    "path": "/v2",
    "graphql": {"query": "query { me { followsAndSaves { artistsConnection(first: 10) { edges { node { artist "
                         "{ slug } } } } } } }"},
    "paging": {"style": "page", "size": 10},
    "items": "/data/me/followsAndSaves/artistsConnection/edges",
    "item": {"kind": "artist", "id": "/node/artist/slug"},
}


@pytest.fixture
def netmodel(serve_rest, api):
    config = api.config()
    config["lists"]["pagedByNumber"] = PAGED_BY_NUMBER
    return serve_rest(config, state="state-graphql").conn


def ids(state):
    return [item["id"] for item in state["items"]]


def test_round_trips_in_the_servers_state(api, netmodel):
    c = netmodel
    r = c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert r["confirmed"] is True and r["error"] is None, r
    assert api.follows("artist")[0] == "banksy"
    assert api.variables("followArtist") == [{"input": {"artistID": "banksy", "unfollow": False}}]
    assert c.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True})["confirmed"] is True
    r = c.result("unfollow", {"kind": "artist", "id": "banksy", "await": True})
    assert r["confirmed"] is False and r["error"] is None, r
    assert "banksy" not in api.follows("artist")
    assert c.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True})["confirmed"] is False
    assert c.result("follow", {"kind": "gene", "id": "street-art", "await": True})["confirmed"] is True
    assert api.follows("gene")[0] == "street-art"
    assert api.operations() == {"followArtist": 2, "artist": 2, "followGene": 1}


def test_the_state_is_read_by_query(api, netmodel):
    c = netmodel
    assert c.result("getFollowState", {"kind": "artist", "id": "andy-warhol"})["confirmed"] is True
    assert c.result("getFollowState", {"kind": "gene", "id": "pop-art"})["confirmed"] is True
    assert c.result("getFollowState", {"kind": "artist", "id": "kaws"})["confirmed"] is False
    assert api.variables("artist") == [{"id": "andy-warhol"}, {"id": "kaws"}]
    # An unknown artist: errors in the 200 and no flag. Never "not following".
    error = error_of(c.call("getFollowState", {"kind": "artist", "id": "nobody"}), REJECTED)
    assert "Artist Not Found" in error["message"] and error["data"]["state"]["confirmed"] is None, error


def test_an_error_in_a_200_is_never_confirmed(api, netmodel):
    c = netmodel
    error = error_of(c.call("follow", {"kind": "artist", "id": "nobody", "await": True}), REJECTED)
    # The status is the upstream one metaphysics states in extensions.httpStatusCodes.
    assert error["data"]["status"] == 404 and "Artist Not Found" in error["message"], error
    assert "nobody" not in api.follows("artist")
    # The server refuses a known artist with errors and data null: rolled back with its message.
    api.control("POST", "faults", [{"match": "FollowArtist", "errors": [{"message": "Follows are paused"}]}])
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), REJECTED)
    assert "Follows are paused" in error["message"] and error["data"]["status"] == 200, error
    assert "kaws" not in api.follows("artist")
    state = c.result("getFollowState", {"kind": "artist", "id": "kaws", "refresh": True})
    assert state["confirmed"] is False and state["following"] is False, state
    assert api.operations()["followArtist"] == 2, "a refusal is not sent again"


def test_a_partial_answer_is_not_a_confirmation(api, netmodel):
    c = netmodel
    api.control("POST", "faults", [{"match": "FollowArtist", "partial": "popularArtists failed"}])
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), REJECTED)
    assert "popularArtists failed" in error["message"], error
    # The server made the change; a read by query learns it.
    assert "kaws" in api.follows("artist")
    assert c.result("getFollowState", {"kind": "artist", "id": "kaws", "refresh": True})["confirmed"] is True


def test_a_server_error_is_retried(api, netmodel):
    c = netmodel
    api.control("POST", "faults", [{"match": "FollowArtist", "status": 502}])
    r = c.result("follow", {"kind": "artist", "id": "kaws", "await": True})
    assert r["confirmed"] is True and r["error"] is None, r
    assert api.operations()["followArtist"] == 2
    assert api.follows("artist")[0] == "kaws"


def test_an_upstream_server_error_inside_a_200_is_retried(api, netmodel):
    c = netmodel
    upstream = {"message": "Bad Gateway", "path": ["followArtist"], "extensions": {"httpStatusCodes": [502]}}
    api.control("POST", "faults", [{"match": "FollowArtist", "errors": [upstream]}])
    r = c.result("follow", {"kind": "artist", "id": "kaws", "await": True})
    assert r["confirmed"] is True and r["error"] is None, r
    assert api.operations()["followArtist"] == 2
    assert api.follows("artist")[0] == "kaws"


def test_a_list_is_paged_to_the_end(api, netmodel):
    c = netmodel
    slugs = [f"artist-{n:02d}" for n in range(25)]
    api.control("POST", "follows", {"artist": slugs})
    state = c.result("fetchList", {"list": "followedArtists"})
    assert state["state"] == "loaded" and ids(state) == slugs[:10] and state["hasMore"] is True, state
    while state["hasMore"]:
        state = c.result("fetchList", {"list": "followedArtists", "page": "next"})
        assert state["state"] == "loaded", state
        assert api.operations()["artistsConnection"] <= 3, "more pages than the list has"
    assert ids(state) == slugs and all(item["following"] is True for item in state["items"])
    assert state["items"][0]["attributes"] == {"slug": "artist-00", "name": "Artist 00"}
    sent = api.variables("artistsConnection")
    assert [v.get("first") for v in sent] == [10, 10, 10]
    assert sent[0].get("after") is None and sent[1]["after"] != sent[2]["after"]


def test_a_cursor_that_does_not_advance_ends_the_list(api, netmodel):
    c = netmodel
    api.control("POST", "follows", {"artist": [f"a{n:02d}" for n in range(15)]})
    api.control("POST", "stuck_cursor", {"on": True})
    first = c.result("fetchList", {"list": "followedArtists"})
    assert first["state"] == "loaded" and len(first["items"]) == 10 and first["hasMore"] is True
    failed = c.result("fetchList", {"list": "followedArtists", "page": "next"})
    assert failed["state"] == "failure" and "did not advance" in failed["error"]["message"], failed
    assert ids(failed) == ids(first), "what was loaded stays"
    assert api.operations()["artistsConnection"] == 2
    # Asked again, it asks once and fails again: never a page after page.
    again = c.result("fetchList", {"list": "followedArtists", "page": "next"})
    assert again["state"] == "failure" and ids(again) == ids(first)
    assert api.operations()["artistsConnection"] == 3
    assert c.result("stats", {})["lists"]["pagingFailures"] == 2


def test_pages_of_the_same_items_end_the_list(api, netmodel):
    c = netmodel
    api.control("POST", "follows", {"artist": [f"a{n:02d}" for n in range(15)]})
    first = c.result("fetchList", {"list": "pagedByNumber"})
    assert first["state"] == "loaded" and len(first["items"]) == 10 and first["hasMore"] is True
    failed = c.result("fetchList", {"list": "pagedByNumber", "page": "next"})
    assert failed["state"] == "failure" and "same items as the page before" in failed["error"]["message"], failed
    assert ids(failed) == ids(first), "no item twice, nothing lost"
    # The same items again may be a head that moved by one page: walked again once, then failed.
    assert api.operations()["artistsConnection"] == 4


# --------------------------------------------------------------------------
# the mutation's answer says the result


def mutation_answer(operation, kind, slug, followed):
    return {"data": {operation: {kind: {"internalID": "4d8b92b34eb68a1b2c0003f4", "slug": slug,
                                        "isFollowed": followed}, "clientMutationId": None}}}


def test_a_follow_answered_not_followed_without_errors_is_never_confirmed(api, netmodel):
    c = netmodel
    api.control("POST", "faults", [{"match": "FollowArtist", "status": 200,
                                    "body": mutation_answer("followArtist", "artist", "kaws", False)}])
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), REJECTED)
    assert "did not follow" in error["message"] and error["data"]["status"] == 200, error
    rolled_back = error["data"]["state"]
    assert rolled_back["confirmed"] is not True and rolled_back["pending"] is False, rolled_back
    assert "kaws" not in api.follows("artist") and api.operations()["followArtist"] == 1


def test_an_unfollow_answered_still_followed_is_never_confirmed(api, netmodel):
    c = netmodel
    api.control("POST", "follows", {"gene": ["photography"]})
    api.control("POST", "faults", [{"match": "UnfollowGene", "status": 200,
                                    "body": mutation_answer("followGene", "gene", "photography", True)}])
    error = error_of(c.call("unfollow", {"kind": "gene", "id": "photography", "await": True}), REJECTED)
    assert "still follows" in error["message"], error
    assert api.follows("gene") == ["photography"]
    # Answered as asked, the same unfollow is confirmed.
    assert c.result("unfollow", {"kind": "gene", "id": "photography", "await": True})["confirmed"] is False
    assert api.follows("gene") == []
