"""Tests for the GraphQL (metaphysics-like) demo server. Run: .venv/bin/pytest -q examples/graphql/test_server.py

The server runs as a real subprocess, one per test module, reset before every test.
"""

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/: servertest
from servertest import start_server, stop_server  # noqa: E402
FOLLOW = "mutation FollowArtist($input: FollowArtistInput!) { followArtist(input: $input) { artist { isFollowed } } }"
STATE = "query($id: String!) { artist(id: $id) { isFollowed } }"
ARTISTS = ("query($first: Int, $after: String) { me { followsAndSaves { artistsConnection(first: $first, "
           "after: $after) { edges { node { artist { slug } } } pageInfo { hasNextPage endCursor } } } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = start_server(SERVER, tmp_path_factory.mktemp("graphql"))
    yield f"http://127.0.0.1:{port}"
    assert stop_server(proc) == 0


def call(url, path, body=None, method="POST", headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def api(server):
    call(server, "/_control/reset", {})

    def gql(query, variables=None, operation=None, path="/v2", headers=None):
        body = {"query": query, "variables": variables or {}}
        if operation:
            body["operationName"] = operation
        return call(server, path, body, headers=headers)

    gql.url = server
    return gql


def test_follow_and_unfollow_change_the_state_read_by_query(api):
    status, answer = api(FOLLOW, {"input": {"artistID": "banksy"}}, "FollowArtist")
    assert status == 200 and answer["data"]["followArtist"]["artist"]["isFollowed"] is True, answer
    assert api(STATE, {"id": "banksy"})[1] == {"data": {"artist": answer["data"]["followArtist"]["artist"]}}
    assert call(api.url, "/_control/follows", method="GET")[1]["artist"] == ["banksy", "andy-warhol"]
    status, answer = api(FOLLOW, {"input": {"artistID": "banksy", "unfollow": True}}, path="/graphql")
    assert answer["data"]["followArtist"]["artist"]["isFollowed"] is False
    assert api(STATE, {"id": "banksy"})[1]["data"]["artist"]["isFollowed"] is False


def test_the_internal_id_names_the_same_artist(api):
    slug = api(STATE, {"id": "kaws"})[1]["data"]["artist"]
    assert api(STATE, {"id": slug["internalID"]})[1]["data"]["artist"]["slug"] == "kaws"


def test_an_unknown_artist_is_an_error_inside_a_200(api):
    status, answer = api(FOLLOW, {"input": {"artistID": "nobody"}})
    assert status == 200 and answer["data"] == {"followArtist": None}, answer
    assert answer["errors"][0]["message"] == "Artist Not Found"
    assert answer["errors"][0]["extensions"] == {"httpStatusCodes": [404]}
    assert api(STATE, {"id": "nobody"})[1]["errors"][0]["message"] == "Artist Not Found"


def test_genes(api):
    query = "mutation { followGene(input: $input) { gene { isFollowed } } }"
    assert api(query, {"input": {"geneID": "minimalism"}})[1]["data"]["followGene"]["gene"]["isFollowed"] is True
    assert api("query { gene(id: $id) { isFollowed } }", {"id": "minimalism"})[1]["data"]["gene"]["isFollowed"]


def test_a_connection_pages_to_the_end(api):
    slugs = [f"artist-{n}" for n in range(25)]
    call(api.url, "/_control/follows", {"artist": slugs})
    seen, after, pages = [], None, 0
    while True:
        answer = api(ARTISTS, {"first": 10, "after": after})[1]["data"]["me"]["followsAndSaves"]["artistsConnection"]
        seen += [edge["node"]["artist"]["slug"] for edge in answer["edges"]]
        pages += 1
        if not answer["pageInfo"]["hasNextPage"]:
            break
        after = answer["pageInfo"]["endCursor"]
    assert seen == slugs and pages == 3


def test_a_stuck_cursor_answers_the_first_page_again(api):
    call(api.url, "/_control/follows", {"artist": [f"a{n}" for n in range(15)]})
    call(api.url, "/_control/stuck_cursor", {"on": True})
    first = api(ARTISTS, {"first": 10})[1]["data"]["me"]["followsAndSaves"]["artistsConnection"]
    again = api(ARTISTS, {"first": 10, "after": first["pageInfo"]["endCursor"]})[1]
    assert again["data"]["me"]["followsAndSaves"]["artistsConnection"] == first


def test_faults(api):
    call(api.url, "/_control/faults", [{"match": "FollowArtist", "errors": [{"message": "nope"}]},
                                       {"match": "artist\\(", "status": 502},
                                       {"match": "FollowArtist", "partial": "popular artists failed"}])
    assert api(FOLLOW, {"input": {"artistID": "kaws"}}, "FollowArtist") == (200, {"errors": [{"message": "nope"}],
                                                                                  "data": None})
    assert api(STATE, {"id": "kaws"})[0] == 502
    status, answer = api(FOLLOW, {"input": {"artistID": "kaws"}}, "FollowArtist")
    assert answer["data"]["followArtist"]["artist"]["isFollowed"] is True
    assert answer["errors"][0]["message"] == "popular artists failed"
    assert "kaws" in call(api.url, "/_control/follows", method="GET")[1]["artist"], "a partial answer's change is made"
    assert call(api.url, "/_control/faults", {"status": 99})[0] == 400
    stats = call(api.url, "/_control/stats", method="GET")[1]
    assert stats["operations"] == {"followArtist": 2, "artist": 1}


def test_signed_out_mutations_are_errors_inside_a_200(api):
    call(api.url, "/_control/token", {"token": "s3cret"})
    status, answer = api(FOLLOW, {"input": {"artistID": "banksy"}})
    assert status == 200 and answer["errors"][0]["message"] == "You need to be signed in to perform this action"
    answer = api(FOLLOW, {"input": {"artistID": "banksy"}}, headers={"X-Access-Token": "s3cret"})[1]
    assert "errors" not in answer


def test_a_request_that_is_not_graphql(api):
    assert call(api.url, "/v2", method="GET")[0] == 404
    assert call(api.url, "/v2", {"variables": {}})[0] == 400
    assert api("query { somethingElse }")[1]["data"] is None
