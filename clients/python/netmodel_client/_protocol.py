# generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
"""The protocol table every netmodel client shares (schema/openrpc.json:
components.errors and x-netmodel-protocol; docs/clients.md)."""

from typing import Dict, Tuple

# Errors the server sends (components.errors).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
BACKEND_UNAVAILABLE = -32001
BACKEND_REJECTED = -32002
UNAUTHORIZED = -32003
UNKNOWN_KIND_OR_LIST = -32004
SERVER_SHUTTING_DOWN = -32005

# Errors made by the client, outside JSON-RPC's reserved range (x-netmodel-protocol.clientErrors).
CONNECTION_LOST = -31999
TIMEOUT = -31998
NOT_CONNECTED = -31997
CANCELLED = -31996

ERROR_CODES: Dict[str, int] = {
    "ParseError": -32700,
    "InvalidRequest": -32600,
    "MethodNotFound": -32601,
    "InvalidParams": -32602,
    "InternalError": -32603,
    "RequestCancelled": -32800,
    "BackendUnavailable": -32001,
    "BackendRejected": -32002,
    "Unauthorized": -32003,
    "UnknownKindOrList": -32004,
    "ServerShuttingDown": -32005,
}
CLIENT_ERROR_CODES: Dict[str, int] = {
    "ConnectionLost": -31999,
    "Timeout": -31998,
    "NotConnected": -31997,
    "Cancelled": -31996,
}

# The default socket (x-netmodel-protocol.defaultSocket): $SOCKET_ENV/SOCKET_UNDER_ENV when
# the variable is set and not empty, else SOCKET_FALLBACK with {uid} replaced.
SOCKET_ENV = "XDG_RUNTIME_DIR"
SOCKET_UNDER_ENV = "netmodel/netmodel.sock"
SOCKET_FALLBACK = "/tmp/netmodel-{uid}/netmodel.sock"

# Topic shorthands (x-netmodel-protocol.topicShorthands).
TOPIC_SHORTHANDS: Tuple[str, ...] = ("entity", "entity:KIND", "entity:KIND/ID", "list:NAME", "stats", "mutations")
TOPIC_SHORTHANDS_TEXT = "entity, entity:KIND, entity:KIND/ID, list:NAME, stats or mutations"

# List params (x-netmodel-protocol.listParams): null members are dropped from the key.
LIST_PARAMS_DROP_NULL = True


def newer_version(version: int, held: int) -> bool:
    """Whether a state at ``version`` is delivered where one at ``held`` is held
    (x-netmodel-protocol.versions)."""
    return version > held
