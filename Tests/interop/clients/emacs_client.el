;;; emacs_client.el --- drive `netmodel serve' with Emacs's jsonrpc.el -*- lexical-binding: t -*-

;; Run:  NETMODEL_BIN=... NM_OUT=out.json emacs --batch -Q -l emacs_client.el
;;
;; Writes what it saw as JSON to $NM_OUT; test_clients.py asserts on it.
;;
;; What jsonrpc.el (Emacs 28.2) puts on the wire:
;;   * header: only "Content-Length: N\r\n\r\n" (Content-Type is commented
;;     out in jsonrpc-connection-send);
;;   * ids: integers 1, 2, 3, ... per connection; replies are looked up in an
;;     `eql' hash table, so the id must come back as the same integer
;;     (not "1", not 1.0);
;;   * keys in order jsonrpc, id, method, params; "/" is NOT escaped; observed:
;;     {"jsonrpc":"2.0","id":2,"method":"stats","params":null};
;;   * PARAMS is mandatory in the API and nil is serialised with
;;     :null-object nil, so `(jsonrpc-request conn :stats nil)' sends
;;     "params":null -- and so does `(jsonrpc-notify conn :exit nil)';
;;     an empty object needs (make-hash-table), an empty array [] a vector;
;;   * method keywords lose their colon (:stats -> "stats").
;; What it expects back:
;;   * headers matched by the regexp "\(?:.*: .*\r\n\)*Content-Length: *N\r\n..."
;;     searched within 100 chars: every header line needs ": " (colon SPACE);
;;   * replies decoded to plists: "result":null and "result":{} both read as nil.

(require 'jsonrpc)
(require 'cl-lib)

(defvar nm-out (or (getenv "NM_OUT") (error "NM_OUT not set")))
(defvar nm-bin (or (getenv "NETMODEL_BIN") (error "NETMODEL_BIN not set")))
(defvar nm-results (make-hash-table :test 'equal))
(defvar nm-notifications nil)
(defvar nm-proc nil)
(defvar nm-conn nil)

(defun nm-put (key value) (puthash key value nm-results))

(defun nm-call (name method params)
  "Call METHOD with PARAMS, store result or error under NAME."
  (condition-case err
      (let ((result (jsonrpc-request nm-conn method params :timeout 10)))
        (nm-put name (list :ok t :result result)))
    (jsonrpc-error
     (nm-put name (list :ok :json-false
                        :code (alist-get 'jsonrpc-error-code (cdr err))
                        :message (format "%s" (alist-get 'jsonrpc-error-message (cdr err))))))))

(defun nm-write ()
  (let ((coding-system-for-write 'utf-8-unix))
    (with-temp-file nm-out
      (insert (json-serialize nm-results :null-object nil :false-object :json-false)))))

(condition-case err
    (progn
      (setq nm-conn
            (make-instance
             'jsonrpc-process-connection
             :name "netmodel"
             :notification-dispatcher
             (lambda (_conn method _params) (push (symbol-name method) nm-notifications))
             :process
             (lambda ()
               (setq nm-proc
                     (make-process
                      :name "netmodel"
                      :command (list nm-bin "serve" "--log-level" "debug")
                      :connection-type 'pipe
                      :coding 'utf-8-emacs-unix
                      :noquery t
                      ;; jsonrpc.el couples to a buffer named "*NAME stderr*".
                      :stderr (get-buffer-create "*netmodel stderr*"))))))
      ;; initialize the way eglot does: plists, {} as an empty hash table.
      (nm-call "initialize" :initialize
               (list :processId (emacs-pid)
                     :clientInfo (list :name "Emacs" :version emacs-version)
                     :rootPath nil
                     :rootUri nil
                     :initializationOptions (make-hash-table)
                     :capabilities (make-hash-table)))
      (jsonrpc-notify nm-conn :initialized (make-hash-table))
      (nm-call "stats_nil" :stats nil)                  ; "params":null
      (nm-call "stats_empty_object" :stats (make-hash-table)) ; "params":{}
      (nm-call "stats_empty_array" :stats [])           ; "params":[]
      (nm-call "unknown" :netmodel/noSuchMethod nil)
      (nm-call "stats_final" :stats nil)
      (nm-call "shutdown" :shutdown nil)
      (jsonrpc-notify nm-conn :exit nil)                ; "params":null
      (with-timeout (10 (nm-put "exit_timed_out" t))
        (while (process-live-p nm-proc)
          (accept-process-output nil 0.05)))
      (nm-put "exit_status" (process-exit-status nm-proc))
      (nm-put "last_id" (jsonrpc--next-request-id nm-conn)))
  (error (nm-put "elisp_error" (format "%S" err))))

(nm-put "notifications" (vconcat (reverse nm-notifications)))
(let ((buf (get-buffer " *netmodel stderr*")))
  (when buf
    (nm-put "stderr_bytes" (with-current-buffer buf (buffer-size)))))
(nm-write)
(when (and nm-proc (process-live-p nm-proc)) (delete-process nm-proc))
(kill-emacs 0)
