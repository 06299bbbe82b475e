"""Where a socket client connects, and how it connects again after a drop:
configured and subscribed as before."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import _protocol
from ._routing import _Subscriptions
from ._subscription import Subscription, _invoke, _parse_state
from ._session import LINE_LIMIT
from ._trust import open_checked
from .errors import ConnectionLost, RPCError

log = logging.getLogger("netmodel_client")


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
    if runtime and runtime.startswith("/"):  # a relative one is ignored (XDG Base Directory)
        return os.path.join(runtime, _protocol.SOCKET_UNDER_ENV)
    return _protocol.SOCKET_FALLBACK.replace("{uid}", str(os.getuid()))


class _Reconnecting(_Subscriptions):
    path: Optional[str]
    _reconnect_policy: Optional[Reconnect]
    _reconnect_task: Optional["asyncio.Future[None]"]
    _on_reconnect: List[Callable[[], Any]]
    _on_disconnect: List[Callable[[ConnectionLost], Any]]
    _configured: Optional[Dict[str, Any]]

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
                sub._restart(result["subscription"], snapshot, self._saw_instance(result), result.get("version"))
                self._subs[sub.name] = sub
                self._deliver_early(sub)

            try:
                params: Dict[str, Any] = {"topics": sub.topics}
                since = sub._since()
                if since is not None:
                    params["since"] = since  # only what changed while away, if it still knows
                await self._request("subscribe", params, on_result=register, internal=True)
            except RPCError as e:  # the new server refuses the topics (another backend?)
                sub._close(e)
