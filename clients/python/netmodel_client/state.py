"""The data the server sends: EntityState."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple


@dataclass(frozen=True)
class StateError:
    """The last failure kept in an EntityState: ``{code, message, retryable}``."""

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
    ``pending`` whether a mutation is in flight or queued, ``error`` the last failure.
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

    @property
    def key(self) -> Tuple[str, str]:
        return (self.kind, self.id)

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
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "following": self.following,
            "confirmed": self.confirmed,
            "pending": self.pending,
            "error": self.error.to_json() if self.error else None,
            "attributes": self.attributes,
            "version": self.version,
        }
