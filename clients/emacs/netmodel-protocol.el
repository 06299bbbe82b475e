;;; netmodel-protocol.el --- The protocol table every netmodel client shares  -*- lexical-binding: t; -*-

;; generated from schema/openrpc.json by scripts/gen-protocol; do not edit.

;;; Commentary:

;; schema/openrpc.json: components.errors and x-netmodel-protocol (docs/clients.md).

;;; Code:

(defconst netmodel-protocol-errors
  '((parse-error . -32700)
    (invalid-request . -32600)
    (method-not-found . -32601)
    (invalid-params . -32602)
    (internal-error . -32603)
    (request-cancelled . -32800)
    (backend-unavailable . -32001)
    (backend-rejected . -32002)
    (unauthorized . -32003)
    (unknown-kind-or-list . -32004)
    (server-shutting-down . -32005))
  "Errors the server sends (components.errors), by the clients' names.")

(defconst netmodel-protocol-client-errors
  '((connection-lost . -31999)
    (timeout . -31998)
    (not-connected . -31997)
    (cancelled . -31996))
  "Errors made by the client, outside JSON-RPC's reserved range.")

;; The default socket: $ENV/UNDER-ENV when the variable is set and not empty, else
;; FALLBACK with {uid} replaced.
(defconst netmodel-protocol-socket-env "XDG_RUNTIME_DIR")
(defconst netmodel-protocol-socket-under-env "netmodel/netmodel.sock")
(defconst netmodel-protocol-socket-fallback "/tmp/netmodel-{uid}/netmodel.sock")

(defconst netmodel-protocol-topic-shorthands
  '("entity" "entity:KIND" "entity:KIND/ID" "list:NAME" "stats" "mutations")
  "Topic shorthands (x-netmodel-protocol.topicShorthands).")
(defconst netmodel-protocol-topic-shorthands-text "entity, entity:KIND, entity:KIND/ID, list:NAME, stats or mutations")

(defconst netmodel-protocol-list-params-drop-null t
  "Whether null members of list params are dropped from the list's key.")

(defun netmodel-protocol-newer-version (version held)
  "Whether a state at VERSION is delivered where one at HELD is held."
  (> version held))

(provide 'netmodel-protocol)
;;; netmodel-protocol.el ends here
