;;; netmodel-list.el --- A netmodel list in a tabulated-list buffer  -*- lexical-binding: t; -*-

;;; Commentary:

;; M-x `netmodel-list' shows one `fetchList' list (e.g. following/artist) with each
;; item's follow state, driven by the list's ListState notifications: RET toggles
;; the item at point, N loads the next page, g refreshes, q quits.
;;
;; The buffer tells the server what is on screen (`setInterfaceState'): the rows
;; every window shows are `visible', those within `netmodel-list-preload-rows' of
;; them `preload', the rest nothing, so the server loads their details (a name, a
;; count: the entity's `attributes') before they are scrolled to, and withdraws
;; what is still waiting when the user jumps away.  The details arrive as entity
;; states and show in the Details column.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'tabulated-list)
(require 'netmodel)

(defvar-local netmodel-list--list nil "The list's name.")
(defvar-local netmodel-list--params nil "The list's params.")
(defvar-local netmodel-list--state nil "The newest ListState shown.")
(defvar-local netmodel-list--error nil "The error of the last fetch, or nil.")
(defvar-local netmodel-list--fetching nil "Whether a fetch is in flight.")
(defvar-local netmodel-list--held nil "The version held (see `netmodel--newer').")
(defvar-local netmodel-list--sub nil "The list's subscription.")
(defvar-local netmodel-list--kind-subs nil "Kind -> subscription to its entities (their details).")
(defvar-local netmodel-list--details nil "kind/id -> the newest attributes of an entity state.")
(defvar-local netmodel-list--interface nil
  "(KIND ID) -> the interface state the server was told: \"visible\" or \"preload\".")
(defvar-local netmodel-list--interface-timer nil)
(defvar-local netmodel-list--render-timer nil)

(defcustom netmodel-list-preload-rows 40
  "Rows above and below a window's visible ones whose details are loaded ahead."
  :type 'natnum
  :group 'netmodel)

(defvar netmodel-list-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'netmodel-toggle-at-point)
    (define-key map (kbd "N") #'netmodel-list-next-page)
    (define-key map (kbd "g") #'netmodel-list-refresh)
    map)
  "Keys of `netmodel-list-mode'.")

(define-derived-mode netmodel-list-mode tabulated-list-mode "netmodel-list"
  "A netmodel list.
RET toggles the item at point, N loads the next page, g refreshes."
  (setq tabulated-list-format [("Item" 32 t) ("Follow" 40 nil) ("Details" 36 nil) ("Section" 0 t)])
  (setq tabulated-list-padding 2)
  (setq netmodel-list--interface (make-hash-table :test #'equal)
        netmodel-list--details (make-hash-table :test #'equal))
  (add-hook 'netmodel--entity-at-point-functions #'netmodel-list--entity-at-point nil t)
  (add-hook 'kill-buffer-hook #'netmodel-list--killed nil t)
  (add-hook 'window-scroll-functions #'netmodel-list--scrolled nil t)
  (tabulated-list-init-header))

(defun netmodel-list-status ()
  "The list's status as its mode line shows it: loading, loaded, failure…"
  (let* ((s netmodel-list--state)
         (status (if (or netmodel-list--fetching (null (plist-get s :state)))
                     "loading"
                   (plist-get s :state)))
         (err (or netmodel-list--error (plist-get s :error))))
    (concat status
            (and (netmodel--true-p (plist-get s :hasMore)) " (more: N)")
            (and (equal status "loaded") (zerop (length (plist-get s :items))) " (empty)")
            (and err (format " error: %s" (plist-get err :message))))))

(defun netmodel-list--render ()
  "Show the list's items and status."
  (let* ((s netmodel-list--state)
         (titles (mapcar (lambda (sec) (cons (plist-get sec :start) (plist-get sec :title)))
                         (plist-get s :sections)))
         (section nil) (i 0))
    (setq mode-line-process (concat " " (netmodel-list-status)))
    (setq tabulated-list-entries
          (mapcar (lambda (item)
                    (setq section (or (cdr (assq i titles)) section))
                    (cl-incf i)
                    (list (list (plist-get item :kind) (plist-get item :id))
                          (vector (format "%s/%s" (plist-get item :kind) (plist-get item :id))
                                  (netmodel-label item)
                                  (netmodel-list-detail-text
                                   (or (gethash (netmodel--key item) netmodel-list--details)
                                       (plist-get item :attributes)))
                                  (or section ""))))
                  (plist-get s :items)))
    (netmodel-list--keeping-windows (lambda () (tabulated-list-print t)))
    (force-mode-line-update)
    ;; the rows on screen may be others now
    (netmodel-list--schedule-interface (current-buffer))))

(defun netmodel-list--keeping-windows (redraw)
  "Call REDRAW, which rewrites the buffer, keeping the rows each window shows.
Rewritten text moves every window's start and point to the top: a window
scrolled down would jump back on each change of a row."
  (let ((kept (mapcar (lambda (w) (list w (line-number-at-pos (window-start w))
                                        (line-number-at-pos (window-point w))))
                      (get-buffer-window-list (current-buffer) nil t))))
    (funcall redraw)
    (pcase-dolist (`(,win ,start ,pt) kept)
      (let ((line-pos (lambda (line) (save-excursion (goto-char (point-min))
                                                     (forward-line (1- line))
                                                     (point)))))
        (unless (eq win (selected-window)) ; `tabulated-list-print' keeps its point
          (set-window-point win (funcall line-pos pt)))
        (set-window-start win (funcall line-pos start) t)))))

(defun netmodel-list-detail-text (attributes)
  "The Details column of an item whose `attributes' are ATTRIBUTES (a plist).
A name, and the first count (a member named ..._count), when there are."
  (let ((name (cl-some (lambda (key)
                         (let ((v (plist-get attributes key)))
                           (and (stringp v) (not (string-empty-p v)) v)))
                       '(:name :title :display_name :username :login)))
        (count (cl-loop for (k v) on attributes by #'cddr
                        when (and (numberp v) (string-suffix-p "_count" (symbol-name k)))
                        return (format "%s %s" v (string-replace
                                                  "_" " " (substring (symbol-name k) 1 -6))))))
    (string-join (delq nil (list name count)) ", ")))

(defun netmodel-list--watch-kinds (state)
  "Subscribe to the entities of each kind of STATE's items: their details come so."
  (let ((buf (current-buffer)))
    (seq-doseq (item (plist-get state :items))
      (let ((kind (plist-get item :kind)))
        (unless (assoc kind netmodel-list--kind-subs)
          (push (cons kind (netmodel-subscribe
                            (list :type "entity" :kind kind)
                            (lambda (entity) (netmodel-list--on-entity buf entity))))
                netmodel-list--kind-subs))))))

(defun netmodel-list--on-entity (buf entity)
  "Keep the details of ENTITY for BUF's rows."
  (when (and (buffer-live-p buf) (plist-get entity :attributes))
    (with-current-buffer buf
      (let ((key (netmodel--key entity)))
        (unless (equal (gethash key netmodel-list--details) (plist-get entity :attributes))
          (puthash key (plist-get entity :attributes) netmodel-list--details)
          (unless netmodel-list--render-timer
            ;; one redraw for the details of many rows
            (setq netmodel-list--render-timer
                  (run-with-timer 0.05 nil (lambda ()
                                             (when (buffer-live-p buf)
                                               (with-current-buffer buf
                                                 (setq netmodel-list--render-timer nil)
                                                 (netmodel-list--render))))))))))))

;;;; What is on screen: setInterfaceState

(defun netmodel-list--rows (win)
  "(VISIBLE . PRELOAD): the item ids of WIN's rows, and of those near them."
  (save-excursion
    (goto-char (window-start win))
    (let ((top (line-beginning-position)) visible preload)
      (forward-line (- netmodel-list-preload-rows))
      (while (< (point) top)
        (when-let ((id (tabulated-list-get-id))) (push id preload))
        (forward-line 1))
      (dotimes (i (+ (window-body-height win) netmodel-list-preload-rows))
        (unless (eobp)
          (when-let ((id (tabulated-list-get-id)))
            (if (< i (window-body-height win)) (push id visible) (push id preload)))
          (forward-line 1)))
      (cons visible preload))))

(defun netmodel-list--wanted ()
  "(KIND ID) -> interface state, of every window showing this buffer."
  (let ((want (make-hash-table :test #'equal)))
    (dolist (win (get-buffer-window-list (current-buffer) nil t))
      (let ((rows (netmodel-list--rows win)))
        (dolist (id (cdr rows)) (unless (gethash id want) (puthash id "preload" want)))
        (dolist (id (car rows)) (puthash id "visible" want))))
    want))

(defun netmodel-list--update-interface (buf)
  "Tell the server what changed in what BUF's windows show."
  (when (buffer-live-p buf)
    (with-current-buffer buf
      (when netmodel-list--interface-timer (cancel-timer netmodel-list--interface-timer))
      (setq netmodel-list--interface-timer nil)
      (let ((want (netmodel-list--wanted))
            (changes nil))
        (maphash (lambda (id _) (unless (gethash id want) (push id (alist-get "none" changes nil nil #'equal))))
                 netmodel-list--interface)
        (maphash (lambda (id state)
                   (unless (equal state (gethash id netmodel-list--interface))
                     (push id (alist-get state changes nil nil #'equal))))
                 want)
        (setq netmodel-list--interface want)
        ;; what leaves first: a jump frees the server's queue for what comes
        (dolist (state '("none" "visible" "preload"))
          (when-let ((ids (alist-get state changes nil nil #'equal)))
            (netmodel-list--tell ids state)))))))

(defun netmodel-list--tell (ids state)
  "Send `setInterfaceState' STATE for the items IDS, if connected.
Interest is per connection: a new one is told again (`netmodel-connect-hook')."
  (when (eq netmodel--status 'connected)
    (netmodel-request "setInterfaceState"
                      (list :items (vconcat (mapcar (lambda (id) (list :kind (car id) :id (cadr id)))
                                                    ids))
                            :state state))))

(defun netmodel-list--schedule-interface (buf)
  "Update BUF's interface states soon: once for a burst of scrolling."
  (when (buffer-live-p buf)
    (with-current-buffer buf
      (when (and (derived-mode-p 'netmodel-list-mode) (not netmodel-list--interface-timer))
        (setq netmodel-list--interface-timer
              (run-with-timer 0.05 nil #'netmodel-list--update-interface buf))))))

(defun netmodel-list--scrolled (win _start)
  "`window-scroll-functions': WIN shows other rows."
  (netmodel-list--schedule-interface (window-buffer win)))

(defun netmodel-list--windows-changed (&optional _frame)
  "A window shows another buffer or is resized: each list buffer looks again."
  (dolist (buf (buffer-list))
    (when (and (eq 'netmodel-list-mode (buffer-local-value 'major-mode buf))
               (or (get-buffer-window buf t)
                   (> (hash-table-count (buffer-local-value 'netmodel-list--interface buf)) 0)))
      (netmodel-list--schedule-interface buf))))

(add-hook 'window-buffer-change-functions #'netmodel-list--windows-changed)
(add-hook 'window-size-change-functions #'netmodel-list--windows-changed)

(defun netmodel-list--reconnected ()
  "A new connection knows nothing of what is shown: tell it again."
  (dolist (buf (buffer-list))
    (when (eq 'netmodel-list-mode (buffer-local-value 'major-mode buf))
      (with-current-buffer buf
        (clrhash netmodel-list--interface)
        (netmodel-list--schedule-interface buf)))))

(add-hook 'netmodel-connect-hook #'netmodel-list--reconnected)

(defun netmodel-list--on-state (buf state)
  "Show STATE in list buffer BUF when it is newer."
  (when (buffer-live-p buf)
    (with-current-buffer buf
      (when (netmodel--newer netmodel-list--held "list" state)
        (setq netmodel-list--state state netmodel-list--error nil)
        (netmodel-list--watch-kinds state)
        ;; A restarted server knows nothing of the list: load it again.
        (when (and (equal (plist-get state :state) "idle") (not netmodel-list--fetching))
          (netmodel-list--fetch "first")))
      (netmodel-list--render))))

(defun netmodel-list--fetch (page)
  "Ask for PAGE of the current buffer's list: first, next or refresh."
  (let ((buf (current-buffer)))
    (setq netmodel-list--fetching t)
    (netmodel-list--render)
    (netmodel-request "fetchList"
                      (list :list netmodel-list--list :params netmodel-list--params :page page)
                      (lambda (err state)
                        (when (buffer-live-p buf)
                          (with-current-buffer buf
                            (setq netmodel-list--fetching nil)
                            (if err
                                (setq netmodel-list--error err)
                              ;; may be dropped: its notification came first
                              (netmodel-list--on-state buf state))
                            (netmodel-list--render)))))))

(defun netmodel-list-next-page ()
  "Load the list's next page."
  (interactive)
  (netmodel-list--fetch "next"))

(defun netmodel-list-refresh ()
  "Load the list's first page again."
  (interactive)
  (netmodel-list--fetch "refresh"))

(defun netmodel-list--entity-at-point ()
  "(KIND ID) of the item at point."
  (tabulated-list-get-id))

(defun netmodel-list--killed ()
  "End the list's subscriptions and what it told the server it shows."
  (let (ids)
    (maphash (lambda (id _) (push id ids)) netmodel-list--interface)
    (clrhash netmodel-list--interface)
    (when ids (netmodel-list--tell ids "none")))
  (dolist (timer (list netmodel-list--interface-timer netmodel-list--render-timer))
    (when timer (cancel-timer timer)))
  (dolist (kind-sub netmodel-list--kind-subs) (netmodel-unsubscribe (cdr kind-sub)))
  (when netmodel-list--sub (netmodel-unsubscribe netmodel-list--sub)))

;;;###autoload
(defun netmodel-list (list &optional params)
  "Show LIST (e.g. following/artist) with PARAMS (a plist) in a buffer; returns it.
The buffer of a list already shown is refreshed and shown again."
  (interactive (list (read-string "netmodel list: " nil nil "following/artist")))
  (let* ((key (netmodel-params-key params))
         (buf (cl-find-if (lambda (b) (with-current-buffer b
                                        (and (derived-mode-p 'netmodel-list-mode)
                                             (equal netmodel-list--list list)
                                             (equal (netmodel-params-key netmodel-list--params)
                                                    key))))
                          (buffer-list))))
    (if buf
        (with-current-buffer buf (netmodel-list-refresh))
      (setq buf (generate-new-buffer (format "*netmodel: %s*" list)))
      (with-current-buffer buf
        (netmodel-list-mode)
        (setq netmodel-list--list list netmodel-list--params params
              netmodel-list--held (make-hash-table :test #'equal))
        (setq netmodel-list--sub
              (netmodel-subscribe (list :type "list" :list list :params params)
                                  (lambda (state) (netmodel-list--on-state buf state))
                                  (lambda (err)
                                    (when (buffer-live-p buf)
                                      (with-current-buffer buf
                                        (setq netmodel-list--error err)
                                        (netmodel-list--render))))))
        (netmodel-list--fetch "first")))
    (pop-to-buffer-same-window buf)
    buf))

(provide 'netmodel-list)
;;; netmodel-list.el ends here
