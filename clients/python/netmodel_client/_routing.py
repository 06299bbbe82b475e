"""Notifications routed to the Subscription they name, including those that come
before the subscribe answer naming them."""

from __future__ import annotations

import collections
import weakref
from typing import Any, Dict, Optional, Tuple, Union

from ._session import _Session
from ._subscription import Subscription, _parse_state, _queue_key
from .errors import METHOD_NOT_FOUND
from .state import EntityState, ListState, Mutation, Stats


class _Subscriptions(_Session):
    _subs: "weakref.WeakValueDictionary[str, Subscription]"
    _kept: "set[Subscription]"
    _early: Dict[str, "collections.OrderedDict[Tuple[str, ...], Tuple[Union[EntityState, ListState], int]]"]

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
            elif method == "mutationOutcome":
                params = msg.get("params") or {}
                name = params.get("subscription")
                sub = self._subs.get(name) if isinstance(name, str) else None
                if sub is not None and isinstance(params.get("entry"), dict):
                    # Like statsChanged: written after the subscribe answer, never before.
                    sub._deliver_mutation(Mutation(params["entry"]), int(params.get("seq") or 0))
            elif method == "stateChanged":
                params = msg.get("params") or {}
                name = params.get("subscription")
                sub = self._subs.get(name) if isinstance(name, str) else None
                state = _parse_state(params.get("state"))
                if not isinstance(state, (EntityState, ListState)):
                    return
                seq = int(params.get("seq") or 0)
                if "through" in params:
                    # Every change up to it of what this connection subscribed to is here.
                    for each in list(self._subs.values()):
                        each._saw_version(params["through"])
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
    def _deliver_early(self, sub: "Subscription") -> None:
        """Notifications that came before the subscribe answer naming them."""
        for state, seq in self._early.pop(sub.name, {}).values():
            sub._deliver(state, seq)
    def _drop_abandoned(self, name: str) -> None:
        if self._lost is None and not self._closing and name not in self._subs:
            self._send_nowait(self._unsubscribe_message(name))

    def _unsubscribe_message(self, name: str) -> Dict[str, Any]:
        # An id of its own, answered to no one (logged at debug).
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": "unsubscribe", "params": {"subscription": name}}
    def _close_subs(self, error: Optional[BaseException]) -> None:
        subs, self._subs = list(self._subs.values()), weakref.WeakValueDictionary()
        self._kept.clear()
        for sub in subs:
            sub._close(error)
