"""Python client for netmodel, the JSON-RPC 2.0 server of follow-state network models.

Standard library only. ``AsyncClient`` for asyncio, ``Client`` for blocking code.
"""

from .aio import LINE_LIMIT, AsyncClient, Reconnect, Subscription, default_socket_path, topic
from .errors import (
    BACKEND_REJECTED,
    BACKEND_UNAVAILABLE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_SHUTTING_DOWN,
    UNAUTHORIZED,
    UNKNOWN_KIND_OR_LIST,
    BackendRejected,
    BackendUnavailable,
    ConnectionLost,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    RPCError,
    ServerShuttingDown,
    Unauthorized,
    UnknownKindOrList,
)
from .state import EntityState, StateError
from .sync import Client, SyncSubscription

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Client",
    "Reconnect",
    "Subscription",
    "SyncSubscription",
    "EntityState",
    "StateError",
    "RPCError",
    "ConnectionLost",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "RequestCancelled",
    "BackendUnavailable",
    "BackendRejected",
    "Unauthorized",
    "UnknownKindOrList",
    "ServerShuttingDown",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "REQUEST_CANCELLED",
    "BACKEND_UNAVAILABLE",
    "BACKEND_REJECTED",
    "UNAUTHORIZED",
    "UNKNOWN_KIND_OR_LIST",
    "SERVER_SHUTTING_DOWN",
    "LINE_LIMIT",
    "default_socket_path",
    "topic",
]
