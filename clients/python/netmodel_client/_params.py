"""What requests carry: topics, entity references, and the literal params' types."""

from __future__ import annotations

from typing import Any, Dict, Literal, Mapping, Optional, Tuple, Union

from . import _protocol

_UNSET: Any = object()

Topic = Union[Dict[str, Any], str]
#: An entity reference: ``(kind, id)``, ``{"kind": …, "id": …}``, or an object with
#: ``kind`` and ``id`` attributes (an EntityState, a ListItem).
EntityRefLike = Union[Tuple[str, str], Mapping[str, Any], Any]

#: ``fetch_list``'s ``page``.
Page = Literal["first", "next", "refresh"]
#: ``set_interface_state``'s ``state``: how near the screen the items are.
InterfaceState = Literal["none", "preload", "display", "visible"]


def topic(spec: Topic) -> Dict[str, Any]:
    """A topic object from a dict, or from a shorthand: ``"entity"``, ``"entity:KIND"``,
    ``"entity:KIND/ID"`` (as ``netmodel watch`` takes them), ``"stats"`` (the server's
    figures, delivered as :class:`Stats`), ``"mutations"`` (each intent's outcome,
    delivered as :class:`Mutation`) or ``"list:NAME"`` (a list
    without params, e.g. ``"list:following/artist"``; with params, use
    ``{"type": "list", "list": NAME, "params": {…}}`` or :func:`list_topic`)."""
    if isinstance(spec, dict):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"topic must be a dict or a string, not {type(spec).__name__}")
    if spec in ("stats", "mutations"):
        return {"type": spec}
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
