"""asyncio client: one connection (a spawned ``netmodel serve`` or the Unix socket).

``AsyncClient`` is built in layers, one module each: the JSON-RPC session
(``_session``), notifications routed to subscriptions (``_routing``), reconnecting
(``_reconnect``), and here the public methods; ``_subscription`` holds
``Subscription``, ``_params`` what requests carry."""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import results
from ._params import _UNSET as _UNSET  # the blocking client shares the marker
from ._params import (
    EntityRefLike,
    InterfaceState,
    Page,
    Topic,
    _entity_ref,
    _ref,
    list_topic,
    topic,
)
from ._reconnect import Reconnect, _Reconnecting, default_socket_path
from ._session import LINE_LIMIT, _reap
from ._subscription import Callback, Subscription, _parse_state, _unsubscribe_abandoned
from ._trust import open_checked
from .errors import ConnectionLost
from .state import EntityState, ListState, Mutation

__all__ = [
    "LINE_LIMIT",
    "AsyncClient",
    "Callback",
    "EntityRefLike",
    "InterfaceState",
    "Page",
    "Reconnect",
    "Subscription",
    "Topic",
    "default_socket_path",
    "list_topic",
    "topic",
]

log = logging.getLogger("netmodel_client")


class AsyncClient(_Reconnecting):
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

    async def sync(self, timeout_ms: Optional[int] = None, *, timeout: Any = _UNSET) -> results.SyncResult:
        """Waits until every intent accepted before it has settled (``sync``): the
        ``settled`` ones with their outcome, the ``waiting`` ones with why. ``timeout_ms``
        is the server's wait (default 10 s); the call's own ``timeout`` is that plus 10 s
        unless given."""
        params: Dict[str, Any] = {} if timeout_ms is None else {"timeoutMs": timeout_ms}
        if timeout is _UNSET:
            timeout = (10_000 if timeout_ms is None else timeout_ms) / 1000 + 10
        result: results.SyncResult = await self.call("sync", params, timeout=timeout)
        return result

    async def get_mutations(
        self,
        since: Optional[int] = None,
        *,
        limit: Optional[int] = None,
        kind: Optional[str] = None,
        id: Optional[str] = None,
        timeout: Any = _UNSET,
    ) -> results.GetMutationsResult:
        """The server's ledger of intents and their outcomes (``getMutations``): the
        entries after ``since`` (a ``seq``; default: the oldest kept), of ``kind`` and
        ``id`` when given, oldest first, at most ``limit`` (server default 100). Pass
        ``next`` as the next ``since``; ``truncated`` says entries after ``since`` were
        dropped before they were read. Wrap an entry in :class:`Mutation` for its
        helpers (``failed``, ``message``)."""
        params: Dict[str, Any] = {}
        if since is not None:
            params["since"] = since
        if limit is not None:
            params["limit"] = limit
        if kind is not None:
            params["kind"] = kind
        if id is not None:
            params["id"] = id
        result: results.GetMutationsResult = await self.call("getMutations", params, timeout=timeout)
        return result

    async def failed_mutations(self, since: int = 0, *, timeout: Any = _UNSET) -> Tuple[List[Mutation], int]:
        """Every refused or rolled-back intent after ``since``, page after page, and the
        ``seq`` to pass next time: what a client that reconnects tells its user
        ("your follow of X failed: …", :attr:`Mutation.message`)."""
        failed: List[Mutation] = []
        while True:
            page = await self.get_mutations(since, limit=1000, timeout=timeout)
            failed += [m for m in map(Mutation, page["entries"]) if m.failed]
            since = page["next"]
            if not page["more"]:
                return failed, since

    async def inspect(
        self,
        sections: Optional[Iterable[str]] = None,
        *,
        kind: Optional[str] = None,
        id: Optional[str] = None,
        limit: Optional[int] = None,
        timeout: Any = _UNSET,
    ) -> results.InspectResult:
        """The items behind :meth:`stats`' counters (``inspect``): connections, the
        entities pending/failed/requested/waiting for credentials, the outbox, lists and
        HTTP holds; ``sections`` picks some of ``"connections"``, ``"entities"``,
        ``"outbox"``, ``"lists"``, ``"holds"`` (default: all). Each section lists at most
        ``limit`` items (server default 50) and says how many it left out."""
        params: Dict[str, Any] = {}
        if sections is not None:
            params["sections"] = list(sections)
        if kind is not None:
            params["kind"] = kind
        if id is not None:
            params["id"] = id
        if limit is not None:
            params["limit"] = limit
        result: results.InspectResult = await self.call("inspect", params, timeout=timeout)
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
            sub._saw_version(result.get("version"))
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
