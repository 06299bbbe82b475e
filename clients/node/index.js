// netmodel-client: a Node client for netmodel (JSON-RPC 2.0 network models).
export { NetmodelClient, TimeoutError } from './lib/client.js';
export { Subscription } from './lib/subscription.js';
export { UntrustedSocketError } from './lib/trust.js';
export { StateStore, defaultSocketPath, mutationFailed, mutationMessage, stateKey, topic } from './lib/state.js';
export {
  BackendRejected,
  BackendUnavailable,
  ClientErrorCodes,
  ConnectionLostError,
  ErrorCodes,
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
} from './lib/errors.js';
