;;; emacs_push.el --- a jsonrpc.el subscriber that sends nothing after its follow -*- lexical-binding: t -*-

;; Run:  NETMODEL_BIN=... NM_OUT=out.json [NM_SOCKET=path] [NM_ARGS="--simulate ..."] \
;;         emacs --batch -Q -l emacs_push.el
;;
;; jsonrpc.el (Emacs 28) throws out of its process filter when the reply of a
;; synchronous `jsonrpc-request' arrives: whatever follows that reply in the same
;; read stays unprocessed until the server writes again.  So this is the client
;; that shows whether a settled state is pushed on its own: subscribe, follow,
;; then only wait.  Writes what it saw to $NM_OUT for test_clients.py.

(require 'jsonrpc)
(require 'cl-lib)

(defvar nm-out (or (getenv "NM_OUT") (error "NM_OUT not set")))
(defvar nm-bin (or (getenv "NETMODEL_BIN") (error "NETMODEL_BIN not set")))
(defvar nm-socket (getenv "NM_SOCKET"))
(defvar nm-args (split-string (or (getenv "NM_ARGS") "") " " t))
(defvar nm-states nil)
(defvar nm-results (make-hash-table :test 'equal))

(defun nm-put (key value) (puthash key value nm-results))

(defun nm-process ()
  (if nm-socket
      (make-network-process :name "netmodel" :family 'local :service nm-socket :noquery t
                            :coding 'utf-8-emacs-unix)
    (make-process :name "netmodel" :command (append (list nm-bin "serve") nm-args)
                  :connection-type 'pipe :coding 'utf-8-emacs-unix :noquery t
                  :stderr (get-buffer-create "*netmodel stderr*"))))

(condition-case err
    (let* ((conn (make-instance
                  'jsonrpc-process-connection :name "netmodel"
                  :notification-dispatcher
                  (lambda (_conn method params)
                    (when (eq method 'stateChanged)
                      (push (plist-get params :state) nm-states)))
                  :process #'nm-process))
           (topic (list :type "entity" :kind "artist" :id "kaws")))
      (jsonrpc-request conn :subscribe (list :topics (vector topic)) :timeout 10)
      (nm-put "follow" (jsonrpc-request conn :follow (list :kind "artist" :id "kaws") :timeout 10))
      ;; The last request: from here on Emacs only waits.
      (let ((start (float-time)) settled)
        (while (and (not settled) (< (- (float-time) start) 2.0))
          (accept-process-output nil 0.02)
          (setq settled (cl-find-if (lambda (s) (and (eq (plist-get s :confirmed) t)
                                                     (eq (plist-get s :pending) :json-false)))
                                    nm-states)))
        (nm-put "settled" (if settled t :json-false))
        (nm-put "waited_ms" (round (* 1000 (- (float-time) start)))))
      (nm-put "states" (vconcat (reverse nm-states))))
  (error (nm-put "elisp_error" (format "%S" err))))

(let ((coding-system-for-write 'utf-8-unix))
  (with-temp-file nm-out
    (insert (json-serialize nm-results :null-object nil :false-object :json-false))))
(kill-emacs 0)
