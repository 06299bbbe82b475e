;;; netmodel-rpc.el --- The netmodel connection over jsonrpc.el  -*- lexical-binding: t; -*-

;;; Commentary:

;; One JSON-RPC connection to netmodel: a running server's Unix socket, or a
;; spawned `netmodel serve' over stdio.  jsonrpc.el makes the process and writes
;; Content-Length framing (the server detects the framing per connection from the
;; first byte); reading, request ids and answers are ours: jsonrpc.el 1.0.14 drops
;; a message its parser refuses (Emacs 28 refuses \u0000), ignores an error
;; without an id, restarts ids on every connection and prints its own notices.
;; Requests the server never answered fail on a lost connection; a socket
;; connection comes back with backoff, a spawned server is not started again
;; behind the user's back, and one that cannot start is tried a bounded number of
;; times.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)
(require 'netmodel-protocol)

(declare-function netmodel--on-notification "netmodel")
(declare-function netmodel--on-connect "netmodel")
(declare-function netmodel--end-subscriptions "netmodel")
(defvar netmodel--subs)

(defgroup netmodel nil
  "Follow buttons and lists backed by a netmodel server."
  :group 'comm
  :prefix "netmodel-")

(defcustom netmodel-program "netmodel"
  "The netmodel executable, started as `PROGRAM serve' when no server listens."
  :type 'string)

(defcustom netmodel-serve-args nil
  "More arguments of a spawned `netmodel serve', e.g. (\"--simulate\" \"latency=500\")."
  :type '(repeat string))

(defcustom netmodel-socket nil
  "The server's socket: nil for the default one (`netmodel-default-socket').
The symbol `none' spawns a server that serves this Emacs only, over stdio."
  :type '(choice (const :tag "Default socket" nil)
                 (const :tag "No socket (spawn, stdio only)" none)
                 (file :tag "Socket path")))

(defcustom netmodel-spawn t
  "Whether to start `netmodel serve' when no server listens on the socket."
  :type 'boolean)

(defcustom netmodel-state-dir nil
  "The spawned server's state folder (--state-dir), or nil for its default."
  :type '(choice (const :tag "Server's default" nil) directory))

(defcustom netmodel-spawn-max-attempts 3
"Starts of a server that exits before answering, before giving up.
Then the error (with the server's stderr) is shown once, and no server is
started again until `netmodel-connect'."
  :type 'natnum)

(defcustom netmodel-reconnect-max-attempts nil
  "Reconnect tries before giving up, or nil to try for ever."
  :type '(choice (const :tag "For ever" nil) natnum))

(defcustom netmodel-events-buffer-size 0
  "Characters of jsonrpc.el's *netmodel events* log of messages; 0 for none.
Set it (e.g. to 2000000) before connecting, to see what is sent and received."
  :type 'natnum)

(defcustom netmodel-quiet nil
  "When non-nil, say nothing in the echo area about the connection."
  :type 'boolean)

(defface netmodel-follow '((t :inherit link))
  "A follow button that is not following.")
(defface netmodel-following '((t :inherit success))
  "A follow button that is following.")
(defface netmodel-pending '((t :inherit shadow))
  "A follow button whose change is not confirmed yet.")
(defface netmodel-error '((t :inherit error))
  "The error of a rolled-back change.")
(defface netmodel-sign-in '((t :inherit warning))
  "A change that waits for credentials.")

(define-error 'netmodel-error "netmodel request failed")

;; Errors made on this side of the wire, the same numbers in every netmodel client.
(defconst netmodel-connection-lost (alist-get 'connection-lost netmodel-protocol-client-errors))
(defconst netmodel-timeout (alist-get 'timeout netmodel-protocol-client-errors))
(defconst netmodel-not-connected (alist-get 'not-connected netmodel-protocol-client-errors))
(defconst netmodel-cancelled (alist-get 'cancelled netmodel-protocol-client-errors))

;;;; Values as jsonrpc.el reads them: objects are plists, false is :json-false, null nil.

(defun netmodel--true-p (v)
  "Whether the JSON value V is true."
  (and v (not (eq v :json-false))))

(defun netmodel--bool (v)
  "V as a JSON boolean."
  (if (netmodel--true-p v) t :json-false))

(defun netmodel--wire (v)
  "V with every empty `:params' as the object {} (nil would be sent as null)."
  (cond ((and (consp v) (keywordp (car v)))
         (cl-loop for (k x) on v by #'cddr
                  append (list k (if (and (eq k :params) (null x))
                                     (make-hash-table)
                                   (netmodel--wire x)))))
        ((vectorp v) (vconcat (mapcar #'netmodel--wire v)))
        ((consp v) (mapcar #'netmodel--wire v))
        (t v)))

(defun netmodel-default-socket ()
  "$XDG_RUNTIME_DIR/netmodel/netmodel.sock, else /tmp/netmodel-UID/netmodel.sock.
A relative $XDG_RUNTIME_DIR is ignored, as the XDG Base Directory
specification says."
  (let ((runtime (getenv netmodel-protocol-socket-env)))
    (if (and runtime (string-prefix-p "/" runtime))
        (concat runtime "/" netmodel-protocol-socket-under-env)
      (string-replace "{uid}" (number-to-string (user-uid)) netmodel-protocol-socket-fallback))))

(defun netmodel--socket ()
  "The socket path in use, or nil for none."
  (cond ((eq netmodel-socket 'none) nil)
        (netmodel-socket (expand-file-name netmodel-socket))
        (t (netmodel-default-socket))))

;;;; The connection

(defvar netmodel--conn nil "The jsonrpc connection, or nil.")
(defvar netmodel--process nil "The process of `netmodel--conn'.")
(defvar netmodel--status 'idle "One of idle, connected or waiting (a reconnect is scheduled).")
(defvar netmodel--transport nil "socket or spawn.")
(defvar netmodel--answered nil "Whether the current connection's server answered.")
(defvar netmodel--ever-answered nil
  "Whether any server answered since the last `netmodel-connect'.")
(cl-defstruct (netmodel--req (:constructor netmodel--make-req) (:copier nil))
  "A request waiting for its answer: its CALLBACK (ERR RESULT) and :timeout TIMER."
  id callback timer)

(defvar netmodel--callbacks (make-hash-table) "Request id -> `netmodel--req'.")
(defvar netmodel--next-id 0
  "The last request id used.  Ids never repeat in this Emacs, across connections
too: an old request's timer or a late answer cannot reach a new request.")
(defvar netmodel--spawn-failures 0 "Spawned servers that exited before answering, in a row.")
(defvar netmodel--spawn-gave-up nil
  "Why starting a server failed `netmodel-spawn-max-attempts' times, or nil.
No server is started while it is set; `netmodel-connect' clears it.")
(defvar netmodel--retry-timer nil)
(defvar netmodel--retry-secs 0)
(defvar netmodel--attempts 0 "Reconnect tries since a server last answered.")
(defvar netmodel--generation 0 "Counts connections: a version is compared within one only.")

(defun netmodel--say (format &rest args)
  "Show FORMAT with ARGS unless `netmodel-quiet'."
  (unless netmodel-quiet
    (apply #'message (concat "netmodel: " format) args)))

(defun netmodel--call (fn &rest args)
  "Call FN with ARGS; an error is reported, never thrown into jsonrpc's filter.
A throw there would leave the messages read with it unprocessed."
  (condition-case-unless-debug err
      (apply fn args)
    (error (message "netmodel: error in a callback: %s" (error-message-string err)))))

(defun netmodel--untrusted-folder (path)
  "Why the folder of socket PATH cannot be trusted, or nil.
Whoever can put a socket where we look receives what we send, tokens included."
  (let* ((folder (directory-file-name (file-name-directory path)))
         (attrs (file-attributes folder 'integer)))
    (when attrs
      (let ((refuse (format "refusing to connect to %s: its folder %s" path folder))
            (modes (file-modes folder 'nofollow)))
        (cond ((stringp (file-attribute-type attrs))
               (concat refuse " is a symbolic link; give the real path"))
              ((/= (file-attribute-user-id attrs) (user-uid))
               (format (concat "%s belongs to uid %d, not to this user (uid %d), "
                               "who could have put any server there")
                       refuse (file-attribute-user-id attrs) (user-uid)))
              ((/= 0 (logand modes #o022))
               (format "%s can be written by others (mode %04o); run `chmod 700 %s'"
                       refuse (logand modes #o7777) folder)))))))

(defun netmodel--open-socket (path)
  "A network process on socket PATH, or nil when nothing listens there."
  (condition-case nil
      (make-network-process :name "netmodel" :family 'local :service path
                            :coding 'utf-8-emacs-unix :noquery t)
    (file-error nil)))

(defun netmodel--spawn-command ()
  "The `netmodel serve' command line of a spawned server."
  (append (list netmodel-program "serve") netmodel-serve-args
          (and netmodel-state-dir
               (list (concat "--state-dir=" (expand-file-name netmodel-state-dir))))
          ;; Listen on the socket too, so other editors (and `netmodel call') share it.
          (and (netmodel--socket) (list (concat "--socket=" (netmodel--socket))))))

(defun netmodel--make-connection (process-fn transport)
  "Wrap the process PROCESS-FN makes in a jsonrpc connection over TRANSPORT."
  (cl-incf netmodel--generation)
  (let ((conn (make-instance 'jsonrpc-process-connection
                             :name "netmodel"
                             :process (lambda () (setq netmodel--process (funcall process-fn)))
                             :events-buffer-scrollback-size netmodel-events-buffer-size
                             :notification-dispatcher #'netmodel--on-notification
                             :on-shutdown #'netmodel--on-shutdown)))
    (let ((proc netmodel--process))
      ;; jsonrpc.el's own filter and sentinel are replaced (see the Commentary).
      (set-process-filter proc #'netmodel--filter)
      (set-process-sentinel proc #'netmodel--sentinel)
      (with-current-buffer (process-buffer proc) (setq netmodel--body-bytes nil)))
    (setq netmodel--conn conn netmodel--status 'connected netmodel--transport transport
          netmodel--answered nil)
    (netmodel--on-connect)
    conn))

(defun netmodel--connect ()
  "Connect now if not connected: the socket, else a spawned server.
Returns nil on success, else why not."
  (if (eq netmodel--status 'connected)
      nil
    (when netmodel--retry-timer (cancel-timer netmodel--retry-timer))
    (setq netmodel--retry-timer nil)
    (let* ((path (netmodel--socket))
           (why (and path (netmodel--untrusted-folder path)))
           (proc (and path (not why) (netmodel--open-socket path))))
      (cond (why why)
            (proc (netmodel--make-connection (lambda () proc) 'socket) nil)
            ((not netmodel-spawn)
             (if path (format "cannot connect to %s: nothing listens there" path)
               "no socket (`netmodel-socket' is none) and `netmodel-spawn' is nil"))
            (netmodel--spawn-gave-up netmodel--spawn-gave-up)
            ((not (executable-find netmodel-program))
             (format "cannot start %s: not found" netmodel-program))
            (t (netmodel--make-connection
                (lambda ()
                  (let* ((stderr (get-buffer-create "*netmodel stderr*"))
                         (proc (make-process :name "netmodel" :command (netmodel--spawn-command)
                                             :connection-type 'pipe :coding 'utf-8-emacs-unix
                                             :noquery t
                                             ;; jsonrpc.el reads the buffer it made under this name.
                                             :stderr stderr)))
                    ;; The stderr pipe is a process too: no question about it on exit.
                    (when-let ((pipe (get-buffer-process stderr)))
                      (set-process-query-on-exit-flag pipe nil))
                    proc))
                'spawn)
               nil)))))

(defun netmodel--stderr-tail (conn)
  "The last lines a spawned server of CONN wrote to stderr: they explain an exit."
  (let ((buf (ignore-errors (jsonrpc-stderr-buffer conn))))
    (if (buffer-live-p buf)
        (with-current-buffer buf
          (string-trim (buffer-substring-no-properties (max (point-min) (- (point-max) 2000))
                                                       (point-max))))
      "")))

(defun netmodel--fail-all (code message)
  "Answer every waiting request with the error CODE and MESSAGE.
Nothing is resent: a mutation may or may not have reached the server."
  (netmodel--fail-all-with (list :code code :message message)))

(defun netmodel--fail-all-with (err)
  "Answer every waiting request with the error plist ERR."
  (let ((waiting netmodel--callbacks))
    (setq netmodel--callbacks (make-hash-table))
    (maphash (lambda (_id req) (netmodel--finish req err nil)) waiting)))

(defun netmodel--finish (req err result)
  "Give REQ, no longer waiting, its answer (ERR or RESULT)."
  (when (netmodel--req-timer req) (cancel-timer (netmodel--req-timer req)))
  (netmodel--call (netmodel--req-callback req) err result))

(defun netmodel--on-shutdown (conn)
  "jsonrpc.el's word that CONN's process ended."
  (when (eq conn netmodel--conn)
    (let* ((proc netmodel--process)
           (tail (netmodel--stderr-tail conn))
           (why (if (eq netmodel--transport 'spawn)
                    (format "server exited (%s %d)%s"
                            (process-status proc) (process-exit-status proc)
                            (if (string-empty-p tail) "" (concat ": " tail)))
                  "connection closed by the server")))
      (setq netmodel--conn nil netmodel--status 'idle)
      (cond ((and (not netmodel--answered) (eq netmodel--transport 'spawn)
                  (>= (cl-incf netmodel--spawn-failures) netmodel-spawn-max-attempts))
             (netmodel--give-up-spawning why))
            ((not netmodel--answered) (netmodel--down why)) ; a failed start, not a lost server
            ((eq netmodel--transport 'spawn)
             ;; Our own server died: not started again behind the user's back (a crash
             ;; would loop); the next request or `netmodel-connect' starts one.
             (netmodel--fail-all netmodel-connection-lost why)
             (netmodel--say "connection lost (%s)" why)
             (netmodel--end-subscriptions netmodel-connection-lost why))
            (t (netmodel--fail-all netmodel-connection-lost why)
               (netmodel--say "connection lost, reconnecting (%s)" why)
               (setq netmodel--status 'waiting)
               (netmodel--retry))))))

(defvar netmodel--down-reported nil)

(defun netmodel--give-up-spawning (why)
  "The spawned server exited before answering, too often in a row, because WHY."
  (setq netmodel--spawn-gave-up
        (format "%s (started %d times; M-x netmodel-connect tries again)"
                why netmodel--spawn-failures))
  (netmodel--say "no server: %s" netmodel--spawn-gave-up)
  (netmodel--down netmodel--spawn-gave-up))

(defun netmodel--down (why)
  "No server could be reached or started, because WHY."
  (netmodel--fail-all netmodel-not-connected why)
  (unless netmodel--down-reported
    (setq netmodel--down-reported t)
    (netmodel--end-subscriptions netmodel-not-connected why))
  ;; Subscriptions (buttons, lists) want their server, also one not started yet.
  (if (and (or netmodel--ever-answered netmodel--subs)
           ;; after giving up, only a socket is worth watching (a server started by hand)
           (not (and netmodel--spawn-gave-up (null (netmodel--socket)))))
      (progn (setq netmodel--status 'waiting) (netmodel--retry))
    (setq netmodel--status 'idle)))

(defun netmodel--retry ()
  "Reconnect with backoff: 0.1 s doubling to 5 s, for subscriptions."
  (if (and netmodel-reconnect-max-attempts (>= netmodel--attempts netmodel-reconnect-max-attempts))
      (let ((why (format "gave up reconnecting after %d tries" netmodel--attempts)))
        (setq netmodel--status 'idle netmodel--attempts 0 netmodel--retry-secs 0)
        (netmodel--fail-all netmodel-connection-lost why)
        (netmodel--end-subscriptions netmodel-connection-lost why))
    (cl-incf netmodel--attempts)
    (setq netmodel--retry-secs
          (min 5 (if (zerop netmodel--retry-secs) 0.1 (* 2 netmodel--retry-secs))))
    (setq netmodel--retry-timer
          (run-with-timer netmodel--retry-secs nil
                          (lambda ()
                            (setq netmodel--retry-timer nil)
                            (when (eq netmodel--status 'waiting)
                              (when-let ((why (netmodel--connect)))
                                (netmodel--down why))))))))

(defun netmodel--answer (id err result)
  "Hand the answer (ERR or RESULT) of request ID to its callback, once."
  (let ((req (gethash id netmodel--callbacks)))
    (when req
      (remhash id netmodel--callbacks)
      (netmodel--finish req err result))))

(defun netmodel--heard ()
  "The server answered: it is up."
  (unless netmodel--answered
    (setq netmodel--answered t netmodel--ever-answered t netmodel--down-reported nil
          netmodel--attempts 0 netmodel--retry-secs 0 netmodel--spawn-failures 0)))

;;;; Reading messages

(defvar-local netmodel--body-bytes nil
  "In a process buffer: the length of the body being read, once its header is.")

(defun netmodel--filter (proc string)
  "Read the messages in STRING from PROC, then handle them.
Each message costs its size: the buffer only grows at its end, a header is
looked for only at its start, and a body is parsed once it is complete."
  (when (and (eq proc netmodel--process) (buffer-live-p (process-buffer proc)))
    (let ((conn (process-get proc 'jsonrpc-connection))
          (messages nil))
      (with-current-buffer (process-buffer proc)
        (let ((inhibit-read-only t) (more t))
          (goto-char (point-max))
          (insert string)
          (while more
            (goto-char (point-min))
            (cond ((not netmodel--body-bytes)
                   (if (not (search-forward "\r\n\r\n" (min (point-max) (+ (point-min) 4096)) t))
                       (setq more nil)
                     (let ((header (buffer-substring-no-properties (point-min) (point)))
                           (case-fold-search t))
                       (delete-region (point-min) (point))
                       (if (string-match "content-length: *\\([0-9]+\\)" header)
                           (setq netmodel--body-bytes (string-to-number (match-string 1 header)))
                         (netmodel--unreadable "a header without Content-Length" header)))))
                  ;; `position-bytes' of the end is known: no scan of the body
                  ((< (1- (position-bytes (point-max))) netmodel--body-bytes) (setq more nil))
                  (t (let ((end (byte-to-position (+ 1 netmodel--body-bytes))))
                       (push (netmodel--parse (point-min) end) messages)
                       (delete-region (point-min) end)
                       (setq netmodel--body-bytes nil)))))))
      ;; Handled out of the process buffer, which is consistent again: a callback may
      ;; wait for more output (`netmodel-request-sync'), which runs this filter again.
      (dolist (msg (nreverse messages))
        (when msg (netmodel--receive conn msg))))))

(defun netmodel--unreadable (why text)
  "Say that a message could not be read, because WHY; TEXT is its start."
  (message "netmodel: unreadable message (%s): %s" why (truncate-string-to-width text 200)))

(defun netmodel--parse (start end)
  "The message between START and END here, or nil (reported) if unreadable."
  (save-restriction
    (narrow-to-region start end)
    (goto-char (point-min))
    (condition-case err
        (json-parse-buffer :object-type 'plist :null-object nil :false-object :json-false)
      (json-error
       (or (netmodel--parse-with-nul)
           (progn (netmodel--unreadable (error-message-string err)
                                        (buffer-substring-no-properties (point-min) (point-max)))
                  nil))))))

(defun netmodel--parse-with-nul ()
  "The narrowed message holding \\u0000 escapes, which Emacs 28's parser refuses.
Each escape is read as a character the message does not hold, put back as NUL
in every string and key of the result.  Nil when there is no such escape."
  (goto-char (point-min))
  (when (search-forward "\\u0000" nil t)
    (let* ((text (buffer-substring-no-properties (point-min) (point-max)))
           (mark (netmodel--absent-char text))
           (case-fold-search nil))
      (with-temp-buffer
        (insert text)
        (goto-char (point-min))
        ;; Every escape, so that an escaped backslash before "u0000" is not taken for one.
        (while (search-forward "\\" nil t)
          (if (looking-at "u0000")
              (progn (delete-region (1- (point)) (+ (point) 5)) (insert mark))
            (forward-char 1)))
        (goto-char (point-min))
        (condition-case nil
            (netmodel--put-back-nul
             (json-parse-buffer :object-type 'plist :null-object nil :false-object :json-false)
             (string mark))
          (json-error nil))))))

(defun netmodel--absent-char (text)
  "A private-use character that TEXT holds neither as itself nor as an escape."
  (let ((c #xF0000) (case-fold-search t))
    (while (or (string-search (string c) text)
               (string-search (format "\\u%04x\\u%04x"
                                      (+ #xD800 (ash (- c #x10000) -10))
                                      (+ #xDC00 (logand (- c #x10000) #x3FF)))
                              text))
      (setq c (1+ c)))
    c))

(defun netmodel--put-back-nul (v mark)
  "V with MARK (a string) replaced by NUL in its strings and keys.
Emacs 28's parser leaves a key's name in UTF-8 bytes: MARK is found so."
  (let ((key-mark (encode-coding-string mark 'utf-8)))
    (cl-labels ((put-back (v)
                  (cond ((stringp v) (string-replace mark "\0" v))
                        ((vectorp v) (vconcat (mapcar #'put-back v)))
                        ((and (consp v) (keywordp (car v)))
                         (cl-loop for (k x) on v by #'cddr
                                  append (list (if (string-search key-mark (symbol-name k))
                                                   (intern (string-replace key-mark "\0"
                                                                           (symbol-name k)))
                                                 k)
                                               (put-back x))))
                        (t v))))
      (put-back v))))

(defun netmodel--receive (conn msg)
  "Handle MSG, a message from CONN's server."
  (when (and (> netmodel-events-buffer-size 0) (fboundp 'jsonrpc--log-event))
    (jsonrpc--log-event conn msg 'server))
  (let ((id (plist-get msg :id)) (method (plist-get msg :method)))
    (cond ((and method id)      ; the server asks nothing of its clients
           (jsonrpc-connection-send conn :id id :error '(:code -32601 :message "no methods here")))
          (method (netmodel--on-notification conn (intern method) (plist-get msg :params)))
          (t (netmodel--heard)
             (let ((err (plist-get msg :error)))
               (cond (id (netmodel--answer id err (and (not err) (plist-get msg :result))))
                     ;; An error without an id (-32700, -32600: a message it could not
                     ;; read or that was too big) is for a request the server cannot name.
                     (err (netmodel--fail-all-with err))))))))

(defun netmodel--sentinel (proc _change)
  "PROC ended: the connection is lost."
  (unless (process-live-p proc)
    (let ((conn (process-get proc 'jsonrpc-connection)))
      ;; What `jsonrpc-shutdown' waits for.
      (process-put proc 'jsonrpc-sentinel-cleanup-started t)
      (delete-process proc)
      (when conn (netmodel--on-shutdown conn)))))

(cl-defun netmodel-request (method params &optional callback &key timeout)
  "Send request METHOD with PARAMS (a plist); call CALLBACK with (ERR RESULT).
ERR is the JSON-RPC error object as a plist (:code :message :data), or nil.
TIMEOUT (seconds): when it elapses first, the request is cancelled and ERR has
the code `netmodel-timeout'.  Returns the request id, for `netmodel-cancel'.
Params the server could not read (strings that are not Unicode) signal at once."
  (let ((callback (or callback #'ignore))
        (why (netmodel--connect)))
    (if why
        (progn (netmodel--down why)
               (run-at-time 0 nil callback (list :code netmodel-not-connected :message why) nil)
               nil)
      (let* ((id (1+ netmodel--next-id))
             (req (netmodel--make-req :id id :callback callback)))
        ;; Encoding errors (strings that are not Unicode) signal before anything is sent.
        ;; A server that exited before Emacs heard of it (a spawn that fails at once)
        ;; makes the write fail: that is a lost connection, told to the callback as
        ;; one, never an error thrown into a timer or a hook.
        (condition-case failure
            (jsonrpc-connection-send netmodel--conn :id id :method (intern method)
                                     :params (or (netmodel--wire params) (make-hash-table)))
          (error
           (let ((proc (jsonrpc--process netmodel--conn)))
             (when (and proc (process-live-p proc)) (signal (car failure) (cdr failure))))
           (setq netmodel--next-id id)
           (run-at-time 0 nil callback
                        (list :code netmodel-connection-lost
                              :message (format "the server exited before %s could be sent" method))
                        nil)
           (cl-return-from netmodel-request nil)))
        (setq netmodel--next-id id)
        (puthash id req netmodel--callbacks)
        (when timeout
          (setf (netmodel--req-timer req)
                (run-with-timer timeout nil #'netmodel--timed-out req
                                (format "%s timed out after %s s" method timeout))))
        id))))

(defun netmodel--timed-out (req message)
  "REQ's :timeout elapsed: cancel it with MESSAGE, if it still waits."
  (when (eq (gethash (netmodel--req-id req) netmodel--callbacks) req)
    (netmodel-cancel (netmodel--req-id req) (list :code netmodel-timeout :message message))))

(defun netmodel-cancel (id &optional err)
  "Cancel request ID: its callback gets ERR (default: `netmodel-cancelled') now.
The server is told ($/cancelRequest).  Nil if it was answered already."
  (when (gethash id netmodel--callbacks)
    (when (and netmodel--conn (jsonrpc-running-p netmodel--conn))
      (jsonrpc-notify netmodel--conn '$/cancelRequest (list :id id)))
    (netmodel--answer id (or err (list :code netmodel-cancelled
                                       :message (format "request %s cancelled" id)))
                      nil)
    t))

(defun netmodel-notify (method params)
  "Send the notification METHOD with PARAMS."
  (unless (netmodel--connect)
    (jsonrpc-notify netmodel--conn (intern method) (or (netmodel--wire params) (make-hash-table)))))

(defun netmodel-request-sync (method params &optional timeout)
  "Send METHOD with PARAMS and wait at most TIMEOUT seconds (default 10).
Returns the result, or signals `netmodel-error' with the error plist."
  (let* ((timeout (or timeout 10)) done err result)
    (netmodel-request method params (lambda (e r) (setq done t err e result r)) :timeout timeout)
    ;; Not `jsonrpc-request': it throws out of the process filter, leaving the
    ;; messages that came with the answer unread until more arrive.
    (let ((deadline (+ (float-time) timeout 1)))
      (while (and (not done) (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (cond ((not done) (signal 'netmodel-error (list :code netmodel-timeout :message "timed out")))
          (err (signal 'netmodel-error err))
          (t result))))

(defun netmodel-connect ()
  "Connect to the server now (the socket, or a spawned one), and subscribe again."
  (interactive)
  (netmodel-disconnect)
  (setq netmodel--ever-answered nil netmodel--down-reported nil
        netmodel--spawn-gave-up nil netmodel--spawn-failures 0)
  (when-let ((why (netmodel--connect)))
    (netmodel--down why)
    (when (called-interactively-p 'any) (user-error "netmodel: %s" why))))

(defun netmodel-disconnect ()
  "Close the connection; a spawned server exits (it sees EOF on its stdin)."
  (interactive)
  (when netmodel--retry-timer (cancel-timer netmodel--retry-timer))
  (setq netmodel--retry-timer nil)
  (let ((conn netmodel--conn))
    (setq netmodel--conn nil netmodel--status 'idle netmodel--attempts 0 netmodel--retry-secs 0
          netmodel--spawn-failures 0 netmodel--spawn-gave-up nil netmodel--down-reported nil)
    (when conn
      (let ((proc netmodel--process))
        (when (and (eq netmodel--transport 'spawn) (process-live-p proc))
          ;; EOF, not a kill: the server persists pending intent before it exits.
          (ignore-errors (process-send-eof proc))
          (with-timeout (2) (while (process-live-p proc) (accept-process-output proc 0.05))))
        (delete-process proc)))
    (netmodel--fail-all netmodel-connection-lost "connection closed (netmodel-disconnect)")))

(defun netmodel--on-kill-emacs ()
  "Tell a spawned server this Emacs is leaving, without waiting for it.
It exits on EOF after persisting pending intent; the exit closes the pipe
anyway."
  (when (and netmodel--conn (eq netmodel--transport 'spawn))
    (ignore-errors (process-send-eof netmodel--process))))

(add-hook 'kill-emacs-hook #'netmodel--on-kill-emacs)

(defun netmodel-info ()
  "A plist (:status :transport :pid :socket) of the connection."
  (list :status netmodel--status :transport (and netmodel--conn netmodel--transport)
        :pid (and netmodel--conn (eq netmodel--transport 'spawn)
                  (process-id netmodel--process))
        :socket (netmodel--socket)))

(provide 'netmodel-rpc)
;;; netmodel-rpc.el ends here
