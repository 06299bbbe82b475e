// Errors the client throws: RPCError (one subclass per code the server documents)
// for error replies, ConnectionLostError when the connection is gone.

import { ClientErrorCodes, ErrorCodes } from './protocol.js';

// The codes are the shared protocol table (schema/openrpc.json, written into protocol.js
// by scripts/gen-protocol): ErrorCodes are the server's (components.errors);
// ClientErrorCodes, errors made by the client, are the `rpcCode` of ConnectionLostError
// and TimeoutError (whose `code` is Node's string style).
export { ClientErrorCodes, ErrorCodes };

/** An error reply from the server: `code`, `message` and `data` as sent. */
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = new.target.name; // "BackendRejected: …" in stack traces
    this.code = code;
    this.data = data;
  }

  /** For a failed `await: true` mutation: the rolled-back EntityState in `data.state`. */
  get state() {
    const s = this.data && typeof this.data === 'object' ? this.data.state : undefined;
    return s && typeof s === 'object' ? s : undefined;
  }

  get retryable() {
    return this.data && typeof this.data === 'object' ? this.data.retryable : undefined;
  }

  /** The most specific subclass for a JSON-RPC error object. */
  static from(error) {
    if (!error || typeof error !== 'object' || !Number.isInteger(error.code)) {
      return new RPCError(ErrorCodes.InternalError, `malformed error object: ${JSON.stringify(error)}`, error);
    }
    const Class = byCode.get(error.code) ?? RPCError;
    return new Class(error.code, String(error.message ?? ''), error.data);
  }
}

// One subclass per code, so callers can `instanceof` or switch on `err.code`.
export class ParseError extends RPCError {}
export class InvalidRequest extends RPCError {}
export class MethodNotFound extends RPCError {}
/** -32602; `data.path` is a JSON Pointer to the bad field. */
export class InvalidParams extends RPCError {}
export class InternalError extends RPCError {}
export class RequestCancelled extends RPCError {}
/** -32001: network error, timeout or 5xx; `data.retryable` is true. */
export class BackendUnavailable extends RPCError {}
/** -32002: the backend answered 4xx; `data.status` is the HTTP status. */
export class BackendRejected extends RPCError {}
/** -32003: the backend answered 401 or 403. */
export class Unauthorized extends RPCError {}
export class UnknownKindOrList extends RPCError {}
export class ServerShuttingDown extends RPCError {}

const byCode = new Map([
  [ErrorCodes.ParseError, ParseError],
  [ErrorCodes.InvalidRequest, InvalidRequest],
  [ErrorCodes.MethodNotFound, MethodNotFound],
  [ErrorCodes.InvalidParams, InvalidParams],
  [ErrorCodes.InternalError, InternalError],
  [ErrorCodes.RequestCancelled, RequestCancelled],
  [ErrorCodes.BackendUnavailable, BackendUnavailable],
  [ErrorCodes.BackendRejected, BackendRejected],
  [ErrorCodes.Unauthorized, Unauthorized],
  [ErrorCodes.UnknownKindOrList, UnknownKindOrList],
  [ErrorCodes.ServerShuttingDown, ServerShuttingDown],
]);

/**
 * The connection is gone (or not there yet, while reconnecting). `code` is
 * 'NETMODEL_CONNECTION_LOST' for a request that was sent and may or may not have been
 * applied, 'NETMODEL_NOT_CONNECTED' for one that was never sent, 'NETMODEL_CLOSED'
 * after close().
 */
export class ConnectionLostError extends Error {
  constructor(message, code = 'NETMODEL_CONNECTION_LOST', options) {
    super(message, options);
    this.name = 'ConnectionLostError';
    this.code = code;
  }

  /** ClientErrorCodes.ConnectionLost when it was sent, NotConnected when it never was (or after close()). */
  get rpcCode() {
    return this.code === 'NETMODEL_CONNECTION_LOST' ? ClientErrorCodes.ConnectionLost : ClientErrorCodes.NotConnected;
  }
}
