-- generated from schema/openrpc.json by scripts/gen-protocol; do not edit.
-- The protocol table every netmodel client shares (schema/openrpc.json:
-- components.errors and x-netmodel-protocol; docs/clients.md).
local M = {}

-- Errors the server sends (components.errors), by the clients' names.
M.errors = {
  PARSE_ERROR = -32700,
  INVALID_REQUEST = -32600,
  METHOD_NOT_FOUND = -32601,
  INVALID_PARAMS = -32602,
  INTERNAL_ERROR = -32603,
  REQUEST_CANCELLED = -32800,
  BACKEND_UNAVAILABLE = -32001,
  BACKEND_REJECTED = -32002,
  UNAUTHORIZED = -32003,
  UNKNOWN_KIND_OR_LIST = -32004,
  SERVER_SHUTTING_DOWN = -32005,
}

-- Errors made by the client, outside JSON-RPC's reserved range (x-netmodel-protocol.clientErrors).
M.client_errors = {
  CONNECTION_LOST = -31999,
  TIMEOUT = -31998,
  NOT_CONNECTED = -31997,
  CANCELLED = -31996,
}

-- The default socket: $env/under_env when the variable is set and not empty, else
-- fallback with {uid} replaced.
M.socket = {
  env = 'XDG_RUNTIME_DIR',
  under_env = 'netmodel/netmodel.sock',
  fallback = '/tmp/netmodel-{uid}/netmodel.sock',
}

-- Topic shorthands (x-netmodel-protocol.topicShorthands).
M.topic_shorthands = { 'entity', 'entity:KIND', 'entity:KIND/ID', 'list:NAME', 'stats', 'mutations' }
M.topic_shorthands_text = 'entity, entity:KIND, entity:KIND/ID, list:NAME, stats or mutations'

-- List params (x-netmodel-protocol.listParams): null members are dropped from the key.
M.list_params_drop_null = true

-- Whether a state at `version` is delivered where one at `held` is held (x-netmodel-protocol.versions).
function M.newer_version(version, held)
  return version > held
end

return M
