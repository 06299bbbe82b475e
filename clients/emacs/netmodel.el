;;; netmodel.el --- Follow buttons and lists backed by a netmodel server  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (jsonrpc "1.0.14"))
;; Keywords: comm, tools
;; URL: https://github.com/netmodel/netmodel

;;; Commentary:

;; A client of netmodel on Emacs's own jsonrpc.el: follow buttons as overlays kept
;; current by the server's notifications (pending, rolled back with the error),
;; M-x `netmodel-follow', `netmodel-unfollow', `netmodel-toggle', a `netmodel-list'
;; buffer, and `netmodel-request' / `netmodel-subscribe' for anything else.  It
;; connects to a running server's socket, or starts `netmodel serve' (which then
;; also listens on the socket for other editors, and exits with its Emacs), and
;; reconnects and subscribes again when the server restarts.
;; See clients/emacs/README.md.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'netmodel-protocol)
(require 'netmodel-rpc)

;;;; Versions: a state is delivered only when newer than the one held

(defvar netmodel--instance nil
  "The server process's instance (subscribe answers), or nil while unknown.")

(defun netmodel--era ()
  "What versions are compared within: the server process, else the connection.
Versions grow per server process; a restart on another state folder may count
lower."
  (or netmodel--instance (format "connection %d" netmodel--generation)))

(defun netmodel--newer (held key state)
  "Whether STATE (under KEY) is newer than what HELD holds; then hold it.
HELD is a hash table.
An equal version is the same state seen twice (a reply and a notification)."
  (let ((h (gethash key held))
        (version (or (plist-get state :version) 0)))
    (if (and h (equal (car h) (netmodel--era))
             (not (netmodel-protocol-newer-version version (cdr h))))
        nil
      (puthash key (cons (netmodel--era) version) held)
      t)))

(defun netmodel--json-text (v)
  "V as compact JSON, as the server writes it."
  (decode-coding-string (json-serialize v :null-object nil :false-object :json-false) 'utf-8))

(defun netmodel--members (params)
  "The (NAME . VALUE) members of PARAMS, a plist, a hash table or an alist."
  (cond ((hash-table-p params)
         (let (out) (maphash (lambda (k v) (push (cons (format "%s" k) v) out)) params) out))
        ((and (consp params) (keywordp (car params)))
         (cl-loop for (k v) on params by #'cddr collect (cons (substring (symbol-name k) 1) v)))
        (t (mapcar (lambda (m) (cons (format "%s" (car m)) (cdr m))) params))))

(defun netmodel-params-key (params)
  "The canonical text of list PARAMS, the server's ListState `params'.
Null (nil) members dropped, as the server drops them; keys sorted by code point."
  (let ((members (cl-remove-if (lambda (m) (and netmodel-protocol-list-params-drop-null
                                                (null (cdr m))))
                               (netmodel--members params))))
    (concat "{"
            (mapconcat (lambda (m)
                         (concat (netmodel--json-text (car m)) ":" (netmodel--json-text (cdr m))))
                       (sort members (lambda (a b) (string< (car a) (car b))))
                       ",")
            "}")))

(defun netmodel--key (state)
  "The key of STATE: its list and params, or its kind/id."
  (if (plist-get state :list)
      (concat "list\0" (plist-get state :list) "\0" (netmodel-params-key (plist-get state :params)))
    (format "%s/%s" (or (plist-get state :kind) "") (or (plist-get state :id) ""))))

;;;; Entity states seen, for toggling

(defvar netmodel--known (make-hash-table :test #'equal) "kind/id -> newest EntityState seen.")
(defvar netmodel--known-versions (make-hash-table :test #'equal))

(defun netmodel--remember (state)
  "Keep STATE if it is an EntityState newer than the one known."
  (when (and (consp state) (plist-get state :kind) (plist-get state :id)
             (netmodel--newer netmodel--known-versions (netmodel--key state) state))
    (puthash (netmodel--key state) state netmodel--known)))

(defun netmodel-state (kind id)
  "The newest EntityState seen of KIND/ID, or nil."
  (gethash (format "%s/%s" kind id) netmodel--known))

(defun netmodel-needs-credentials-p (state)
  "Whether STATE's intent waits for credentials: pending with -32003 (401/403).
The server sends it again once `configure' sets a token."
  (and (consp state) (netmodel--true-p (plist-get state :pending))
       (equal (plist-get (plist-get state :error) :code)
              (alist-get 'unauthorized netmodel-protocol-errors))))

;;;; Subscriptions

(cl-defstruct (netmodel-sub (:constructor netmodel--make-sub) (:copier nil))
  "A subscription made here; it survives reconnects."
  topics on-state on-error (held (make-hash-table :test #'equal)) name instance closed error
  ;; The newest figures of a `stats' topic, also given to on-state.
  stats
  ;; The version up to which it has every change (its subscribe answer's `version',
  ;; then each `through' of the connection): a reconnect resumes from it.  `reset':
  ;; the last answer's, nil when it was resumed (only what changed while away).
  resume-version reset)

(defvar netmodel--subs nil "Subscriptions made here.")
(defvar netmodel--by-name (make-hash-table :test #'equal) "Server's name -> sub, this connection.")
(defvar netmodel--early (make-hash-table :test #'equal)
  "Subscription name -> key -> state, come before that subscribe's answer.")
(defvar netmodel--subscribing 0 "Subscribe requests waiting for their answer.")

(defun netmodel--deliver (sub state)
  "Give STATE to SUB when it is newer than the one SUB holds."
  (when (netmodel--newer (netmodel-sub-held sub) (netmodel--key state) state)
    (netmodel--remember state)
    (netmodel--call (netmodel-sub-on-state sub) state)))

(defun netmodel--saw-version (sub version)
  "SUB has every change up to VERSION."
  (when (and (integerp version) (>= version (or (netmodel-sub-resume-version sub) 0)))
    (setf (netmodel-sub-resume-version sub) version)))

(defun netmodel--subscribe-params (sub)
  "SUB's topics, and where it resumes.
Only what changed while away, when the same server process still knows;
not after an error was shown (a state delivered again clears it)."
  (let ((params (list :topics (vconcat (netmodel-sub-topics sub)))))
    (if (and (netmodel-sub-instance sub) (netmodel-sub-resume-version sub) (not (netmodel-sub-error sub)))
        (append params (list :since (list :instance (netmodel-sub-instance sub)
                                          :version (netmodel-sub-resume-version sub))))
      params)))

(defun netmodel--send-subscribe (sub)
  "Ask the server for SUB's topics."
  (setf (netmodel-sub-name sub) nil)
  (cl-incf netmodel--subscribing)
  (let ((gen netmodel--generation))
    (netmodel-request
     "subscribe" (netmodel--subscribe-params sub)
     (lambda (err res)
       (when (= gen netmodel--generation) ; else the new connection subscribes it
         (cl-decf netmodel--subscribing)
         (let* ((name (plist-get res :subscription))
                (early (and name (gethash name netmodel--early))))
           (if (zerop netmodel--subscribing)
               (clrhash netmodel--early) ; no answer is left to claim them
             (when name (remhash name netmodel--early)))
           (when (stringp (plist-get res :instance))
             (setq netmodel--instance (plist-get res :instance)))
           (cond ((netmodel-sub-closed sub)
                  (when name (netmodel-request "unsubscribe" (list :subscription name))))
                 (err (setf (netmodel-sub-error sub) err)
                      ;; The end of a connection is told once, by `netmodel--end-subscriptions'.
                      (when (and (netmodel-sub-on-error sub)
                                 (not (memql (plist-get err :code)
                                             (list netmodel-connection-lost netmodel-not-connected))))
                        (netmodel--call (netmodel-sub-on-error sub) err)))
                 (t (unless (equal (netmodel-sub-instance sub) (plist-get res :instance))
                      (setf (netmodel-sub-resume-version sub) nil))
                    (setf (netmodel-sub-name sub) name (netmodel-sub-error sub) nil
                          (netmodel-sub-instance sub) (plist-get res :instance)
                          (netmodel-sub-reset sub) (netmodel--true-p (plist-get res :reset)))
                    (netmodel--saw-version sub (plist-get res :version))
                    (puthash name sub netmodel--by-name)
                    (mapc (lambda (s) (netmodel--deliver sub s)) (plist-get res :snapshot))
                    (when early (maphash (lambda (_k s) (netmodel--deliver sub s)) early))))))))))

(defun netmodel--on-notification (_conn method params)
  "jsonrpc.el's dispatcher: METHOD with PARAMS from the server."
  (netmodel--heard)
  (netmodel--call
   (lambda ()
     (when (eq method 'statsChanged)
       ;; At most one a second, the latest figures: nothing to order by version.
       (let ((sub (gethash (plist-get params :subscription) netmodel--by-name))
             (stats (plist-get params :stats)))
         (when (and sub stats)
           (setf (netmodel-sub-stats sub) stats)
           (netmodel--call (netmodel-sub-on-state sub) stats))))
     (when (eq method 'mutationOutcome)
       ;; Like statsChanged: written after the subscribe answer, never before.
       (let ((sub (gethash (plist-get params :subscription) netmodel--by-name))
             (entry (plist-get params :entry)))
         (when (and sub entry)
           (netmodel--call (netmodel-sub-on-state sub) entry))))
     (when (and (eq method 'stateChanged) (plist-get params :through))
       ;; Every change up to it of what this connection subscribed to is here.
       (maphash (lambda (_name sub) (netmodel--saw-version sub (plist-get params :through)))
                netmodel--by-name))
     (when (eq method 'stateChanged)
       (let* ((name (plist-get params :subscription))
              (state (plist-get params :state))
              (sub (and name (gethash name netmodel--by-name))))
         (cond ((and sub state) (netmodel--deliver sub state))
               ((and state (> netmodel--subscribing 0) (stringp name))
                ;; A turn's notifications come before its replies: this may be for the
                ;; subscription whose answer comes next.  The newest per key waits.
                (let ((early (or (gethash name netmodel--early)
                                 (puthash name (make-hash-table :test #'equal) netmodel--early))))
                  (puthash (netmodel--key state) state early)))))))))

(defvar netmodel--configured nil
  "The `configure' params given so far, merged: sent again on every new connection.")

(defvar netmodel-connect-hook nil
  "Functions run on every new connection, after the subscriptions are sent again.
What the server keeps per connection (`setInterfaceState') is sent again here.")

(defcustom netmodel-tell-failures nil
  "When non-nil, tell each intent the server says failed, once.
A refused or rolled-back intent is shown in the echo area, \"netmodel: your
follow of artist/kaws failed: ...\": as it fails (the mutations topic), and on
each new connection (the first one, and every reconnect) those of the server's
ledger (`getMutations') not told yet.  A follow rolled back while Emacs was
closed is not lost, nor one still pending when Emacs closed.  What was told is
kept in `netmodel-seen-file'.  \\[netmodel-failures] tells them now."
  :type 'boolean :group 'netmodel)

(defcustom netmodel-seen-file (locate-user-emacs-file "netmodel-mutations-seen")
  "Where `netmodel-tell-failures' keeps what was told.
Its first line is the ledger seq before the first intent not settled yet (it
may still fail while Emacs is closed), the next connect reads from there; its
second line the failures after it already told."
  :type 'file :group 'netmodel)

(defun netmodel--seen-lines ()
  "The lines of `netmodel-seen-file', nil when it cannot be read."
  (ignore-errors
    (with-temp-buffer
      (insert-file-contents netmodel-seen-file)
      (split-string (buffer-string) "\n"))))

(defun netmodel--read-seen ()
  "Where the next read of the ledger starts, 0 when nothing was seen."
  (let ((n (string-to-number (or (car (netmodel--seen-lines)) ""))))
    (if (natnump n) n 0)))

(defun netmodel--read-told ()
  "The seqs after `netmodel--read-seen' already told."
  (mapcar #'string-to-number (split-string (or (cadr (netmodel--seen-lines)) "") " " t)))

(defun netmodel--write-seen (since told)
  "Keep SINCE, and the seqs of TOLD after it."
  (ignore-errors
    (make-directory (file-name-directory netmodel-seen-file) t)
    (with-temp-file netmodel-seen-file
      (insert (format "%d\n%s\n" since
                      (mapconcat #'number-to-string (sort (seq-filter (lambda (n) (> n since)) told) #'<) " "))))))

(defun netmodel-mutation-failed-p (entry)
  "Whether ledger ENTRY was refused or rolled back."
  (member (plist-get entry :outcome) '("refused" "rolledBack")))

(defun netmodel--mutation-unsettled-p (entry)
  "Whether ledger ENTRY has no outcome yet: it may still fail."
  (member (plist-get entry :outcome) '("pending" "waiting")))

(defun netmodel-mutation-message (entry)
  "\"your follow of KIND/ID failed: MESSAGE\" for ledger ENTRY."
  (format "your %s of %s/%s failed: %s"
          (if (netmodel--true-p (plist-get entry :intent)) "follow" "unfollow")
          (plist-get entry :kind) (plist-get entry :id)
          (or (plist-get (plist-get entry :error) :message) (plist-get entry :outcome))))

(defun netmodel--tell-once (entry told)
  "Show ENTRY if it failed and its seq is not in TOLD; the seqs told then."
  (let ((seq (plist-get entry :seq)))
    (if (or (not (netmodel-mutation-failed-p entry)) (memql seq told))
        told
      (message "netmodel: %s" (netmodel-mutation-message entry))
      (cons seq told))))

(defun netmodel--tell-live (entry)
  "A `mutationOutcome' ENTRY: told now if it failed, once."
  (let ((seq (plist-get entry :seq))
        (since (netmodel--read-seen)))
    (when (and netmodel-tell-failures (integerp seq) (> seq since))
      (let* ((told (netmodel--read-told))
             (now (netmodel--tell-once entry told)))
        (unless (eq now told) (netmodel--write-seen since now))))))

(defvar netmodel--tell-sub nil
  "The mutations subscription of `netmodel-tell-failures', once made.")

(defun netmodel--tell-failures (since &optional told keep)
  "Show each failed intent of the server's ledger after SINCE not in TOLD.
Page by page; KEEP is where the next read starts, once an unsettled entry
was met."
  (let ((gen netmodel--generation))
    (netmodel-request
     "getMutations" (list :since since :limit 1000)
     (lambda (err res)
       ;; A server without the ledger, or a connection gone: nothing to tell.
       (when (and (not err) res (= gen netmodel--generation))
         (if (< (plist-get res :last) since)
             (netmodel--tell-failures 0) ; another state folder's ledger: all of it is new
           (seq-doseq (entry (plist-get res :entries))
             (setq told (netmodel--tell-once entry told))
             (when (and (not keep) (netmodel--mutation-unsettled-p entry))
               (setq keep (1- (plist-get entry :seq)))))
           (if (netmodel--true-p (plist-get res :more))
               (netmodel--tell-failures (plist-get res :next) told keep)
             (netmodel--write-seen (or keep (plist-get res :next)) told))))))))

;;;###autoload
(defun netmodel-failures ()
  "Show the intents the server's ledger says failed since the last seq seen."
  (interactive)
  (netmodel--tell-failures (netmodel--read-seen) (netmodel--read-told)))

(defun netmodel--on-connect ()
  "A new connection: the configuration again, then every subscription."
  (clrhash netmodel--by-name)
  (clrhash netmodel--early)
  (setq netmodel--subscribing 0 netmodel--instance nil)
  (when netmodel--configured
    ;; A restarted server has forgotten the token and environment.
    (netmodel-request "configure" netmodel--configured
                      (lambda (err _) (when err (netmodel-report err)))))
  (when (and netmodel-tell-failures (not (memq netmodel--tell-sub netmodel--subs)))
    ;; Subscribed before the ledger is read: nothing fails in between untold.
    (setq netmodel--tell-sub (netmodel--make-sub :topics (list (netmodel-topic "mutations"))
                                                 :on-state #'netmodel--tell-live))
    (push netmodel--tell-sub netmodel--subs))
  (dolist (sub netmodel--subs) (netmodel--send-subscribe sub))
  (when netmodel-tell-failures (netmodel--tell-failures (netmodel--read-seen) (netmodel--read-told)))
  (run-hooks 'netmodel-connect-hook))

(defun netmodel-configure (params &optional callback)
  "Send `configure' with PARAMS, a plist of :environment, :authToken, :values.
CALLBACK gets (ERR RESULT).  Once accepted, PARAMS are remembered (merged with
those given before) and sent again after every reconnect.  An :authToken of nil
forgets the token."
  (netmodel-request
   "configure" params
   (lambda (err result)
     (unless err
       (cl-loop for (k v) on params by #'cddr
                do (setq netmodel--configured
                         (plist-put netmodel--configured k
                                    (if (eq k :values)
                                        (netmodel--merge (plist-get netmodel--configured :values) v)
                                      v)))))
     (funcall (or callback #'netmodel-report) err result))))

(defun netmodel--merge (old new)
  "Plist OLD with the members of plist NEW."
  (let ((out (copy-sequence old)))
    (cl-loop for (k v) on new by #'cddr do (setq out (plist-put out k v)))
    out))

(defun netmodel--end-subscriptions (code message)
  "Tell each subscription the connection ended (CODE, MESSAGE).
They stay, to be subscribed again on the next connection."
  (clrhash netmodel--by-name)
  (dolist (sub netmodel--subs)
    (setf (netmodel-sub-error sub) (list :code code :message message))
    (when (netmodel-sub-on-error sub)
      (netmodel--call (netmodel-sub-on-error sub) (netmodel-sub-error sub)))))

(defun netmodel-topic (spec)
  "A topic plist from SPEC, a plist or `netmodel watch''s shorthand.
Shorthands: entity, entity:KIND, entity:KIND/ID, list:NAME (a list with no
params), stats (the server's figures, at most once a second), mutations (each
intent's outcome, given to ON-STATE as the ledger's entry)."
  (cond ((consp spec) spec)
        ((not (stringp spec)) (error "netmodel: a topic is a plist or a string, not %S" spec))
        ((member spec '("stats" "mutations")) (list :type spec))
        ((string-match "\\`list:\\(.+\\)\\'" spec)
         (list :type "list" :list (match-string 1 spec) :params (make-hash-table)))
        ((string-match "\\`entity\\(?::\\([^/]*\\)\\(?:/\\(.*\\)\\)?\\)?\\'" spec)
         (let ((kind (match-string 1 spec)) (id (match-string 2 spec)))
           (append (list :type "entity")
                   (and kind (not (string-empty-p kind)) (list :kind kind))
                   (and id (list :id id)))))
        (t (error "netmodel: unknown topic %S (want %s)"
                  spec netmodel-protocol-topic-shorthands-text))))

(defun netmodel-subscribe (topics on-state &optional on-error)
  "Subscribe to TOPICS: a topic or a list of them (see `netmodel-topic').
ON-STATE gets the snapshot's states, then every newer one; ON-ERROR gets a
refused subscribe, or the end of the connection.  Returns a `netmodel-sub',
subscribed again after a reconnect; end it with `netmodel-unsubscribe'."
  (let* ((topics (if (or (stringp topics) (keywordp (car-safe topics))) (list topics) topics))
         (sub (netmodel--make-sub :topics (mapcar #'netmodel-topic topics)
                                  :on-state on-state :on-error on-error)))
    (push sub netmodel--subs)
    (if (eq netmodel--status 'connected)
        (netmodel--send-subscribe sub)
      (let ((why (netmodel--connect))) ; a new connection subscribes every sub
        (when why (netmodel--down why))))
    sub))

(defun netmodel-unsubscribe (sub)
  "End SUB."
  (unless (netmodel-sub-closed sub)
    (setf (netmodel-sub-closed sub) t)
    (setq netmodel--subs (delq sub netmodel--subs))
    (let ((name (netmodel-sub-name sub)))
      (when (and name (eq netmodel--status 'connected))
        (remhash name netmodel--by-name)
        (netmodel-request "unsubscribe" (list :subscription name))))))

;;;; Mutations

(defun netmodel-report (err &optional _result)
  "Show ERR, a failed request's error, in the echo area; the commands' callback."
  (when err
    (message "netmodel: %s (%s)" (plist-get err :message) (plist-get err :code))))

(defun netmodel--mutate (method params callback)
  "Send mutation METHOD with PARAMS; remember its state (or the rolled-back one)."
  (netmodel-request method params
                    (lambda (err state)
                      (netmodel--remember (or state (plist-get (plist-get err :data) :state)))
                      (when callback (funcall callback err state)))))

(defun netmodel--read-entity (verb)
  "Kind and id for VERB: the button's or list item's at point, else asked."
  (or (and (not current-prefix-arg) (netmodel--entity-at-point))
      (list (read-string (format "%s kind: " verb) nil nil "artist")
            (read-string (format "%s id: " verb)))))

(defun netmodel--entity-params (kind id await)
  "The params naming KIND/ID; with AWAIT the answer waits for the backend."
  (append (list :kind kind :id id) (and await (list :await t))))

;;;###autoload
(defun netmodel-follow (kind id &optional callback await)
  "Follow KIND/ID (the entity at point, else asked).
CALLBACK gets (ERR STATE); AWAIT waits for the backend's answer."
  (interactive (netmodel--read-entity "Follow"))
  (netmodel--mutate "follow" (netmodel--entity-params kind id await)
                    (or callback #'netmodel-report)))

;;;###autoload
(defun netmodel-unfollow (kind id &optional callback await)
  "Unfollow KIND/ID (the entity at point, else asked).
CALLBACK gets (ERR STATE); AWAIT waits for the backend's answer."
  (interactive (netmodel--read-entity "Unfollow"))
  (netmodel--mutate "unfollow" (netmodel--entity-params kind id await)
                    (or callback #'netmodel-report)))

(defun netmodel-set-following (kind id following &optional callback await)
  "Set whether KIND/ID is FOLLOWING; CALLBACK gets (ERR STATE)."
  (netmodel--mutate "setFollowState"
                    (append (list :following (netmodel--bool following))
                            (netmodel--entity-params kind id await))
                    (or callback #'netmodel-report)))

;;;###autoload
(defun netmodel-toggle (kind id &optional callback)
  "Flip whether KIND/ID (the entity at point, else asked) is followed.
Asks the server first when nothing is known of it here."
  (interactive (netmodel--read-entity "Toggle"))
  (let ((flip (lambda (state)
                (if (and (netmodel--true-p (plist-get state :requested))
                         (not (netmodel--true-p (plist-get state :following))))
                    ;; A follow request awaiting approval: pressing it withdraws it, as
                    ;; Mastodon's own UI does (a follow again would be ignored).
                    (netmodel-unfollow kind id callback)
                  (netmodel-set-following
                   kind id (not (netmodel--true-p (plist-get state :following))) callback)))))
    (if-let ((state (netmodel-state kind id)))
        (funcall flip state)
      (netmodel-request "getFollowState" (list :kind kind :id id)
                        (lambda (err state)
                          (netmodel--remember state)
                          (if err (funcall (or callback #'netmodel-report) err nil)
                            (funcall flip state)))))))

;;;; Follow buttons: overlays on a line

(defun netmodel-label (state &optional err)
  "The text of a follow button showing STATE (nil: not known yet).
ERR: why the button gets no states (no server, a refused subscription), or nil."
  (let* ((flag (lambda (key) (netmodel--true-p (plist-get state key))))
         (following (funcall flag :following))
         (shown (cond ((and (null (plist-get state :following)) (null (plist-get state :error)))
                       '("[ … ]" . netmodel-pending)) ; not fetched yet
                      ;; what was asked for, shown at once (optimistic), not confirmed yet
                      ((funcall flag :pending)
                       (cons (if following "[ Following… ]" "[ Unfollowing… ]") 'netmodel-pending))
                      (following '("[ Following ]" . netmodel-following))
                      ;; a follow request awaiting the account's approval
                      ((funcall flag :requested) '("[ Requested ]" . netmodel-pending))
                      (t '("[ Follow ]" . netmodel-follow))))
         (text (propertize (car shown) 'face (cdr shown)))
         ;; after a rollback the server keeps the error until the next success
         (why (or err (plist-get state :error))))
    (cond ((and (not err) (netmodel-needs-credentials-p state))
           ;; kept pending, not rolled back: it goes through once a token is configured
           (concat text (propertize " 🔑 sign in" 'face 'netmodel-sign-in)))
          (why (concat text (propertize (format " ✗ %s" (plist-get why :message))
                                        'face 'netmodel-error)))
          (t text))))

(defvar netmodel-button-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'netmodel-toggle-at-point)
    map)
  "Keys on a line that holds a follow button.")

(defvar netmodel-button-mouse-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mouse-1] #'netmodel-toggle-at-mouse)
    (define-key map [mouse-2] #'netmodel-toggle-at-mouse)
    map)
  "Clicks on a follow button's label.")

(defun netmodel--render (ov)
  "Show the state of button OV."
  (when (overlay-buffer ov)
    (overlay-put ov 'after-string
                 (concat " " (propertize (netmodel-label (overlay-get ov 'netmodel-state)
                                                         (overlay-get ov 'netmodel-error))
                                         'keymap netmodel-button-mouse-map
                                         'mouse-face 'highlight
                                         'help-echo "mouse-1, RET: toggle follow")))))

(defun netmodel-button (kind id &optional pos)
  "Put a follow button of KIND/ID at the end of the line at POS (default point).
It shows the entity's state, kept current by a subscription; RET on the line or
a click on the label toggles it.  Returns the button, an overlay;
`netmodel-button-delete' ends it, as killing the buffer does."
  (save-excursion
    (goto-char (or pos (point)))
    ;; Rear-advance: the end of the line, where the label shows, is on the button too.
    (let ((ov (make-overlay (line-beginning-position) (line-end-position) nil nil t)))
      (overlay-put ov 'netmodel-entity (list kind id))
      (overlay-put ov 'keymap netmodel-button-map)
      (overlay-put ov 'netmodel-sub
                   (netmodel-subscribe (list :type "entity" :kind kind :id id)
                                       (lambda (state)
                                         (overlay-put ov 'netmodel-state state)
                                         (overlay-put ov 'netmodel-error nil)
                                         (netmodel--render ov))
                                       ;; Errors show on the button: no server yet (it keeps
                                       ;; trying), or a subscription the server refused.
                                       (lambda (err)
                                         (overlay-put ov 'netmodel-error err)
                                         (netmodel--render ov))))
      (netmodel--render ov)
      (add-hook 'kill-buffer-hook #'netmodel--buffer-killed nil t)
      ov)))

(defun netmodel-button-delete (ov)
  "Remove button OV and end its subscription."
  (when-let ((sub (overlay-get ov 'netmodel-sub)))
    (netmodel-unsubscribe sub))
  (delete-overlay ov))

(defun netmodel--buffer-killed ()
  "End the subscriptions of every button of the buffer being killed (narrowed too)."
  (save-restriction
    (widen)
    (dolist (ov (overlays-in (point-min) (point-max)))
      (when (overlay-get ov 'netmodel-sub) (netmodel-button-delete ov)))))

(defun netmodel-button-at (&optional pos)
  "The follow button on the line at POS (default point), or nil."
  (save-excursion
    (goto-char (or pos (point)))
    (cl-find-if (lambda (ov) (overlay-get ov 'netmodel-entity))
                (overlays-in (line-beginning-position) (1+ (line-end-position))))))

(defvar netmodel--entity-at-point-functions nil
  "Functions giving (KIND ID) of the entity at point, or nil (the list buffer's).")

(defun netmodel--entity-at-point ()
  "(KIND ID) of the button or list item at point, or nil."
  (or (run-hook-with-args-until-success 'netmodel--entity-at-point-functions)
      (when-let ((ov (netmodel-button-at))) (overlay-get ov 'netmodel-entity))))

(defun netmodel-toggle-at-point ()
  "Toggle the follow button or list item at point."
  (interactive)
  (if-let ((entity (netmodel--entity-at-point)))
      (apply #'netmodel-toggle entity)
    (user-error "netmodel: no follow button on this line")))

(defun netmodel-toggle-at-mouse (event)
  "Toggle the follow button clicked on (EVENT)."
  (interactive "e")
  (let ((posn (event-start event)))
    (with-current-buffer (window-buffer (posn-window posn))
      (save-excursion
        (goto-char (posn-point posn))
        (netmodel-toggle-at-point)))))

(provide 'netmodel)
;;; netmodel.el ends here
