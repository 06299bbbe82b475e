"""JSON-RPC errors raised by the client, one class per code the server documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Type

if TYPE_CHECKING:
    from .state import EntityState

# The codes are the shared protocol table (schema/openrpc.json, written into _protocol.py
# by scripts/gen-protocol): the server's (components.errors), and those of errors made by
# the client, numbered outside JSON-RPC's reserved range (-32768…-32000) and the same in
# every netmodel client (Neovim's error tables carry them; here they are the ``code`` of
# the exceptions).
from ._protocol import (  # re-exported: "X as X" says so to mypy --strict
    BACKEND_REJECTED as BACKEND_REJECTED,
    BACKEND_UNAVAILABLE as BACKEND_UNAVAILABLE,
    CANCELLED as CANCELLED,
    CONNECTION_LOST as CONNECTION_LOST,
    INTERNAL_ERROR as INTERNAL_ERROR,
    INVALID_PARAMS as INVALID_PARAMS,
    INVALID_REQUEST as INVALID_REQUEST,
    METHOD_NOT_FOUND as METHOD_NOT_FOUND,
    NOT_CONNECTED as NOT_CONNECTED,
    PARSE_ERROR as PARSE_ERROR,
    REQUEST_CANCELLED as REQUEST_CANCELLED,
    SERVER_SHUTTING_DOWN as SERVER_SHUTTING_DOWN,
    TIMEOUT as TIMEOUT,
    UNAUTHORIZED as UNAUTHORIZED,
    UNKNOWN_KIND_OR_LIST as UNKNOWN_KIND_OR_LIST,
)


class ConnectionLost(ConnectionError):
    """The connection to the server ended before a request was answered (or while no
    connection is up). The request is not resent: a mutation the server had accepted
    is in its outbox and will still be carried out, so it may or may not have taken
    effect — read the state (or a subscription) to know."""

    code: int = CONNECTION_LOST


class UntrustedSocket(PermissionError):
    """The socket may not be this user's netmodel: its folder is a symbolic link,
    belongs to another user or can be written by others, or (Linux) the process
    listening runs as another user. Nothing was sent; the message says what to fix."""


class RPCError(Exception):
    """An error reply from the server: ``code``, ``message`` and ``data`` as sent."""

    code: int = 0

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    @property
    def state(self) -> "Optional[EntityState]":
        """The EntityState in ``data.state``: for a failed ``await: true`` mutation the
        rolled-back state, for a failed ``getEntity`` the state with the failure."""
        from .state import EntityState

        if isinstance(self.data, dict) and isinstance(self.data.get("state"), dict):
            return EntityState.from_json(self.data["state"])
        return None

    @property
    def retryable(self) -> Optional[bool]:
        return self.data.get("retryable") if isinstance(self.data, dict) else None

    @property
    def retry_after_ms(self) -> Optional[int]:
        """-32001: how long the backend said to wait (a rate limit's reset), in milliseconds."""
        value = self.data.get("retryAfterMs") if isinstance(self.data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @staticmethod
    def from_json(error: Dict[str, Any]) -> "RPCError":
        """Build the most specific subclass for a JSON-RPC error object."""
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(code, int):
            return RPCError(INTERNAL_ERROR, f"malformed error object: {error!r}", error)
        cls = _BY_CODE.get(code, RPCError)
        return cls(code, str(error.get("message", "")), error.get("data"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"


class ParseError(RPCError):
    code = PARSE_ERROR


class InvalidRequest(RPCError):
    code = INVALID_REQUEST


class MethodNotFound(RPCError):
    code = METHOD_NOT_FOUND


class InvalidParams(RPCError):
    """-32602; ``data["path"]`` is a JSON Pointer to the bad field."""

    code = INVALID_PARAMS


class InternalError(RPCError):
    code = INTERNAL_ERROR


class RequestCancelled(RPCError):
    code = REQUEST_CANCELLED


class BackendUnavailable(RPCError):
    """-32001: network error, timeout or 5xx; ``data["retryable"]`` is true."""

    code = BACKEND_UNAVAILABLE


class BackendRejected(RPCError):
    """-32002: the backend answered 4xx; ``data["status"]`` is the HTTP status."""

    code = BACKEND_REJECTED


class Unauthorized(RPCError):
    """-32003: the backend answered 401 or 403."""

    code = UNAUTHORIZED


class UnknownKindOrList(RPCError):
    """-32004: the backend has no such kind (``data["kind"]``) or list (``data["list"]``)."""

    code = UNKNOWN_KIND_OR_LIST


class ServerShuttingDown(RPCError):
    code = SERVER_SHUTTING_DOWN


_BY_CODE: Dict[int, Type[RPCError]] = {
    cls.code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        BackendUnavailable,
        BackendRejected,
        Unauthorized,
        UnknownKindOrList,
        ServerShuttingDown,
    )
}
