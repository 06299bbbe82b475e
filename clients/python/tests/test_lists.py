"""Lists and preload (fetchList, getEntity, setInterfaceState, list topics) against the
real netmodel binary, on the local backend: lists ``following/<kind>``, 50 items a page."""

import asyncio
import signal
import subprocess
import time

import pytest

from netmodel_client import (
    AsyncClient,
    Client,
    EntityState,
    InvalidParams,
    ListItem,
    ListSection,
    ListState,
    LoadState,
    UnknownKindOrList,
    list_topic,
    params_key,
    parse_state,
    topic,
)
from netmodel_client.aio import Subscription
from test_client import FAST, T, SocketServer, next_matching, run, spawn, watch_connection

pytestmark = pytest.mark.timeout(60)

LIST = "following/artist"
PAGE = 50  # the local backend's page size


def ids(state):
    return [i.id for i in state.items]


def item(state, id):
    return next((i for i in state.items if i.id == id), None)


async def follow_all(c, names):
    await asyncio.gather(*(c.follow("artist", n, await_=True) for n in names))


async def wait_for(pred, what):
    """Poll ``pred()`` (a coroutine function) until it is true."""
    deadline = time.monotonic() + T
    while not await pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


# -- parsing and keys, no server --------------------------------------------------------

LIST_JSON = {
    "list": "followedArtists", "params": {"sort": "name", "page_size": 2}, "state": "loaded",
    "items": [{"kind": "artist", "id": "banksy", "following": True, "attributes": {"name": "Banksy"}},
              {"kind": "artist", "id": "kaws", "following": None, "attributes": None}],
    "sections": [{"title": "B", "start": 0, "count": 1}, {"title": "K", "start": 1, "count": 1}],
    "hasMore": True, "error": {"code": -32001, "message": "timeout", "retryable": True}, "version": 3,
}


def test_list_state_from_json():
    s = parse_state(LIST_JSON)
    assert isinstance(s, ListState)
    assert (s.list, s.params, s.has_more, s.version) == ("followedArtists", {"sort": "name", "page_size": 2}, True, 3)
    assert s.state is LoadState.LOADED and s.state == "loaded" and not s.loading
    assert s.items == (ListItem("artist", "banksy", True, {"name": "Banksy"}), ListItem("artist", "kaws", None, None))
    assert s.sections[1] == ListSection("K", 1, 1) and s.items[s.sections[1].slice] == (s.items[1],)
    assert s.error.code == -32001 and s.error.retryable is True
    assert ListState.from_json(s.to_json()) == s and s.to_json() == LIST_JSON
    hash(s)  # frozen and hashable, like EntityState
    with pytest.raises(Exception):
        s.version = 4
    # A list is named by its name and params, whatever the order of the params.
    assert s.key == ("followedArtists", params_key({"page_size": 2, "sort": "name"}))
    assert s.key != ("followedArtists", params_key({}))
    # An EntityState is told from a ListState by the "list" field.
    e = parse_state({"kind": "artist", "id": "x", "following": True, "confirmed": True, "pending": False,
                     "error": None, "attributes": None, "version": 1})
    assert isinstance(e, EntityState) and not isinstance(e, ListState)
    with pytest.raises(ValueError):
        parse_state({**LIST_JSON, "state": "bogus"})


def test_list_topics():
    assert topic("list:followedArtists") == {"type": "list", "list": "followedArtists", "params": {}}
    assert topic("list:following/artist") == {"type": "list", "list": "following/artist", "params": {}}
    t = {"type": "list", "list": "followedArtists", "params": {"sort": "name"}}
    assert topic(t) is t
    assert list_topic("followedArtists", {"sort": "name"}) == t
    assert list_topic("following/gene") == {"type": "list", "list": "following/gene", "params": {}}
    with pytest.raises(ValueError):
        topic("list:")
    with pytest.raises(ValueError):
        topic("lists:x")


def test_subscription_versions_are_per_list_and_params():
    async def main():
        sub = Subscription(None, "s1", [], [])
        seen = []
        sub.on_change(seen.append)
        sub._release()  # as subscribe() does once its caller has run

        def lst(params, version, n=0):
            return ListState("l", params, LoadState.LOADED, tuple(ListItem("artist", str(i)) for i in range(n)),
                             version=version)

        a5, b1 = lst({"p": "a"}, 5), lst({"p": "b"}, 1)
        sub._deliver(a5)
        sub._deliver(b1)  # other params: another list, its lower version is not dropped
        sub._deliver(lst({"p": "a"}, 4))  # older than what is held: dropped
        sub._deliver(lst({"p": "a"}, 5))  # the same version again: dropped
        ent = EntityState("l", params_key({"p": "a"}), True, True, False, None, version=1)
        sub._deliver(ent)  # an entity whose (kind, id) looks like a list's key: kept apart
        assert seen == [a5, b1, ent]
        assert sub.list_state("l", {"p": "a"}) is a5 and sub.list_state("l", {"p": "b"}) is b1
        assert sub.state("l", params_key({"p": "a"})) is ent and len(sub.lists) == 2
        a7 = lst({"p": "a"}, 7, n=2)
        a6 = lst({"p": "a"}, 6, n=1)
        sub._deliver(a6)
        sub._deliver(a7)  # undelivered states of one list coalesce: only the newest waits
        got = [await asyncio.wait_for(sub.__anext__(), T) for _ in range(3)]
        assert got == [a7, b1, ent]  # a5 and a6 were replaced by a7 in the queue
        assert sub.list_state("l", {"p": "a"}) is a7

    run(main())


# -- against the server -----------------------------------------------------------------


def test_fetch_list_pages(binary, env, state_dir):
    names = [f"a{i:02d}" for i in range(60)]

    async def main():
        async with await spawn(binary, env, state_dir) as c:
            await follow_all(c, names)
            first = await c.fetch_list(LIST)
            assert isinstance(first, ListState)
            assert (first.list, first.params, first.state, first.error) == (LIST, {}, LoadState.LOADED, None)
            assert len(first.items) == PAGE and first.has_more is True
            assert all(isinstance(i, ListItem) and i.kind == "artist" and i.following is True for i in first.items)

            second = await c.fetch_list(LIST, page="next")
            assert second.state == "loaded" and second.has_more is False and second.version > first.version
            assert len(second.items) == 60 and sorted(ids(second)) == names
            assert second.items[:PAGE] == first.items  # the next page is appended

            again = await c.fetch_list(LIST, page="next")  # complete: answered from memory
            assert ids(again) == ids(second) and again.has_more is False
            assert (await c.fetch_list(LIST)).version == again.version  # loaded, not out of date
            st = await c.stats()
            assert st["lists"]["pageCalls"] == 2 and st["lists"]["held"] == 1
            assert st["requests"]["byMethod"]["fetchList"] == 4

            refreshed = await c.fetch_list(LIST, page="refresh")  # the first page again
            assert refreshed.state == "loaded" and len(refreshed.items) == PAGE and refreshed.has_more is True
            assert (await c.stats())["lists"]["pageCalls"] == 3

    run(main())


def test_list_subscription_join_and_refetch(binary, env, state_dir):
    """A list topic delivers ListStates: when an item is unfollowed (the join, then the
    list fetched again as it is out of date), and when the list is refreshed."""

    async def main():
        # The latency keeps the join and the refetch apart (else they may be coalesced).
        async with await spawn(binary, env, state_dir, "--simulate", "latency=100") as c:
            await follow_all(c, ["b1", "b2", "b3"])
            sub = await c.subscribe(["entity:artist/b2", "list:" + LIST])
            # The list's state follows the entities in the snapshot.
            assert [type(s) for s in sub.snapshot] == [EntityState, ListState]
            assert sub.snapshot[1].list == LIST and sub.list_state(LIST) == sub.snapshot[1]
            seen = []
            sub.on_change(seen.append)
            loaded = sub.snapshot[1]
            if loaded.state != "loaded":  # never loaded before: it loads now
                loaded = await next_matching(sub, lambda s: isinstance(s, ListState) and s.state == "loaded")
            assert sorted(ids(loaded)) == ["b1", "b2", "b3"]

            await c.unfollow("artist", "b2")
            join = await next_matching(
                sub, lambda s: isinstance(s, ListState) and item(s, "b2") is not None and item(s, "b2").following is False)
            assert join.version > loaded.version and item(join, "b1").following is True
            refetched = await next_matching(
                sub, lambda s: isinstance(s, ListState) and s.state == "loaded" and item(s, "b2") is None)
            assert sorted(ids(refetched)) == ["b1", "b3"] and refetched.version > join.version
            entity = sub.state("artist", "b2")
            assert isinstance(entity, EntityState) and entity.following is False

            refreshed = await c.fetch_list(LIST, page="refresh")
            note = await next_matching(sub, lambda s: isinstance(s, ListState) and s.version >= refreshed.version)
            assert note == refreshed and note.version > refetched.version
            assert sub.list_state(LIST) == refreshed

            # The callback saw every list state, in version order, none twice.
            versions = [s.version for s in seen if isinstance(s, ListState)]
            assert versions == sorted(set(versions))
            assert join in seen and refetched in seen and refreshed in seen

    run(main())


def test_list_topic_params_the_list_does_not_take_are_refused(binary, env, state_dir):
    # following/<kind> takes no params: a list topic naming one is bad input (the
    # server keeps no list per unknown param). Lists with params are keyed by them:
    # see test_subscription_versions_are_per_list_and_params above.
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            await follow_all(c, ["c1"])
            plain = await c.fetch_list(LIST)
            with pytest.raises(InvalidParams) as refused:
                await c.subscribe([{"type": "list", "list": LIST, "params": {"tag": "x"}}, "list:" + LIST])
            assert "tag" in str(refused.value)
            sub = await c.subscribe(["list:" + LIST])
            assert [s.key for s in sub.snapshot] == [(LIST, "{}")]
            assert sub.list_state(LIST).version == plain.version and len(sub.lists) == 1

    run(main())


def test_null_list_params_name_the_list_the_server_names(binary, env, state_dir):
    # The server drops list params whose value is null (a list that takes none accepts
    # them); the client's key drops them too, so the list is found by the params given.
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            await follow_all(c, ["c1"])
            given = {"tag": None}
            got = await c.fetch_list(LIST, given)
            assert got.params == {} and got.key == (LIST, params_key(given)) == (LIST, "{}")
            sub = await c.subscribe([list_topic(LIST, given)])
            assert sub.list_state(LIST, given) == sub.snapshot[0] and sub.list_state(LIST, given) is not None

    run(main())


def test_get_entity(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            followed = await c.follow("artist", "d1", await_=True)
            e = await c.get_entity("artist", "d1")
            assert isinstance(e, EntityState)
            assert (e.kind, e.id, e.following, e.confirmed, e.pending) == ("artist", "d1", True, True, False)
            assert e.version >= followed.version
            fresh = await c.get_entity("artist", "d2", refresh=True)  # never seen: its state is fetched
            assert isinstance(fresh, EntityState) and fresh.id == "d2" and fresh.confirmed is False
            assert (await c.stats())["requests"]["byMethod"]["getEntity"] == 2
            with pytest.raises(InvalidParams):
                await c.get_entity("artist", "")

    run(main())


def test_set_interface_state_preloads(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            await follow_all(c, ["e1"])
            lst = await c.fetch_list(LIST)
            before = (await c.stats())["preload"]
            # Every kind of reference: a tuple, a dict, a ListItem, an EntityState.
            known = await c.get_follow_state("artist", "e1")
            accepted = await c.set_interface_state(
                [("artist", "p1"), {"kind": "artist", "id": "p2"}, lst.items[0], known], "visible")
            assert accepted == 4

            async def loaded():
                p = (await c.stats())["preload"]
                return p["started"] >= before["started"] + 2 and p["queued"] == 0 and p["inFlight"] == 0

            await wait_for(loaded, "preload to start and finish")
            # p1's follow state was loaded before anyone showed it.
            sub = await c.subscribe("entity:artist/p1")
            assert sub.snapshot[0].confirmed is False

            assert await c.set_interface_state((("artist", f"q{i}") for i in range(3)), "preload") == 3
            assert await c.set_interface_state([("artist", "p1")], "none") == 1
            assert await c.set_interface_state([], "display") == 0
            with pytest.raises(InvalidParams) as ei:
                await c.set_interface_state([("artist", "p1")], "onscreen")
            assert ei.value.data["path"] == "/state"
            with pytest.raises(TypeError):
                await c.set_interface_state(["artist/p1"], "visible")

    run(main())


def test_unknown_list(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            with pytest.raises(UnknownKindOrList) as ei:
                await c.fetch_list("noSuchList")
            assert ei.value.code == -32004 and ei.value.data["list"] == "noSuchList"
            with pytest.raises(UnknownKindOrList):
                await c.subscribe(["entity:artist/x", "list:noSuchList"])
            with pytest.raises(InvalidParams):
                await c.fetch_list(LIST, page="last")
            assert (await c.stats())["subscriptions"] == 0  # a refused subscribe makes none

    run(main())


def test_blocking_client_lists(binary, env, state_dir):
    with Client.spawn(binary, "--state-dir", state_dir, env=env, stderr=subprocess.DEVNULL, timeout=T) as c:
        for n in ("f1", "f2"):
            c.follow("artist", n, await_=True)
        lst = c.fetch_list(LIST)
        assert isinstance(lst, ListState) and sorted(ids(lst)) == ["f1", "f2"] and not lst.has_more
        assert isinstance(c.get_entity("artist", "f1"), EntityState)
        assert c.set_interface_state((("artist", n) for n in ("g1", "g2")), "display") == 2
        with pytest.raises(UnknownKindOrList):
            c.fetch_list("noSuchList")

        sub = c.subscribe(list_topic(LIST))
        assert isinstance(sub.snapshot[0], ListState) and sub.list_state(LIST).version == lst.version
        c.unfollow("artist", "f1")
        s = sub.get(timeout=T)
        while not (isinstance(s, ListState) and s.state == "loaded" and ids(s) == ["f2"]):
            s = sub.get(timeout=T)
        assert sub.lists[(LIST, "{}")] == s
        sub.unsubscribe()


@pytest.fixture
def server(binary, env, state_dir):
    s = SocketServer(binary, env, state_dir)
    yield s
    s.cleanup()


def test_reconnect_resubscribes_list_topics(server):
    async def main():
        server.start()
        first = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(first)
            await follow_all(first, ["h1"])
            sub = await first.subscribe(list_topic(LIST))
            await next_matching(sub, lambda s: s.state == "loaded" and ids(s) == ["h1"])
            for _ in range(2):  # raise the list's version before the restart
                await first.follow("artist", "h2", await_=True)
                await first.unfollow("artist", "h2", await_=True)
            last = await next_matching(sub, lambda s: s.state == "loaded" and ids(s) == ["h1"] and s.version > 4)

            server.stop(signal.SIGKILL)
            await asyncio.wait_for(lost.wait(), T)
            server.start()
            await asyncio.wait_for(back.wait(), T)
            assert not sub.closed and sub.topics == [{"type": "list", "list": LIST, "params": {}}]

            async with await AsyncClient.connect(server.path, timeout=T, reconnect=False) as second:
                await second.follow("artist", "h3", await_=True)
            s = await next_matching(sub, lambda s: s.state == "loaded" and sorted(ids(s)) == ["h1", "h3"])
            assert isinstance(s, ListState) and s.version > last.version  # versions go on across a restart
            assert sub.list_state(LIST) == s
        finally:
            await first.close()

    run(main())
