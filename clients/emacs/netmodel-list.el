;;; netmodel-list.el --- A netmodel list in a tabulated-list buffer  -*- lexical-binding: t; -*-

;;; Commentary:

;; M-x `netmodel-list' shows one `fetchList' list (e.g. following/artist) with each
;; item's follow state, driven by the list's ListState notifications: RET toggles
;; the item at point, N loads the next page, g refreshes, q quits.

;;; Code:

(require 'cl-lib)
(require 'tabulated-list)
(require 'netmodel)

(defvar-local netmodel-list--list nil "The list's name.")
(defvar-local netmodel-list--params nil "The list's params.")
(defvar-local netmodel-list--state nil "The newest ListState shown.")
(defvar-local netmodel-list--error nil "The error of the last fetch, or nil.")
(defvar-local netmodel-list--fetching nil "Whether a fetch is in flight.")
(defvar-local netmodel-list--held nil "The version held (see `netmodel--newer').")
(defvar-local netmodel-list--sub nil "The list's subscription.")

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
  (setq tabulated-list-format [("Item" 32 t) ("Follow" 40 nil) ("Section" 0 t)])
  (setq tabulated-list-padding 2)
  (add-hook 'netmodel--entity-at-point-functions #'netmodel-list--entity-at-point nil t)
  (add-hook 'kill-buffer-hook #'netmodel-list--killed nil t)
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
                                  (or section ""))))
                  (plist-get s :items)))
    (tabulated-list-print t)
    (force-mode-line-update)))

(defun netmodel-list--on-state (buf state)
  "Show STATE in list buffer BUF when it is newer."
  (when (buffer-live-p buf)
    (with-current-buffer buf
      (when (netmodel--newer netmodel-list--held "list" state)
        (setq netmodel-list--state state netmodel-list--error nil)
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
  "End the list's subscription."
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
