"""One ``subscribe``'s notifications: the Subscription a client hands out, and the
running of its callbacks."""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional, Tuple, Union

from . import _protocol
from .state import EntityState, ListState, Mutation, State, Stats, params_key

if TYPE_CHECKING:
    from .aio import AsyncClient

log = logging.getLogger("netmodel_client")

Callback = Callable[[State], Union[None, Awaitable[None]]]


def _parse_state(obj: Any) -> Any:
    """An EntityState or ListState; anything else (a state of a newer server that this
    client cannot read) is logged and passed through as it is."""
    try:
        if isinstance(obj, dict) and "list" in obj:
            return ListState.from_json(obj)
        if isinstance(obj, dict) and "kind" in obj and "id" in obj:
            return EntityState.from_json(obj)
    except (ValueError, TypeError, KeyError) as e:
        log.warning("netmodel sent a state this client cannot read (%s): %.200r", e, obj)
    return obj


def _queue_key(state: State) -> Tuple[str, ...]:
    # Entities, lists and stats in one queue: tagged, so no entity key can equal a list key.
    if isinstance(state, Stats):
        return ("stats",)
    if isinstance(state, Mutation):
        return ("mutation", str(state.seq))
    return ("list", *state.key) if isinstance(state, ListState) else ("entity", *state.key)


class Subscription:
    """The notifications of one ``subscribe``.

    An async iterator of states: :class:`EntityState` for entity topics,
    :class:`ListState` for list topics (tell them apart with ``isinstance``):
    ``async for state in sub: …``. Undelivered states are coalesced per entity and per
    list (only the newest waits, as on the server), and a state older than one already
    seen for the same entity ``(kind, id)`` or list ``(list, params)`` (lower
    ``version``) is dropped. Iteration ends
    after :meth:`unsubscribe` or :meth:`AsyncClient.close`, and raises
    :class:`ConnectionLost` if the connection is lost for good. A socket client that
    reconnects subscribes again to ``topics``: ``name`` becomes the new server's id,
    and the new snapshot is delivered as changes, so iteration and callbacks just go on.
    The first snapshot is delivered the same way: iteration and callbacks start with
    the current state of each entity and list (also kept in :attr:`snapshot`).

    ``on_change(callback)`` calls ``callback(state)`` for every new state, on the event
    loop's thread. A callback that returns a coroutine has its coroutines run one at a
    time, in order; while one runs, only the newest state per entity and per list waits
    (older waiting ones are dropped), so the last one to finish drew the newest state.

    ``async with await client.subscribe(…) as sub:`` unsubscribes on leaving the block.
    """

    def __init__(self, client: "AsyncClient", name: str, snapshot: List[Any], topics: List[Dict[str, Any]]) -> None:
        self._client = client
        self._names = [name]  # [current server name], shared with the finalizer (which must not hold self)
        self.name = name
        self.topics = topics
        self.snapshot: List[Any] = snapshot
        self._latest: Dict[Tuple[str, str], EntityState] = {}
        self._lists: Dict[Tuple[str, str], ListState] = {}
        self._queue: "collections.OrderedDict[Tuple[str, ...], State]" = collections.OrderedDict()
        self._callbacks: List[Callback] = []
        self._runners: Dict[int, _CallbackRunner] = {}  # by id(callback)
        # States for the callbacks, held until the code awaiting subscribe() has run: the
        # reader goes on with the lines after the answer before that code can add one.
        self._held: Optional[List[State]] = None
        self._wakeup = asyncio.Event()
        self._closed = False
        self._error: Optional[BaseException] = None
        self.last_seq = 0
        #: The newest figures of a ``stats`` topic (``None`` before the first).
        self.stats: Optional[Stats] = None
        #: The server process's ``instance`` id when last subscribed (``None`` if not named).
        self.instance: Optional[str] = None
        #: The version up to which this view has every change (the subscribe answer's
        #: ``version``, then each ``through`` of the connection): a reconnect resumes
        #: from it (``since``), getting only what changed while away.
        self.resume_version: Optional[int] = None
        # The snapshot is the start of the stream, in every client (docs/clients.md, "the
        # subscribe snapshot"): iterators and callbacks get it first. Callbacks get it
        # once released, so one added right after `await subscribe()` misses nothing.
        self._held = []
        for s in snapshot:
            if isinstance(s, (EntityState, ListState)):
                self._deliver(s)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def states(self) -> Dict[Tuple[str, str], EntityState]:
        """The newest state seen per ``(kind, id)``, snapshot included."""
        return dict(self._latest)

    def state(self, kind: str, id: str) -> Optional[EntityState]:
        return self._latest.get((kind, id))

    @property
    def lists(self) -> Dict[Tuple[str, str], ListState]:
        """The newest state seen per list, snapshot included, keyed by
        :attr:`ListState.key` ``(list, params_key(params))``."""
        return dict(self._lists)

    def list_state(self, list: str, params: Optional[Dict[str, Any]] = None) -> Optional[ListState]:
        """The newest state seen of the list ``list`` with ``params``."""
        return self._lists.get((list, params_key(params)))

    def on_change(self, callback: Callback) -> Callback:
        """Call ``callback(state)`` on every new state (usable as a decorator)."""
        self._callbacks.append(callback)
        if not self._closed:
            kept: "set[Subscription]" = getattr(self._client, "_kept", set())
            kept.add(self)  # its callbacks are how it is used: no finalizer
        return callback

    def remove_callback(self, callback: Callback) -> None:
        self._callbacks.remove(callback)

    async def unsubscribe(self) -> None:
        await self._client.unsubscribe(self)

    async def __aenter__(self) -> "Subscription":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if not self._closed:
            try:
                await self.unsubscribe()
            except ConnectionError:
                pass  # no connection: the server ended it with the connection

    # -- called by the client's reader --------------------------------------------------

    def _deliver_stats(self, stats: Stats, seq: int = 0) -> None:
        # No version: each push is newer than the last; only the newest waits.
        if self._closed:
            return
        if seq:
            self.last_seq = seq
        self.stats = stats
        self._queue[_queue_key(stats)] = stats
        self._wakeup.set()
        if self._held is not None:
            self._held.append(stats)
        else:
            self._call_back(stats)

    def _deliver_mutation(self, entry: Mutation, seq: int = 0) -> None:
        # Each outcome is its own item; one entry's later outcome replaces a waiting one.
        if self._closed:
            return
        if seq:
            self.last_seq = seq
        self._queue[_queue_key(entry)] = entry
        self._wakeup.set()
        if self._held is not None:
            self._held.append(entry)
        else:
            self._call_back(entry)

    def _deliver(self, state: Union[EntityState, ListState], seq: int = 0) -> None:
        if self._closed:
            return
        if seq:
            self.last_seq = seq
        latest: Dict[Tuple[str, str], Any] = self._lists if isinstance(state, ListState) else self._latest
        prev = latest.get(state.key)
        if prev is not None and not _protocol.newer_version(state.version, prev.version):
            return
        latest[state.key] = state
        self._queue[_queue_key(state)] = state
        self._wakeup.set()
        if self._held is not None:
            self._held.append(state)
        else:
            self._call_back(state)

    def _call_back(self, state: State, callbacks: Optional[List[Callback]] = None) -> None:
        for cb in list(self._callbacks) if callbacks is None else callbacks:
            res = _invoke(cb, state, run_awaitable=False)
            if res is not None:
                self._runners.setdefault(id(cb), _CallbackRunner()).submit(_queue_key(state), res)

    def _on_change_from_now(self, callback: Callback) -> None:
        """on_change for a callback added from another thread (the blocking client), on
        the loop: by then the held states may have gone to the callbacks already, so it
        gets the newest state of each entity and list (and the newest figures) first,
        in the same step as it joins: nothing is missed or doubled in between."""
        self.on_change(callback)
        if self._held is not None or self._closed:
            return  # the held states (the snapshot first) still go to every callback
        current: List[State] = [*self._latest.values(), *self._lists.values()]
        if self.stats is not None:
            current.append(self.stats)
        for state in current:
            self._call_back(state, [callback])

    def _release(self) -> None:
        """Callbacks get the states held since the subscribe answer."""
        held, self._held = self._held or [], None
        for state in held:
            self._call_back(state)

    def _saw_version(self, version: Any) -> None:
        if isinstance(version, int) and not isinstance(version, bool) and version >= (self.resume_version or 0):
            self.resume_version = version

    def _since(self) -> Optional[Dict[str, Any]]:
        """Where a reconnect resumes this view: ``None`` before the server said both."""
        if self.instance is None or self.resume_version is None:
            return None
        return {"instance": self.instance, "version": self.resume_version}

    def _restart(self, name: str, snapshot: List[Any], instance: Optional[str] = None,
                 version: Any = None) -> None:
        """Subscribed again after a reconnect. The same server process (same
        ``instance``) goes on with its versions: the snapshot passes the version filter,
        whether whole or resumed (``reset`` false: only what changed while away).
        Another process (a restart, or a server that names no instance) may count
        differently, so the versions seen are forgotten and its snapshot delivered."""
        self.name = self._names[0] = name
        self.snapshot = snapshot
        self.last_seq = 0
        if instance is None or instance != self.instance:
            self._latest = {}
            self._lists = {}
            self.resume_version = None
        self.instance = instance
        self._saw_version(version)
        for s in snapshot:
            if isinstance(s, (EntityState, ListState)):
                self._deliver(s)

    def _close(self, error: Optional[BaseException] = None) -> None:
        if not self._closed:
            getattr(self._client, "_kept", set()).discard(self)
            self._closed = True
            self._error = error
            self._wakeup.set()

    # -- async iterator -----------------------------------------------------------------

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> State:
        while True:
            if self._queue:
                return self._queue.popitem(last=False)[1]
            if self._closed:
                if self._error is not None:
                    err, self._error = self._error, None
                    raise err
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()

    def __repr__(self) -> str:
        return (
            f"<Subscription {self.name} entities={len(self._latest)} lists={len(self._lists)} closed={self._closed}>"
        )


def _unsubscribe_abandoned(client_ref: "weakref.ref[AsyncClient]", names: List[str]) -> None:
    """A Subscription was garbage-collected without unsubscribe(): end it on the
    server. Runs wherever the collector does, so the send goes through the loop."""
    client = client_ref()
    if client is None or client._closing or client._loop.is_closed():
        return
    try:
        client._loop.call_soon_threadsafe(client._drop_abandoned, names[0])
    except RuntimeError:  # the loop closed meanwhile
        pass


def _invoke(callback: Callable[..., Any], *args: Any, run_awaitable: bool = True) -> Optional[Awaitable[Any]]:
    """Call a user callback and log its errors. An awaitable it returns is run as a
    task, or with ``run_awaitable=False`` returned to the caller to run."""
    try:
        res = callback(*args)
        if inspect.isawaitable(res):
            if not run_awaitable:
                return res
            asyncio.ensure_future(res).add_done_callback(_log_task_error)
    except Exception:
        log.exception("netmodel callback %r failed", callback)
    return None


def _discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine never started: no "never awaited" warning
    if close is not None:
        close()


class _CallbackRunner:
    """The coroutines of one async ``on_change`` callback, run one at a time. Those
    waiting are kept per entity/list key, the newest replacing an older one (as the
    server coalesces), so a flood leaves at most one waiting per key and a slow callback
    cannot finish after a newer state's."""

    def __init__(self) -> None:
        self._waiting: "collections.OrderedDict[Tuple[str, ...], Awaitable[Any]]" = collections.OrderedDict()
        self._task: Optional["asyncio.Future[None]"] = None

    def submit(self, key: Tuple[str, ...], awaitable: Awaitable[Any]) -> None:
        older = self._waiting.pop(key, None)
        if older is not None:
            _discard(older)
        self._waiting[key] = awaitable
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._waiting:
            _, awaitable = self._waiting.popitem(last=False)
            try:
                await awaitable
            except Exception:
                log.exception("netmodel on_change callback failed")


def _log_task_error(task: "asyncio.Future[Any]") -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("netmodel callback failed", exc_info=task.exception())
