"""asyncio client: one connection (a spawned ``netmodel serve`` or the Unix socket)."""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import logging
import os
import random
import weakref
from dataclasses import dataclass
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _protocol, results
from ._trust import open_checked
from .errors import METHOD_NOT_FOUND, SERVER_SHUTTING_DOWN, ConnectionLost, RPCError
from .state import EntityState, ListState, State, Stats, params_key

log = logging.getLogger("netmodel_client")

#: Largest line the reader accepts (the server's default message limit is 16 MiB).
LINE_LIMIT = 64 * 1024 * 1024

_UNSET: Any = object()

Topic = Union[Dict[str, Any], str]
Callback = Callable[[State], Union[None, Awaitable[None]]]
#: An entity reference: ``(kind, id)``, ``{"kind": …, "id": …}``, or an object with
#: ``kind`` and ``id`` attributes (an EntityState, a ListItem).
EntityRefLike = Union[Tuple[str, str], Mapping[str, Any], Any]

#: ``fetch_list``'s ``page``.
Page = Literal["first", "next", "refresh"]
#: ``set_interface_state``'s ``state``: how near the screen the items are.
InterfaceState = Literal["none", "preload", "display", "visible"]


@dataclass(frozen=True)
class Reconnect:
    """How a socket client reconnects after its connection drops: the first try after
    ``initial_delay`` s, each next wait ``factor`` times longer up to ``max_delay`` s
    (each wait jittered down by up to half), at most ``max_attempts`` tries (``None``:
    forever, the default: a server restart may take its time, and the other clients
    never give up either)."""

    initial_delay: float = 0.1
    max_delay: float = 5.0
    factor: float = 2.0
    max_attempts: Optional[int] = None

    def delays(self) -> Iterator[float]:
        delay, attempt = self.initial_delay, 0
        while self.max_attempts is None or attempt < self.max_attempts:
            attempt += 1
            yield delay * random.uniform(0.5, 1.0)
            delay = min(delay * self.factor, self.max_delay)


def default_socket_path() -> str:
    """``$XDG_RUNTIME_DIR/netmodel/netmodel.sock``, else ``/tmp/netmodel-$UID/netmodel.sock``
    (schema/openrpc.json, x-netmodel-protocol.defaultSocket)."""
    runtime = os.environ.get(_protocol.SOCKET_ENV)
    if runtime:
        return os.path.join(runtime, _protocol.SOCKET_UNDER_ENV)
    return _protocol.SOCKET_FALLBACK.replace("{uid}", str(os.getuid()))


def topic(spec: Topic) -> Dict[str, Any]:
    """A topic object from a dict, or from a shorthand: ``"entity"``, ``"entity:KIND"``,
    ``"entity:KIND/ID"`` (as ``netmodel watch`` takes them), ``"stats"`` (the server's
    figures, delivered as :class:`Stats`) or ``"list:NAME"`` (a list
    without params, e.g. ``"list:following/artist"``; with params, use
    ``{"type": "list", "list": NAME, "params": {…}}`` or :func:`list_topic`)."""
    if isinstance(spec, dict):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"topic must be a dict or a string, not {type(spec).__name__}")
    if spec == "stats":
        return {"type": "stats"}
    head, colon, rest = spec.partition(":")
    if head == "list" and colon and rest:
        return {"type": "list", "list": rest, "params": {}}  # as every client sends it
    if head != "entity":
        raise ValueError(f"unknown topic {spec!r} (want {_protocol.TOPIC_SHORTHANDS_TEXT})")
    t: Dict[str, Any] = {"type": "entity"}
    if rest:
        kind, slash, ident = rest.partition("/")
        t["kind"] = kind
        if slash:
            t["id"] = ident
    return t


def list_topic(list: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The topic of one list: ``{"type": "list", "list": list, "params": params}``
    (``params`` ``{}`` when none, as every netmodel client sends it)."""
    return {"type": "list", "list": list, "params": dict(params or {})}


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
        # The snapshot is the start of the stream, in every client (README, "the
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

    def _restart(self, name: str, snapshot: List[Any], instance: Optional[str] = None) -> None:
        """Subscribed again after a reconnect. The same server process (same
        ``instance``) goes on with its versions: the snapshot passes the version filter.
        Another process (a restart, or a server that names no instance) may count
        differently, so the versions seen are forgotten and its snapshot delivered."""
        self.name = self._names[0] = name
        self.snapshot = snapshot
        self.last_seq = 0
        if instance is None or instance != self.instance:
            self._latest = {}
            self._lists = {}
        self.instance = instance
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


class AsyncClient:
    """A JSON-RPC connection to netmodel, newline-delimited JSON.

    Make one with :meth:`spawn` (a child ``netmodel serve`` over stdio) or
    :meth:`connect` (a running server's Unix socket). ``timeout`` (seconds) bounds
    every request unless a call passes its own; ``None`` waits forever.

    A socket client reconnects when its connection drops (see :class:`Reconnect`); a
    spawned one never does (its server is gone with the connection).
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        *,
        process: Optional[asyncio.subprocess.Process] = None,
        timeout: Optional[float] = None,
        path: Optional[str] = None,
        reconnect: Optional[Reconnect] = None,
    ) -> None:
        self._writer = writer
        self.process = process
        self.timeout = timeout
        self.path = path
        self._reconnect_policy = reconnect if process is None and path is not None else None
        self._reconnect_task: Optional["asyncio.Future[None]"] = None
        self._on_reconnect: List[Callable[[], Any]] = []
        self._on_disconnect: List[Callable[[ConnectionLost], Any]] = []
        self._next_id = 0
        self._pending: Dict[int, Tuple["asyncio.Future[Any]", Optional[Callable[[Any], Any]], str]] = {}
        # Weak: a subscription nobody holds (no reference, no on_change callback) is
        # unsubscribed by its finalizer. Those with callbacks are held in _kept.
        self._subs: "weakref.WeakValueDictionary[str, Subscription]" = weakref.WeakValueDictionary()
        self._kept: "set[Subscription]" = set()
        self._loop = asyncio.get_running_loop()
        self._abandoned: "set[int]" = set()  # ids of subscribes given up before their answer
        # Notifications for a subscription not known yet (its answer still to come).
        self._early: Dict[str, "collections.OrderedDict[Tuple[str, ...], Tuple[Union[EntityState, ListState], int]]"] = {}
        #: The server process's ``instance`` id (``initialize``, ``subscribe``, ``stats``):
        #: a new one after a reconnect means the server restarted. ``None`` until seen.
        self.instance: Optional[str] = None
        self._configured: Optional[Dict[str, Any]] = None  # sent again after a reconnect
        self._closing = False
        self._answered = False  # the server wrote something: it started
        self._stderr_tail = b""  # a spawned server's last words (spawn's default stderr)
        self._stderr_task: Optional["asyncio.Future[None]"] = None
        self._lost: Optional[ConnectionError] = None
        self._reader_task = asyncio.ensure_future(self._read_loop(reader))

    # -- construction -------------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        binary: Optional[str] = None,
        *args: str,
        env: Optional[Dict[str, str]] = None,
        stderr: Any = None,
        timeout: Optional[float] = None,
    ) -> "AsyncClient":
        """Start ``BINARY serve ARGS…`` as a child speaking on its stdin/stdout.

        ``binary`` defaults to ``$NETMODEL_BIN``, else ``netmodel`` on ``PATH``.
        ``stderr`` is where the server's logs go (inherited by default).
        """
        binary = binary or os.environ.get("NETMODEL_BIN") or "netmodel"
        proc = await asyncio.create_subprocess_exec(
            binary,
            "serve",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            # By default its logs still reach our stderr, through a pipe whose last
            # lines explain an exit ("never started (exit code 1): … in use").
            stderr=asyncio.subprocess.PIPE if stderr is None else stderr,
            env=env,
            limit=LINE_LIMIT,
        )
        assert proc.stdout is not None and proc.stdin is not None
        client = cls(proc.stdout, proc.stdin, process=proc, timeout=timeout)
        if stderr is None and proc.stderr is not None:
            client._stderr_task = asyncio.ensure_future(client._copy_stderr(proc.stderr))
        return client

    @classmethod
    async def connect(
        cls,
        path: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        reconnect: Union[bool, Reconnect] = True,
    ) -> "AsyncClient":
        """Connect to a server's Unix socket (default :func:`default_socket_path`).

        ``reconnect``: ``True`` (the default :class:`Reconnect` policy), a
        :class:`Reconnect`, or ``False`` to let a dropped connection end the client."""
        path = path or default_socket_path()
        # Raises UntrustedSocket when the socket may be another user's (see _trust).
        reader, writer = await open_checked(path, LINE_LIMIT)
        policy = Reconnect() if reconnect is True else reconnect or None
        return cls(reader, writer, timeout=timeout, path=path, reconnect=policy)

    @classmethod
    async def connect_or_spawn(
        cls,
        path: Optional[str] = None,
        *,
        binary: Optional[str] = None,
        args: Sequence[str] = (),
        env: Optional[Dict[str, str]] = None,
        stderr: Any = None,
        timeout: Optional[float] = None,
        reconnect: Union[bool, Reconnect] = True,
    ) -> "AsyncClient":
        """The user's server: connect to the one listening on ``path`` (default
        :func:`default_socket_path`), else start one (:meth:`spawn` with ``args``) that
        also listens there, so other clients share it rather than fail on its state
        folder. :attr:`spawned` says which happened.

        Only "nobody listens" (no socket file, or a stale one) starts a server: a socket
        that is not certainly yours raises :class:`UntrustedSocket` as :meth:`connect`
        does. Should another client start a server meanwhile, ours cannot take the
        state folder or the socket and exits: that one is connected to instead."""
        path = path or default_socket_path()
        try:
            return await cls.connect(path, timeout=timeout, reconnect=reconnect)
        except (FileNotFoundError, ConnectionRefusedError):
            pass  # nobody listens there
        client = await cls.spawn(binary, *args, f"--socket={path}", env=env, stderr=stderr, timeout=timeout)
        try:
            await client.initialize()  # a server that cannot start says why here
        except ConnectionLost as failed:
            await client.close()
            try:
                return await cls.connect(path, timeout=timeout, reconnect=reconnect)
            except (FileNotFoundError, ConnectionRefusedError):
                raise failed from None
        return client

    @property
    def spawned(self) -> bool:
        """Whether this client started its server (:meth:`spawn`), rather than
        connected to a running one."""
        return self.process is not None

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process is not None else None

    @property
    def connected(self) -> bool:
        return self._lost is None and not self._closing

    @property
    def reconnecting(self) -> bool:
        return self._reconnect_task is not None

    def on_reconnect(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """Call ``callback()`` each time the client has reconnected and subscribed again
        (usable as a decorator; a coroutine is run as a task)."""
        self._on_reconnect.append(callback)
        return callback

    def on_disconnect(self, callback: Callable[[ConnectionLost], Any]) -> Callable[[ConnectionLost], Any]:
        """Call ``callback(error)`` each time the connection drops (not on :meth:`close`)."""
        self._on_disconnect.append(callback)
        return callback

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self, timeout: float = 5.0) -> None:
        """End the connection. For a spawned child: ``shutdown``, ``exit``, wait for it
        (at most ``timeout`` s), then SIGTERM and at last SIGKILL — it never outlives this."""
        if self._closing:
            await asyncio.gather(self._reader_task, return_exceptions=True)
            return
        self._closing = True
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            await asyncio.gather(self._reconnect_task, return_exceptions=True)
        proc = self.process
        try:
            if proc is not None and proc.returncode is None and self._lost is None:
                try:
                    await self._request("shutdown", None, timeout=min(timeout, 2.0))
                    await self._send({"jsonrpc": "2.0", "method": "exit"})
                except Exception as e:  # the server may be gone already
                    log.debug("netmodel shutdown failed: %r", e)
            try:
                self._writer.close()  # EOF on the child's stdin also ends it
            except Exception:
                pass
            if proc is not None:
                await _reap(proc, timeout)
            else:
                try:
                    await asyncio.wait_for(self._writer.wait_closed(), 1.0)
                except Exception:
                    pass
        finally:
            if not self._reader_task.done():
                self._reader_task.cancel()
            await asyncio.gather(self._reader_task, return_exceptions=True)
            self._connection_lost(None)

    # -- requests -----------------------------------------------------------------------

    async def call(self, method: str, params: Any = None, *, timeout: Any = _UNSET) -> Any:
        """Send any request and return its ``result``; an error reply raises
        :class:`RPCError` (its subclass for the code), a lost connection
        :class:`ConnectionLost` (the request is not resent), and an elapsed timeout
        ``asyncio.TimeoutError`` (after ``$/cancelRequest``)."""
        return await self._request(method, params, timeout=timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)

    async def initialize(self, *, timeout: Any = _UNSET) -> results.InitializeResult:
        result: results.InitializeResult = await self.call("initialize", {}, timeout=timeout)
        self._saw_instance(result.get("serverInfo"))
        return result

    async def follow(self, kind: str, id: str, await_: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        return await self._state("follow", _ref(kind, id, await_), timeout)

    async def unfollow(self, kind: str, id: str, await_: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        return await self._state("unfollow", _ref(kind, id, await_), timeout)

    async def set_follow_state(
        self, kind: str, id: str, following: bool, await_: bool = False, *, timeout: Any = _UNSET
    ) -> EntityState:
        params = _ref(kind, id, await_)
        params["following"] = following
        return await self._state("setFollowState", params, timeout)

    async def get_follow_state(
        self, kind: str, id: str, refresh: bool = False, max_age_ms: Optional[int] = None, *, timeout: Any = _UNSET
    ) -> EntityState:
        params: Dict[str, Any] = {"kind": kind, "id": id}
        if refresh:
            params["refresh"] = True
        if max_age_ms is not None:
            params["maxAgeMs"] = max_age_ms
        return await self._state("getFollowState", params, timeout)

    async def get_entity(self, kind: str, id: str, refresh: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        """The entity's state with its ``attributes``, loading them (and the follow state,
        if unknown) where the kind has a detail endpoint; ``refresh`` loads them again."""
        params: Dict[str, Any] = {"kind": kind, "id": id}
        if refresh:
            params["refresh"] = True
        return await self._state("getEntity", params, timeout)

    async def fetch_list(
        self, list: str, params: Optional[Dict[str, Any]] = None, page: Page = "first", *, timeout: Any = _UNSET
    ) -> ListState:
        """Load a page of a list and return its state once the page is in.

        ``page``: ``"first"`` (answers at once from a loaded list that is not out of
        date), ``"next"`` (the page after the last one loaded, or a retry of a failed
        one), ``"refresh"`` (the first page again, replacing the items). A failed page
        is a result (``state == "failure"``, ``error`` set), not an exception; an
        unknown list raises :class:`UnknownKindOrList`."""
        req: Dict[str, Any] = {"list": list}
        if params:
            req["params"] = dict(params)
        if page != "first":
            req["page"] = page
        return ListState.from_json(await self.call("fetchList", req, timeout=timeout))

    async def set_interface_state(
        self, items: Iterable[EntityRefLike], state: InterfaceState, *, timeout: Any = _UNSET
    ) -> int:
        """Tell the server how near the screen ``items`` are — ``"visible"``,
        ``"display"``, ``"preload"`` or ``"none"`` — so it loads their states (and
        attributes) before they are shown, and drops work for items set to ``none``.
        Items are ``(kind, id)`` tuples, ``{"kind", "id"}`` dicts, or EntityStates /
        ListItems. Returns how many items the server took."""
        refs = [_entity_ref(i) for i in items]
        result = await self.call("setInterfaceState", {"items": refs, "state": state}, timeout=timeout)
        return int(result["accepted"])

    async def stats(self, *, timeout: Any = _UNSET) -> results.Stats:
        result: results.Stats = await self.call("stats", timeout=timeout)
        self._saw_instance(result)
        return result

    async def configure(
        self,
        environment: Optional[str] = None,
        auth_token: Any = _UNSET,
        *,
        values: Optional[Dict[str, Optional[str]]] = None,
        timeout: Any = _UNSET,
    ) -> results.ConfigureResult:
        """Set the backend environment, token and/or named values (``values={"me": "109"}``,
        the configuration's ``{me}``; ``None`` as a value forgets it); ``auth_token=None``
        forgets the token."""
        params: Dict[str, Any] = {}
        if environment is not None:
            params["environment"] = environment
        if auth_token is not _UNSET:
            params["authToken"] = auth_token
        if values:
            params["values"] = dict(values)
        result: results.ConfigureResult = await self.call("configure", params, timeout=timeout)
        # A restarted server has forgotten it: sent again after a reconnect.
        previous = self._configured or {}
        merged = {**previous, **params}
        if "values" in params and "values" in previous:
            merged["values"] = {**previous["values"], **params["values"]}
        self._configured = merged
        return result

    async def subscribe(self, topics: Union[Topic, Iterable[Topic]], *, timeout: Any = _UNSET) -> Subscription:
        """Subscribe to topics: dicts, or shorthands (``"entity:KIND/ID"``,
        ``"list:NAME"``; see :func:`topic`)."""
        if isinstance(topics, (dict, str)):
            topics = [topics]
        params = {"topics": [topic(t) for t in topics]}

        def register(result: Any) -> Subscription:
            # Runs in the reader, before any later notification is dispatched.
            snapshot = [_parse_state(s) for s in result.get("snapshot", [])]
            sub = Subscription(self, result["subscription"], snapshot, params["topics"])
            sub.instance = self._saw_instance(result)  # held states: released by subscribe(), once its caller has run
            self._subs[sub.name] = sub
            weakref.finalize(sub, _unsubscribe_abandoned, weakref.ref(self), sub._names)
            self._deliver_early(sub)
            return sub

        sub: Subscription = await self._request("subscribe", params, on_result=register, timeout=timeout)
        self._loop.call_soon(sub._release)  # after the caller's step, which this return continues
        return sub

    async def unsubscribe(self, subscription: Union[Subscription, str], *, timeout: Any = _UNSET) -> None:
        sub = subscription if isinstance(subscription, Subscription) else self._subs.get(subscription)
        name = sub.name if sub is not None else subscription
        try:
            await self.call("unsubscribe", {"subscription": name}, timeout=timeout)
        finally:
            if sub is not None:  # also while reconnecting: it is then not subscribed again
                if self._subs.get(sub.name) is sub:
                    del self._subs[sub.name]
                self._kept.discard(sub)
                sub._close()

    # -- plumbing -----------------------------------------------------------------------

    async def _state(self, method: str, params: Dict[str, Any], timeout: Any) -> EntityState:
        return EntityState.from_json(await self.call(method, params, timeout=timeout))

    async def _request(
        self,
        method: str,
        params: Any,
        *,
        on_result: Optional[Callable[[Any], Any]] = None,
        timeout: Any = _UNSET,
        internal: bool = False,
    ) -> Any:
        """``internal``: the reconnect's own requests, sent while users still get ConnectionLost."""
        if timeout is _UNSET:
            timeout = self.timeout
        if not internal:
            self._check_open()
        self._next_id += 1
        rid = self._next_id
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        line = self._encode(msg)  # raises here, before anything is sent or awaited
        fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, on_result, method)
        try:
            await self._send_line(line, internal)
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, timeout)
        except BaseException:
            # Cancelled or timed out while the server still works on it: tell it.
            if self._pending.pop(rid, None) is not None and self._lost is None:
                self._send_nowait({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
                if method == "subscribe":
                    # Its answer may still come: that subscription is unsubscribed then.
                    self._abandoned.add(rid)
            raise

    def _check_open(self) -> None:
        if self._closing and self.process is None:
            raise ConnectionError("netmodel client is closed")
        if self._lost is not None:
            raise (ConnectionError if self._closing else ConnectionLost)(str(self._lost))

    @staticmethod
    def _encode(msg: Dict[str, Any]) -> bytes:
        """The message as one line of UTF-8 JSON. What the server could not parse is
        refused here: its error would carry ``id: null``, matching no request."""
        try:
            text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            return (text + "\n").encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate, e.g. from os.fsdecode
            bad = e.object[e.start : e.end] if isinstance(e.object, str) else ""
            raise ValueError(
                f"netmodel {msg.get('method')!r}: params hold a string that is not valid Unicode "
                f"(lone surrogate {bad!r}), which JSON cannot carry"
            ) from None
        except ValueError as e:  # NaN or infinity: not JSON
            raise ValueError(f"netmodel {msg.get('method')!r}: params are not JSON: {e}") from None

    async def _send(self, msg: Dict[str, Any], internal: bool = False) -> None:
        await self._send_line(self._encode(msg), internal)

    async def _send_line(self, line: bytes, internal: bool = False) -> None:
        if self._lost is not None and not internal:
            raise ConnectionLost(str(self._lost))
        try:
            self._writer.write(line)
            await self._writer.drain()
        except (OSError, RuntimeError) as e:
            raise ConnectionLost(f"netmodel connection lost while writing: {e}") from e

    def _send_nowait(self, msg: Dict[str, Any]) -> None:
        try:
            self._writer.write(self._encode(msg))
        except Exception:
            pass

    async def _copy_stderr(self, stream: asyncio.StreamReader) -> None:
        """The spawned server's stderr to ours, keeping the tail that explains an exit."""
        import sys

        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-2000:]
            try:
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
            except (AttributeError, OSError, ValueError):  # a replaced or closed stderr
                pass

    async def _why_exited(self, error: Optional[BaseException]) -> Optional[BaseException]:
        """Why the spawned server's stdout ended: its exit code and last stderr lines,
        and whether it ever answered (a failed start says so)."""
        assert self.process is not None
        try:
            await asyncio.wait_for(self.process.wait(), 2.0)
            if self._stderr_task is not None:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        except (asyncio.TimeoutError, Exception):
            pass
        code = self.process.returncode
        tail = self._stderr_tail.decode("utf-8", "replace").strip()
        what = "exited" if self._answered else "never started"
        status = f"exit code {code}" if code is not None else "still running"
        why = RuntimeError(f"netmodel serve {what} ({status})" + (f": {tail}" if tail else ""))
        why.__cause__ = error
        return why

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        error: Optional[BaseException] = None
        cancelled = False
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.warning("netmodel sent a line that is not JSON: %.200r", line)
                    continue
                for m in msg if isinstance(msg, list) else [msg]:
                    self._dispatch(m)
        except asyncio.CancelledError:
            cancelled = True
            raise
        except Exception as e:
            error = e
        finally:
            if not cancelled and self.process is not None and not self._closing:
                error = await self._why_exited(error)
            self._connection_lost(error)

    def _dispatch(self, msg: Any) -> None:
        self._answered = True
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method is not None:
            if "id" in msg:  # the server sends no requests; answer as the spec asks
                self._send_nowait(
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": METHOD_NOT_FOUND, "message": "method not found"}}
                )
            elif method == "statsChanged":
                params = msg.get("params") or {}
                name = params.get("subscription")
                sub = self._subs.get(name) if isinstance(name, str) else None
                if sub is not None and isinstance(params.get("stats"), dict):
                    # Written after the subscribe answer, never before: nothing to hold early.
                    sub._deliver_stats(Stats(params["stats"]), int(params.get("seq") or 0))
            elif method == "stateChanged":
                params = msg.get("params") or {}
                name = params.get("subscription")
                sub = self._subs.get(name) if isinstance(name, str) else None
                state = _parse_state(params.get("state"))
                if not isinstance(state, (EntityState, ListState)):
                    return
                seq = int(params.get("seq") or 0)
                if sub is not None:
                    sub._deliver(state, seq)
                elif isinstance(name, str) and any(m == "subscribe" for _, _, m in self._pending.values()):
                    # The server writes a turn's notifications before its replies: this
                    # may be for a subscription whose answer is next. Newest per key waits.
                    self._early.setdefault(name, collections.OrderedDict())[_queue_key(state)] = (state, seq)
            return
        self._dispatch_reply(msg, msg.get("id"))
        if self._early and not any(m == "subscribe" for _, _, m in self._pending.values()):
            self._early.clear()  # no answer is left to claim them (an abandoned subscribe's)

    def _dispatch_reply(self, msg: Dict[str, Any], rid: Any) -> None:
        if rid is None and isinstance(msg.get("error"), dict):
            self._fail_unmatched(msg["error"])
            return
        entry = self._pending.pop(rid, None)
        if entry is None:
            if rid in self._abandoned:
                self._abandoned.discard(rid)
                name = (msg.get("result") or {}).get("subscription") if isinstance(msg.get("result"), dict) else None
                if name is not None:  # subscribed after all, for nobody: end it
                    self._send_nowait(self._unsubscribe_message(name))
                return
            log.debug("netmodel reply to no pending request: %.200r", msg)
            return
        fut, on_result, method = entry
        if fut.done():
            return
        if "error" in msg:
            error = RPCError.from_json(msg["error"])
            if self._closing and error.code == SERVER_SHUTTING_DOWN and method != "shutdown":
                fut.set_exception(ConnectionError(f"netmodel client closed before {method!r} was answered"))
            else:
                fut.set_exception(error)
            return
        result = msg.get("result")
        if on_result is not None:
            try:
                result = on_result(result)
            except Exception as e:
                fut.set_exception(e)
                return
        fut.set_result(result)

    def _fail_unmatched(self, error: Dict[str, Any]) -> None:
        """An error with ``id: null`` (a line the server could not parse or read as a
        request) may belong to any request not answered yet: fail them all rather
        than leave one waiting for good."""
        pending, self._pending = self._pending, {}
        log.warning("netmodel answered a request it could not read: %.200r", error)
        for fut, _, _ in pending.values():
            if not fut.done():
                fut.set_exception(RPCError.from_json(error))

    def _deliver_early(self, sub: "Subscription") -> None:
        """Notifications that came before the subscribe answer naming them."""
        for state, seq in self._early.pop(sub.name, {}).values():
            sub._deliver(state, seq)

    def _saw_instance(self, result: Any) -> Optional[str]:
        instance = result.get("instance") if isinstance(result, dict) else None
        if isinstance(instance, str):
            self.instance = instance
            return instance
        return None

    def _drop_abandoned(self, name: str) -> None:
        if self._lost is None and not self._closing and name not in self._subs:
            self._send_nowait(self._unsubscribe_message(name))

    def _unsubscribe_message(self, name: str) -> Dict[str, Any]:
        # An id of its own, answered to no one (logged at debug).
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": "unsubscribe", "params": {"subscription": name}}

    def _connection_lost(self, error: Optional[BaseException]) -> None:
        self._early.clear()
        self._abandoned.clear()  # the server ended their subscriptions with the connection
        first = self._lost is None
        if first:
            text = "netmodel connection closed" if self._closing else "netmodel connection lost"
            if error is not None:
                text += f": {error}"
            self._lost = (ConnectionError if self._closing else ConnectionLost)(text)
        pending, self._pending = self._pending, {}
        for fut, _, method in pending.values():
            if not fut.done():
                exc = ConnectionLost(f"{self._lost} before {method!r} was answered (not resent)")
                if error is not None:
                    exc.__cause__ = error
                fut.set_exception(exc)
        if self._closing:
            self._close_subs(None)
            return
        if first:
            for cb in list(self._on_disconnect):
                _invoke(cb, self._lost)
        if self._reconnect_policy is None:
            self._close_subs(ConnectionLost(str(self._lost)))
        elif self._reconnect_task is None:  # else a reconnect's new connection dropped: it tries on
            self._reconnect_task = asyncio.ensure_future(self._reconnect(self._reconnect_policy))

    def _close_subs(self, error: Optional[BaseException]) -> None:
        subs, self._subs = list(self._subs.values()), weakref.WeakValueDictionary()
        self._kept.clear()
        for sub in subs:
            sub._close(error)

    async def _reconnect(self, policy: Reconnect) -> None:
        """Connect again with backoff, subscribe again, then let users in again."""
        subs = list(self._subs.values())
        assert self.path is not None  # only socket clients reconnect
        attempts = 0
        for delay in policy.delays():
            attempts += 1
            await asyncio.sleep(delay)
            try:
                reader, writer = await open_checked(self.path, LINE_LIMIT)
            except OSError as e:  # UntrustedSocket too: the next try may find our server
                log.debug("netmodel reconnect to %s failed: %s", self.path, e)
                continue
            try:
                self._writer.close()
            except Exception:
                pass
            self._writer = writer
            self._reader_task = asyncio.ensure_future(self._read_loop(reader))
            try:
                await self._resubscribe(subs)
            except Exception as e:  # dropped again, timed out, or a malformed reply: next try
                log.debug("netmodel reconnect to %s: subscribing again failed: %r", self.path, e)
                writer.close()
                await asyncio.gather(self._reader_task, return_exceptions=True)  # its end fails nothing new
                continue
            if self._reader_task.done():  # dropped again right after
                continue
            self._lost = None
            self._reconnect_task = None
            log.info("netmodel reconnected to %s", self.path)
            for cb in list(self._on_reconnect):
                _invoke(cb)
            return
        self._lost = ConnectionLost(
            f"netmodel connection lost; gave up reconnecting to {self.path} after {attempts} tries"
        )
        log.warning("%s", self._lost)
        self._reconnect_task = None
        self._subs = weakref.WeakValueDictionary()
        self._kept.clear()
        for sub in subs:
            sub._close(ConnectionLost(str(self._lost)))

    async def _resubscribe(self, subs: List[Subscription]) -> None:
        """Configure the new connection as the old one was, then subscribe each live
        subscription again, routing the new ids to the same objects."""
        self._subs = weakref.WeakValueDictionary()
        if self._configured:
            try:
                await self._request("configure", dict(self._configured), internal=True)
            except RPCError as e:  # e.g. an environment the new server lacks: go on with its own
                log.warning("netmodel reconnect to %s: configure refused: %s", self.path, e)
        for sub in subs:
            if sub.closed:  # unsubscribed meanwhile
                continue

            def register(result: Any, sub: Subscription = sub) -> None:
                # In the reader, before any later notification for the new id.
                snapshot = [_parse_state(s) for s in result.get("snapshot", [])]
                sub._restart(result["subscription"], snapshot, self._saw_instance(result))
                self._subs[sub.name] = sub
                self._deliver_early(sub)

            try:
                await self._request("subscribe", {"topics": sub.topics}, on_result=register, internal=True)
            except RPCError as e:  # the new server refuses the topics (another backend?)
                sub._close(e)


def _entity_ref(item: EntityRefLike) -> Dict[str, Any]:
    if isinstance(item, Mapping):
        return {"kind": item["kind"], "id": item["id"]}
    if isinstance(item, tuple) and len(item) == 2:
        return {"kind": item[0], "id": item[1]}
    if hasattr(item, "kind") and hasattr(item, "id"):
        return {"kind": item.kind, "id": item.id}
    raise TypeError(f"not an entity reference: {item!r} (want (kind, id), a dict or an EntityState)")


def _ref(kind: str, id: str, await_: bool) -> Dict[str, Any]:
    params: Dict[str, Any] = {"kind": kind, "id": id}
    if await_:
        params["await"] = True
    return params


async def _reap(proc: asyncio.subprocess.Process, timeout: float) -> None:
    try:
        await asyncio.wait_for(proc.wait(), timeout)
        return
    except asyncio.TimeoutError:
        log.warning("netmodel (pid %d) did not exit; sending SIGTERM", proc.pid)
    try:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 2.0)
        return
    except ProcessLookupError:
        return
    except asyncio.TimeoutError:
        log.warning("netmodel (pid %d) ignored SIGTERM; sending SIGKILL", proc.pid)
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    await proc.wait()
