// generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
// Types of protocol.js: the protocol table every netmodel client shares.

export declare const ErrorCodes: Readonly<{
  ParseError: -32700;
  InvalidRequest: -32600;
  MethodNotFound: -32601;
  InvalidParams: -32602;
  InternalError: -32603;
  RequestCancelled: -32800;
  BackendUnavailable: -32001;
  BackendRejected: -32002;
  Unauthorized: -32003;
  UnknownKindOrList: -32004;
  ServerShuttingDown: -32005;
}>;

export declare const ClientErrorCodes: Readonly<{
  ConnectionLost: -31999;
  Timeout: -31998;
  NotConnected: -31997;
  Cancelled: -31996;
}>;

export declare const DefaultSocket: Readonly<{
  env: "XDG_RUNTIME_DIR";
  underEnv: "netmodel/netmodel.sock";
  fallback: "/tmp/netmodel-{uid}/netmodel.sock";
}>;

export declare const TopicShorthands: readonly ["entity", "entity:KIND", "entity:KIND/ID", "list:NAME", "stats", "mutations"];
export declare const TopicShorthandsText: "entity, entity:KIND, entity:KIND/ID, list:NAME, stats or mutations";
export declare const ListParamsDropNull: true;
export declare function newerVersion(version: number, held: number): boolean;
