"""The data the server sends: EntityState, ListState (with ListItem and ListSection)."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Union

from ._protocol import LIST_PARAMS_DROP_NULL
from .errors import UNAUTHORIZED


@dataclass(frozen=True)
class StateError:
    """The last failure kept in an EntityState or a ListState: ``{code, message, retryable}``."""

    code: int
    message: str
    retryable: bool = False

    @classmethod
    def from_json(cls, obj: Optional[Dict[str, Any]]) -> Optional["StateError"]:
        if obj is None:
            return None
        return cls(int(obj["code"]), str(obj.get("message", "")), bool(obj.get("retryable", False)))

    def to_json(self) -> Dict[str, Any]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


@dataclass(frozen=True)
class EntityState:
    """An entity's follow state, full (never a delta).

    ``following`` is what a UI shows now (optimistic; ``None`` while nothing is known),
    ``confirmed`` what the backend last confirmed (``None`` if never fetched),
    ``pending`` whether a mutation is in flight or queued, ``error`` the last failure,
    ``requested`` whether the backend holds a follow request awaiting approval (a locked
    Mastodon account: not a follow, ``confirmed`` is False; the server sends the member
    only when it is true).
    Keep the state with the highest ``version`` per entity.
    """

    kind: str
    id: str
    following: Optional[bool]
    confirmed: Optional[bool]
    pending: bool
    error: Optional[StateError]
    attributes: Optional[Dict[str, Any]] = field(default=None, hash=False, compare=False)
    version: int = 0
    requested: bool = False
    #: How old a state a restarted server brought back from its state folder is (ms),
    #: until an answer confirms it; ``None`` for a state of this run (``stale`` false).
    age_ms: Optional[int] = field(default=None, compare=False)

    @property
    def stale(self) -> bool:
        """Brought back by a warm start, not yet confirmed again: show it as unverified."""
        return self.age_ms is not None

    @property
    def key(self) -> Tuple[str, str]:
        return (self.kind, self.id)

    @property
    def needs_credentials(self) -> bool:
        """The intent waits for credentials: the backend answered 401/403 (-32003) and
        the server keeps it pending, to send it again after ``configure(auth_token=…)``
        (a UI says "sign in to follow")."""
        return self.pending and self.error is not None and self.error.code == UNAUTHORIZED

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "EntityState":
        if not isinstance(obj, dict) or "kind" not in obj or "id" not in obj:
            raise ValueError(f"not an EntityState: {obj!r}")
        return cls(
            kind=obj["kind"],
            id=obj["id"],
            following=obj.get("following"),
            confirmed=obj.get("confirmed"),
            pending=bool(obj.get("pending", False)),
            error=StateError.from_json(obj.get("error")),
            attributes=obj.get("attributes"),
            version=int(obj.get("version", 0)),
            requested=obj.get("requested") is True,
            age_ms=int(obj["ageMs"]) if obj.get("stale") is True and isinstance(obj.get("ageMs"), int) else None,
        )

    def to_json(self) -> Dict[str, Any]:
        obj = {
            "kind": self.kind,
            "id": self.id,
            "following": self.following,
            "confirmed": self.confirmed,
            "pending": self.pending,
            "error": self.error.to_json() if self.error else None,
            "attributes": self.attributes,
            "version": self.version,
        }
        if self.requested:  # as the server writes it: only when true
            obj["requested"] = True
        if self.age_ms is not None:
            obj["stale"], obj["ageMs"] = True, self.age_ms
        return obj


def params_key(params: Optional[Dict[str, Any]]) -> str:
    """A list's params as a hashable key: their canonical form (schema/openrpc.json,
    x-netmodel-protocol.listParams), the server's ListState ``params`` text: members
    whose value is ``None`` dropped (the server ignores them), keys sorted, compact JSON;
    ``"{}"`` for none. Two params dicts name the same list exactly when their keys are
    equal."""
    if params and LIST_PARAMS_DROP_NULL:
        params = {k: v for k, v in params.items() if v is not None}
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class LoadState(str, enum.Enum):
    """A list's ``state``. A ``str``, so ``lst.state == "loaded"`` works too."""

    IDLE = "idle"
    """Never asked for."""
    LOADING = "loading"
    """A page or a refresh is on its way (``items`` keeps what was loaded)."""
    LOADED = "loaded"
    FAILURE = "failure"
    """The last page failed: ``error`` is set, ``items`` kept; ``page="next"`` retries it."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ListItem:
    """An item of a list, joined with the entity store: ``following`` is the entity's
    shown state now (it moves with every follow), ``attributes`` the entity's or the
    fields the list kept. Has ``kind`` and ``id``, so it can be passed where an
    entity reference is wanted (``set_interface_state``)."""

    kind: str
    id: str
    following: Optional[bool] = None
    attributes: Optional[Dict[str, Any]] = field(default=None, hash=False)

    @property
    def key(self) -> Tuple[str, str]:
        return (self.kind, self.id)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "ListItem":
        if not isinstance(obj, dict) or "kind" not in obj or "id" not in obj:
            raise ValueError(f"not a ListItem: {obj!r}")
        return cls(kind=obj["kind"], id=obj["id"], following=obj.get("following"), attributes=obj.get("attributes"))

    def to_json(self) -> Dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "following": self.following, "attributes": self.attributes}


@dataclass(frozen=True)
class ListSection:
    """A run of items with one section title: ``items[start : start + count]``
    (``lst.items[section.slice]``)."""

    title: str
    start: int
    count: int

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.count)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "ListSection":
        return cls(title=str(obj["title"]), start=int(obj["start"]), count=int(obj["count"]))

    def to_json(self) -> Dict[str, Any]:
        return {"title": self.title, "start": self.start, "count": self.count}


@dataclass(frozen=True)
class ListState:
    """A list's state, full (never a delta): what ``fetch_list`` returns and a list
    topic's notifications carry.

    ``state`` is a :class:`LoadState`; while a next page or a refresh loads it is
    ``loading`` and ``items`` keeps what was loaded. ``has_more``: whether
    ``page="next"`` can load more. ``error``: the last page's failure, or ``None``.
    A list is named by ``list`` and ``params`` together (:attr:`key`); keep the state
    with the highest ``version`` per list.
    """

    list: str
    params: Dict[str, Any] = field(default_factory=dict, hash=False)
    state: LoadState = LoadState.IDLE
    items: Tuple[ListItem, ...] = ()
    sections: Tuple[ListSection, ...] = ()
    has_more: bool = False
    error: Optional[StateError] = None
    version: int = 0

    @property
    def key(self) -> Tuple[str, str]:
        """``(list, params_key(params))``: which list this is."""
        return (self.list, params_key(self.params))

    @property
    def loading(self) -> bool:
        return self.state is LoadState.LOADING

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "ListState":
        if not isinstance(obj, dict) or not isinstance(obj.get("list"), str):
            raise ValueError(f"not a ListState: {obj!r}")
        return cls(
            list=obj["list"],
            params=dict(obj.get("params") or {}),
            state=LoadState(obj.get("state", "idle")),
            items=tuple(ListItem.from_json(i) for i in obj.get("items") or ()),
            sections=tuple(ListSection.from_json(s) for s in obj.get("sections") or ()),
            has_more=bool(obj.get("hasMore", False)),
            error=StateError.from_json(obj.get("error")),
            version=int(obj.get("version", 0)),
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "list": self.list,
            "params": dict(self.params),
            "state": self.state.value,
            "items": [i.to_json() for i in self.items],
            "sections": [s.to_json() for s in self.sections],
            "hasMore": self.has_more,
            "error": self.error.to_json() if self.error else None,
            "version": self.version,
        }


class Stats(Dict[str, Any]):
    """The server's figures, as the ``stats`` method answers them (schema/openrpc.json
    ``Stats``), delivered to a subscription with the ``stats`` topic: one right after
    subscribing, then at most one a second while they change. Only the newest waits:
    a reader slower than that skips to the latest figures."""

    @property
    def uptime_ms(self) -> int:
        return int(self.get("uptimeMs", 0))


class Mutation(Dict[str, Any]):
    """One intent of the server's ledger and what became of it (schema/openrpc.json
    ``MutationEntry``), as :meth:`AsyncClient.get_mutations` answers it and as a
    subscription with the ``mutations`` topic delivers each new outcome."""

    @property
    def seq(self) -> int:
        return int(self.get("seq", 0))

    @property
    def kind(self) -> str:
        return str(self.get("kind", ""))

    @property
    def id(self) -> str:
        return str(self.get("id", ""))

    @property
    def intent(self) -> bool:
        return bool(self.get("intent"))

    @property
    def outcome(self) -> str:
        """``pending``, ``waiting``, ``confirmed``, ``requested``, ``refused``,
        ``rolledBack`` or ``superseded``."""
        return str(self.get("outcome", ""))

    @property
    def failed(self) -> bool:
        """Refused or rolled back: what a user who asked for it should hear of."""
        return self.outcome in ("refused", "rolledBack")

    @property
    def message(self) -> str:
        """``your follow of artist/kaws failed: …`` (for a failed entry)."""
        what = "follow" if self.intent else "unfollow"
        error = self.get("error") or {}
        return f"your {what} of {self.kind}/{self.id} failed: {error.get('message', self.outcome)}"


#: What a subscription delivers: tell them apart with ``isinstance``.
State = Union[EntityState, ListState, Stats, Mutation]


def parse_state(obj: Dict[str, Any]) -> State:
    """An EntityState or a ListState from its JSON (a ListState is the one with ``list``)."""
    if isinstance(obj, dict) and "list" in obj:
        return ListState.from_json(obj)
    return EntityState.from_json(obj)
