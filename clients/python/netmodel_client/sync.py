"""Blocking client: an AsyncClient driven by an event loop in a background thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Awaitable, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from . import results
from .aio import _UNSET, AsyncClient, Callback, EntityRefLike, InterfaceState, Page, Reconnect, Subscription, Topic
from .state import EntityState, ListState, Mutation, State, Stats

T = TypeVar("T")


def _close_coroutine(coro: Awaitable[Any]) -> None:
    """Drop a coroutine never run, without the "never awaited" warning."""
    close = getattr(coro, "close", None)
    if close is not None:
        close()


class SyncSubscription:
    """Blocking view of a :class:`Subscription`: iterate it, or ``get(timeout)``.
    Callbacks given to :meth:`on_change` run on the client's background thread."""

    def __init__(self, client: "Client", sub: Subscription) -> None:
        self._client = client
        self._sub = sub

    @property
    def name(self) -> str:
        return self._sub.name

    @property
    def snapshot(self) -> List[Any]:
        return self._sub.snapshot

    @property
    def states(self) -> Dict[Tuple[str, str], EntityState]:
        return self._sub.states

    def state(self, kind: str, id: str) -> Optional[EntityState]:
        return self._sub.state(kind, id)

    @property
    def lists(self) -> Dict[Tuple[str, str], ListState]:
        return self._sub.lists

    def list_state(self, list: str, params: Optional[Dict[str, Any]] = None) -> Optional[ListState]:
        return self._sub.list_state(list, params)

    @property
    def stats(self) -> Optional[Stats]:
        """The newest figures of a ``stats`` topic (``None`` before the first)."""
        return self._sub.stats

    def on_change(self, callback: Callback) -> Callback:
        """``callback(state)`` on the background thread: first the newest state of each
        entity and list (the snapshot, or what replaced it), then every change."""
        self._client._loop.call_soon_threadsafe(self._sub._on_change_from_now, callback)
        return callback

    def get(self, timeout: Optional[float] = None) -> State:
        """The next state (an EntityState or a ListState); ``StopIteration`` once
        unsubscribed, ``TimeoutError`` after ``timeout`` s."""

        async def next_state() -> Optional[State]:
            # The timeout runs on the loop, where a state is dequeued and handed over in
            # one step: a future cancelled from this thread may hold one dequeued already.
            # (Not wait_for: before Python 3.12 it can drop a result that came as it expired.)
            task = asyncio.ensure_future(self._sub.__anext__())
            done, _ = await asyncio.wait({task}, timeout=timeout)
            if not done:
                task.cancel()  # it is parked at an await, before any dequeue
                try:
                    await task
                except asyncio.CancelledError:
                    raise TimeoutError(f"no new state within {timeout} s") from None
            try:
                return task.result()
            except StopAsyncIteration:
                return None  # a coroutine may not raise StopIteration

        state = self._client._run(next_state(), None)
        if state is None:
            raise StopIteration
        return state

    def __iter__(self) -> Iterator[State]:
        return self

    def __next__(self) -> State:
        return self.get()

    def unsubscribe(self) -> None:
        self._client._run(self._sub.unsubscribe())


class Client:
    """Blocking netmodel client. ``Client.spawn(...)`` or ``Client.connect(...)``;
    use it as a context manager or call :meth:`close`. ``timeout`` (seconds) bounds every
    call; ``None`` waits forever."""

    def __init__(self, factory: Callable[[], Awaitable[AsyncClient]], timeout: Optional[float] = None) -> None:
        self.timeout = timeout
        # Guards _closed and _inflight: close() and calls may run on any threads.
        self._lock = threading.Lock()
        self._closed = False
        self._inflight: "set[concurrent.futures.Future[Any]]" = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="netmodel-client", daemon=True)
        self._thread.start()
        try:
            self._client: AsyncClient = self._run(factory())
        except BaseException:
            self._stop_loop()
            raise

    @classmethod
    def spawn(cls, binary: Optional[str] = None, *args: str, timeout: Optional[float] = None, **kw: Any) -> "Client":
        return cls(lambda: AsyncClient.spawn(binary, *args, **kw), timeout)

    @classmethod
    def connect(
        cls, path: Optional[str] = None, *, timeout: Optional[float] = None, reconnect: Union[bool, Reconnect] = True
    ) -> "Client":
        return cls(lambda: AsyncClient.connect(path, reconnect=reconnect), timeout)

    @classmethod
    def connect_or_spawn(
        cls,
        path: Optional[str] = None,
        *,
        binary: Optional[str] = None,
        args: Sequence[str] = (),
        env: Optional[Dict[str, str]] = None,
        stderr: Any = None,
        timeout: Optional[float] = None,
        reconnect: Union[bool, Reconnect] = True,
    ) -> "Client":
        """The user's server: the one listening on ``path``, else one started here that
        listens there too (see :meth:`AsyncClient.connect_or_spawn`)."""
        return cls(
            lambda: AsyncClient.connect_or_spawn(
                path, binary=binary, args=args, env=env, stderr=stderr, reconnect=reconnect
            ),
            timeout,
        )

    @property
    def spawned(self) -> bool:
        """Whether this client started its server, rather than connected to a running one."""
        return self._client.spawned

    def _run(self, coro: Awaitable[T], timeout: Any = _UNSET) -> T:
        if timeout is _UNSET:
            timeout = self.timeout
        if threading.current_thread() is self._thread:
            # The loop would wait for itself, and every other thread's calls behind it.
            _close_coroutine(coro)
            raise RuntimeError(
                "netmodel Client method called on the client's own thread (from an on_change, "
                "on_reconnect or on_disconnect callback), where it can never return: hand the "
                "call to another thread, or use AsyncClient, whose callbacks may await calls"
            )
        with self._lock:
            if self._closed:
                _close_coroutine(coro)
                raise ConnectionError("netmodel client is closed")
            fut: "concurrent.futures.Future[T]" = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
            self._inflight.add(fut)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()  # cancels the request, which sends $/cancelRequest
            raise TimeoutError(f"netmodel call timed out after {timeout} s") from None
        except concurrent.futures.CancelledError:
            if self._closed:  # cut off by close(): see _stop_loop
                raise ConnectionError("netmodel client closed before the call completed") from None
            raise
        finally:
            with self._lock:
                self._inflight.discard(fut)

    def _stop_loop(self) -> None:
        with self._lock:
            self._closed = True
            inflight = list(self._inflight)
        if self._loop.is_closed():
            return
        # A call whose coroutine was queued as the loop stopped would wait forever.
        for fut in inflight:
            fut.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    @property
    def pid(self) -> Optional[int]:
        return self._client.pid

    @property
    def process(self) -> Any:
        return self._client.process

    @property
    def connected(self) -> bool:
        return self._client.connected

    def on_reconnect(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """``callback()`` after each reconnect, on the background thread."""
        self._loop.call_soon_threadsafe(self._client.on_reconnect, callback)
        return callback

    def on_disconnect(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``callback(error)`` when the connection drops, on the background thread."""
        self._loop.call_soon_threadsafe(self._client.on_disconnect, callback)
        return callback

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Close the connection (see :meth:`AsyncClient.close`). Calls made meanwhile or
        later, from any thread, raise ``ConnectionError``."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("netmodel Client.close() called from a callback on the client's own thread")
        with self._lock:
            if self._closed:
                return
            self._closed = True  # new calls fail from here on; those under way end with the connection
        try:
            fut = asyncio.run_coroutine_threadsafe(self._client.close(timeout), self._loop)
            try:
                fut.result(timeout + 5)
            except concurrent.futures.TimeoutError:
                fut.cancel()
        finally:
            self._stop_loop()

    # Each method takes ``timeout`` (seconds; ``None`` waits forever), else the client's.

    def call(self, method: str, params: Any = None, *, timeout: Any = _UNSET) -> Any:
        return self._run(self._client.call(method, params, timeout=None), timeout)

    def initialize(self, *, timeout: Any = _UNSET) -> results.InitializeResult:
        return self._run(self._client.initialize(timeout=None), timeout)

    def follow(self, kind: str, id: str, await_: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        return self._run(self._client.follow(kind, id, await_, timeout=None), timeout)

    def unfollow(self, kind: str, id: str, await_: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        return self._run(self._client.unfollow(kind, id, await_, timeout=None), timeout)

    def set_follow_state(
        self, kind: str, id: str, following: bool, await_: bool = False, *, timeout: Any = _UNSET
    ) -> EntityState:
        return self._run(self._client.set_follow_state(kind, id, following, await_, timeout=None), timeout)

    def get_follow_state(
        self, kind: str, id: str, refresh: bool = False, max_age_ms: Optional[int] = None, *, timeout: Any = _UNSET
    ) -> EntityState:
        return self._run(self._client.get_follow_state(kind, id, refresh, max_age_ms, timeout=None), timeout)

    def get_entity(self, kind: str, id: str, refresh: bool = False, *, timeout: Any = _UNSET) -> EntityState:
        return self._run(self._client.get_entity(kind, id, refresh, timeout=None), timeout)

    def fetch_list(
        self, list: str, params: Optional[Dict[str, Any]] = None, page: Page = "first", *, timeout: Any = _UNSET
    ) -> ListState:
        return self._run(self._client.fetch_list(list, params, page, timeout=None), timeout)

    def set_interface_state(
        self, items: Iterable[EntityRefLike], state: InterfaceState, *, timeout: Any = _UNSET
    ) -> int:
        return self._run(self._client.set_interface_state(list(items), state, timeout=None), timeout)

    def stats(self, *, timeout: Any = _UNSET) -> results.Stats:
        return self._run(self._client.stats(timeout=None), timeout)

    def sync(self, timeout_ms: Optional[int] = None, *, timeout: Any = _UNSET) -> results.SyncResult:
        """See :meth:`netmodel_client.aio.AsyncClient.sync`."""
        if timeout is _UNSET:
            timeout = (10_000 if timeout_ms is None else timeout_ms) / 1000 + 10
        return self._run(self._client.sync(timeout_ms, timeout=None), timeout)

    def get_mutations(
        self,
        since: Optional[int] = None,
        *,
        limit: Optional[int] = None,
        kind: Optional[str] = None,
        id: Optional[str] = None,
        timeout: Any = _UNSET,
    ) -> results.GetMutationsResult:
        """See :meth:`netmodel_client.aio.AsyncClient.get_mutations`."""
        return self._run(self._client.get_mutations(since, limit=limit, kind=kind, id=id, timeout=None), timeout)

    def failed_mutations(self, since: int = 0, *, timeout: Any = _UNSET) -> Tuple[List[Mutation], int]:
        """See :meth:`netmodel_client.aio.AsyncClient.failed_mutations`."""
        return self._run(self._client.failed_mutations(since, timeout=None), timeout)

    def inspect(
        self,
        sections: Optional[Iterable[str]] = None,
        *,
        kind: Optional[str] = None,
        id: Optional[str] = None,
        limit: Optional[int] = None,
        timeout: Any = _UNSET,
    ) -> results.InspectResult:
        return self._run(self._client.inspect(sections, kind=kind, id=id, limit=limit, timeout=None), timeout)

    def configure(
        self,
        environment: Optional[str] = None,
        auth_token: Any = _UNSET,
        *,
        values: Optional[Dict[str, Optional[str]]] = None,
        timeout: Any = _UNSET,
    ) -> results.ConfigureResult:
        return self._run(self._client.configure(environment, auth_token, values=values, timeout=None), timeout)

    def subscribe(self, topics: Union[Topic, Iterable[Topic]], *, timeout: Any = _UNSET) -> SyncSubscription:
        return SyncSubscription(self, self._run(self._client.subscribe(topics, timeout=None), timeout))

    def unsubscribe(
        self, subscription: Union[SyncSubscription, Subscription, str], *, timeout: Any = _UNSET
    ) -> None:
        if isinstance(subscription, SyncSubscription):
            subscription = subscription._sub
        self._run(self._client.unsubscribe(subscription, timeout=None), timeout)
