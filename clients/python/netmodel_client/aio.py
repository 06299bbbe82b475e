"""asyncio client: one connection (a spawned ``netmodel serve`` or the Unix socket)."""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import logging
import os
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Tuple, Union

from .errors import RPCError
from .state import EntityState

log = logging.getLogger("netmodel_client")

#: Largest line the reader accepts (the server's default message limit is 16 MiB).
LINE_LIMIT = 64 * 1024 * 1024

_UNSET: Any = object()

Topic = Union[Dict[str, Any], str]
Callback = Callable[[EntityState], Union[None, Awaitable[None]]]


def default_socket_path() -> str:
    """``$XDG_RUNTIME_DIR/netmodel/netmodel.sock``, else ``/tmp/netmodel-$UID/netmodel.sock``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "netmodel", "netmodel.sock")
    return f"/tmp/netmodel-{os.getuid()}/netmodel.sock"


def topic(spec: Topic) -> Dict[str, Any]:
    """A topic object from a dict, or from ``netmodel watch``'s shorthand:
    ``"entity"``, ``"entity:KIND"``, ``"entity:KIND/ID"``."""
    if isinstance(spec, dict):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"topic must be a dict or a string, not {type(spec).__name__}")
    head, _, rest = spec.partition(":")
    if head != "entity":
        raise ValueError(f"unknown topic {spec!r} (want entity, entity:KIND or entity:KIND/ID)")
    t: Dict[str, Any] = {"type": "entity"}
    if rest:
        kind, slash, ident = rest.partition("/")
        t["kind"] = kind
        if slash:
            t["id"] = ident
    return t


def _parse_state(obj: Any) -> Any:
    if isinstance(obj, dict) and "kind" in obj and "id" in obj:
        return EntityState.from_json(obj)
    return obj  # a ListState (not served yet): passed through as a dict


class Subscription:
    """The notifications of one ``subscribe``.

    An async iterator of :class:`EntityState`: ``async for state in sub: …``. Undelivered
    states are coalesced per entity (only the newest waits, as on the server), and a
    state older than one already seen (lower ``version``) is dropped. Iteration ends
    after :meth:`unsubscribe` or :meth:`AsyncClient.close`, and raises
    ``ConnectionError`` if the connection is lost.

    ``on_change(callback)`` calls ``callback(state)`` for every new state, on the event
    loop's thread; a callback that returns a coroutine is run as a task.
    """

    def __init__(self, client: "AsyncClient", name: str, snapshot: List[Any]) -> None:
        self._client = client
        self.name = name
        self.snapshot: List[Any] = snapshot
        self._latest: Dict[Tuple[str, str], EntityState] = {}
        self._queue: "collections.OrderedDict[Tuple[str, str], EntityState]" = collections.OrderedDict()
        self._callbacks: List[Callback] = []
        self._wakeup = asyncio.Event()
        self._closed = False
        self._error: Optional[BaseException] = None
        self.last_seq = 0
        for s in snapshot:
            if isinstance(s, EntityState):
                self._latest[s.key] = s

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def states(self) -> Dict[Tuple[str, str], EntityState]:
        """The newest state seen per ``(kind, id)``, snapshot included."""
        return dict(self._latest)

    def state(self, kind: str, id: str) -> Optional[EntityState]:
        return self._latest.get((kind, id))

    def on_change(self, callback: Callback) -> Callback:
        """Call ``callback(state)`` on every new state (usable as a decorator)."""
        self._callbacks.append(callback)
        return callback

    def remove_callback(self, callback: Callback) -> None:
        self._callbacks.remove(callback)

    async def unsubscribe(self) -> None:
        await self._client.unsubscribe(self)

    # -- called by the client's reader --------------------------------------------------

    def _deliver(self, state: EntityState, seq: int = 0) -> None:
        if self._closed:
            return
        if seq:
            self.last_seq = seq
        prev = self._latest.get(state.key)
        if prev is not None and state.version <= prev.version:
            return
        self._latest[state.key] = state
        self._queue[state.key] = state
        self._wakeup.set()
        for cb in list(self._callbacks):
            try:
                res = cb(state)
                if inspect.isawaitable(res):
                    asyncio.ensure_future(res).add_done_callback(_log_task_error)
            except Exception:
                log.exception("netmodel subscription %s: on_change callback failed", self.name)

    def _close(self, error: Optional[BaseException] = None) -> None:
        if not self._closed:
            self._closed = True
            self._error = error
            self._wakeup.set()

    # -- async iterator -----------------------------------------------------------------

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> EntityState:
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
        return f"<Subscription {self.name} entities={len(self._latest)} closed={self._closed}>"


def _log_task_error(task: "asyncio.Future[Any]") -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("netmodel on_change callback failed", exc_info=task.exception())


class AsyncClient:
    """A JSON-RPC connection to netmodel, newline-delimited JSON.

    Make one with :meth:`spawn` (a child ``netmodel serve`` over stdio) or
    :meth:`connect` (a running server's Unix socket). ``timeout`` (seconds) bounds
    every request unless a call passes its own; ``None`` waits forever.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        *,
        process: Optional[asyncio.subprocess.Process] = None,
        timeout: Optional[float] = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.process = process
        self.timeout = timeout
        self._next_id = 0
        self._pending: Dict[int, Tuple["asyncio.Future[Any]", Optional[Callable[[Any], Any]]]] = {}
        self._subs: Dict[str, Subscription] = {}
        self._closing = False
        self._lost: Optional[ConnectionError] = None
        self._reader_task = asyncio.ensure_future(self._read_loop())

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
            stderr=stderr,
            env=env,
            limit=LINE_LIMIT,
        )
        assert proc.stdout is not None and proc.stdin is not None
        return cls(proc.stdout, proc.stdin, process=proc, timeout=timeout)

    @classmethod
    async def connect(cls, path: Optional[str] = None, *, timeout: Optional[float] = None) -> "AsyncClient":
        """Connect to a server's Unix socket (default :func:`default_socket_path`)."""
        reader, writer = await asyncio.open_unix_connection(path or default_socket_path(), limit=LINE_LIMIT)
        return cls(reader, writer, timeout=timeout)

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process is not None else None

    @property
    def connected(self) -> bool:
        return self._lost is None and not self._closing

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
        :class:`RPCError` (its subclass for the code), a lost connection ``ConnectionError``,
        and an elapsed timeout ``asyncio.TimeoutError`` (after ``$/cancelRequest``)."""
        return await self._request(method, params, timeout=timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)

    async def initialize(self) -> Dict[str, Any]:
        return await self.call("initialize", {})

    async def follow(self, kind: str, id: str, await_: bool = False) -> EntityState:
        return await self._state("follow", _ref(kind, id, await_))

    async def unfollow(self, kind: str, id: str, await_: bool = False) -> EntityState:
        return await self._state("unfollow", _ref(kind, id, await_))

    async def set_follow_state(self, kind: str, id: str, following: bool, await_: bool = False) -> EntityState:
        params = _ref(kind, id, await_)
        params["following"] = following
        return await self._state("setFollowState", params)

    async def get_follow_state(
        self, kind: str, id: str, refresh: bool = False, max_age_ms: Optional[int] = None
    ) -> EntityState:
        params: Dict[str, Any] = {"kind": kind, "id": id}
        if refresh:
            params["refresh"] = True
        if max_age_ms is not None:
            params["maxAgeMs"] = max_age_ms
        return await self._state("getFollowState", params)

    async def stats(self) -> Dict[str, Any]:
        return await self.call("stats")

    async def configure(self, environment: Optional[str] = None, auth_token: Any = _UNSET) -> Dict[str, Any]:
        """Set the backend environment and/or token; ``auth_token=None`` forgets the token."""
        params: Dict[str, Any] = {}
        if environment is not None:
            params["environment"] = environment
        if auth_token is not _UNSET:
            params["authToken"] = auth_token
        return await self.call("configure", params)

    async def subscribe(self, topics: Union[Topic, Iterable[Topic]]) -> Subscription:
        """Subscribe to topics (dicts, or ``"entity:KIND/ID"`` shorthands)."""
        if isinstance(topics, (dict, str)):
            topics = [topics]
        params = {"topics": [topic(t) for t in topics]}

        def register(result: Any) -> Subscription:
            # Runs in the reader, before any later notification is dispatched.
            sub = Subscription(self, result["subscription"], [_parse_state(s) for s in result.get("snapshot", [])])
            self._subs[sub.name] = sub
            return sub

        return await self._request("subscribe", params, on_result=register)

    async def unsubscribe(self, subscription: Union[Subscription, str]) -> None:
        name = subscription.name if isinstance(subscription, Subscription) else subscription
        try:
            await self.call("unsubscribe", {"subscription": name})
        finally:
            sub = self._subs.pop(name, None)
            if sub is not None:
                sub._close()

    # -- plumbing -----------------------------------------------------------------------

    async def _state(self, method: str, params: Dict[str, Any]) -> EntityState:
        return EntityState.from_json(await self.call(method, params))

    async def _request(
        self,
        method: str,
        params: Any,
        *,
        on_result: Optional[Callable[[Any], Any]] = None,
        timeout: Any = _UNSET,
    ) -> Any:
        if timeout is _UNSET:
            timeout = self.timeout
        self._check_open()
        self._next_id += 1
        rid = self._next_id
        fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, on_result)
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            await self._send(msg)
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, timeout)
        except BaseException:
            # Cancelled or timed out while the server still works on it: tell it.
            if self._pending.pop(rid, None) is not None and self._lost is None:
                self._send_nowait({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
            raise

    def _check_open(self) -> None:
        if self._lost is not None:
            raise ConnectionError(str(self._lost))
        if self._closing and self.process is None:
            raise ConnectionError("netmodel client is closed")

    @staticmethod
    def _encode(msg: Dict[str, Any]) -> bytes:
        return (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")

    async def _send(self, msg: Dict[str, Any]) -> None:
        if self._lost is not None:
            raise ConnectionError(str(self._lost))
        try:
            self._writer.write(self._encode(msg))
            await self._writer.drain()
        except (OSError, RuntimeError) as e:
            raise ConnectionError(f"netmodel connection lost while writing: {e}") from e

    def _send_nowait(self, msg: Dict[str, Any]) -> None:
        try:
            self._writer.write(self._encode(msg))
        except Exception:
            pass

    async def _read_loop(self) -> None:
        error: Optional[BaseException] = None
        try:
            while True:
                line = await self._reader.readline()
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
            raise
        except Exception as e:
            error = e
        finally:
            self._connection_lost(error)

    def _dispatch(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method is not None:
            if "id" in msg:  # the server sends no requests; answer as the spec asks
                self._send_nowait(
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}}
                )
            elif method == "stateChanged":
                params = msg.get("params") or {}
                sub = self._subs.get(params.get("subscription"))
                state = _parse_state(params.get("state"))
                if sub is not None and isinstance(state, EntityState):
                    sub._deliver(state, int(params.get("seq") or 0))
            return
        entry = self._pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            log.debug("netmodel reply to no pending request: %.200r", msg)
            return
        fut, on_result = entry
        if fut.done():
            return
        if "error" in msg:
            fut.set_exception(RPCError.from_json(msg["error"]))
            return
        result = msg.get("result")
        if on_result is not None:
            try:
                result = on_result(result)
            except Exception as e:
                fut.set_exception(e)
                return
        fut.set_result(result)

    def _connection_lost(self, error: Optional[BaseException]) -> None:
        if self._lost is None:
            text = "netmodel connection closed" if self._closing else "netmodel connection lost"
            if error is not None:
                text += f": {error}"
            self._lost = ConnectionError(text)
        pending, self._pending = self._pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                exc = ConnectionError(str(self._lost))
                if error is not None:
                    exc.__cause__ = error
                fut.set_exception(exc)
        subs, self._subs = self._subs, {}
        for sub in subs.values():
            sub._close(None if self._closing else ConnectionError(str(self._lost)))


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
