// generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
// The protocol table every netmodel client shares (schema/openrpc.json: components.errors
// and x-netmodel-protocol; docs/clients.md).

/** The JSON-RPC and application error codes of schema/openrpc.json (components.errors). */
export const ErrorCodes = Object.freeze({
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  RequestCancelled: -32800,
  BackendUnavailable: -32001,
  BackendRejected: -32002,
  Unauthorized: -32003,
  UnknownKindOrList: -32004,
  ServerShuttingDown: -32005,
});

/**
 * Errors made by the client, not the server, as numbers: outside JSON-RPC's reserved
 * range (-32768…-32000), the same in every netmodel client (x-netmodel-protocol.clientErrors).
 */
export const ClientErrorCodes = Object.freeze({
  ConnectionLost: -31999,
  Timeout: -31998,
  NotConnected: -31997,
  Cancelled: -31996,
});

/** The default socket: `${env}/${underEnv}` when the variable is set and not empty, else `fallback` with {uid} replaced. */
export const DefaultSocket = Object.freeze({
  env: "XDG_RUNTIME_DIR",
  underEnv: "netmodel/netmodel.sock",
  fallback: "/tmp/netmodel-{uid}/netmodel.sock",
});

/** Topic shorthands (x-netmodel-protocol.topicShorthands). */
export const TopicShorthands = Object.freeze(["entity", "entity:KIND", "entity:KIND/ID", "list:NAME", "stats", "mutations"]);
export const TopicShorthandsText = "entity, entity:KIND, entity:KIND/ID, list:NAME, stats or mutations";

/** List params (x-netmodel-protocol.listParams): null members are dropped from the key. */
export const ListParamsDropNull = true;

/** Whether a state at `version` is delivered where one at `held` is held (x-netmodel-protocol.versions). */
export function newerVersion(version, held) {
  return version > held;
}
