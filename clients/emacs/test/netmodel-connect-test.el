;;; netmodel-connect-test.el --- The socket, follow buttons, the commands  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-connects-to-a-listening-socket ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    ;; a spawn would fail: this program does not exist
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-program "/nonexistent/netmodel")
    (let ((init (netmodel-request-sync "initialize" (list :processId (emacs-pid)))))
      (should (equal "netmodel" (plist-get (plist-get init :serverInfo) :name))))
    (should (eq 'socket (plist-get (netmodel-info) :transport)))
    (should-not (plist-get (netmodel-info) :pid))))

(ert-deftest netmodel-no-server-and-no-spawn-is-not-connected ()
  (nmt-setup 'netmodel-socket (expand-file-name "none.sock" (nmt-tmpdir)) 'netmodel-spawn nil)
  (let ((err (should-error (netmodel-request-sync "stats" nil 3) :type 'netmodel-error)))
    (should (equal netmodel-not-connected (plist-get (cdr err) :code)))))

(ert-deftest netmodel-follow-unfollow-toggle-update-the-button ()
  (let ((srv (nmt-start-server (nmt-tmpdir) "--simulate" "latency=300")))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (with-temp-buffer
      (insert "Banksy\nKaws\n")
      (let* ((b (netmodel-button "artist" "banksy" (point-min)))
             (rec (nmt-recorder (lambda () (nmt-label b))))
             (wait (lambda (want)
                     (nmt-wait 5 (lambda () (equal want (funcall rec)))
                               (lambda () (format "%S (seen %S)" want (funcall rec 'seen)))))))
        (should (equal "[ … ]" (nmt-label b)))
        (funcall wait "[ Follow ]")     ; the fetch the subscription started
        (goto-char (point-min))
        (call-interactively #'netmodel-follow) ; the button at point
        (funcall wait "[ Following ]")
        (should (member "[ Following… ]" (funcall rec 'seen)))
        (should (eq t (plist-get (overlay-get b 'netmodel-state) :confirmed)))
        (netmodel-unfollow "artist" "banksy")
        (funcall wait "[ Follow ]")
        (should (member "[ Unfollowing… ]" (funcall rec 'seen)))
        (goto-char (point-min))
        (call-interactively #'netmodel-toggle)
        (funcall wait "[ Following ]")
        ;; RET on the button's line toggles it too (keys go to the window's buffer)
        (switch-to-buffer (current-buffer))
        (end-of-line)                   ; where the label is
        (execute-kbd-macro (kbd "RET"))
        (funcall wait "[ Follow ]")
        ;; a click on the label toggles it
        (let ((map (get-text-property 2 'keymap (overlay-get b 'after-string))))
          (should (eq 'netmodel-toggle-at-mouse (lookup-key map [mouse-1])))
          (netmodel-toggle-at-mouse `(mouse-1 (,(selected-window) ,(line-end-position) (0 . 0) 0))))
        (funcall wait "[ Following ]")
        ;; a change made by another client reaches the button
        (should (equal 0 (car (nmt-call (plist-get srv :socket) "unfollow" "kind=artist" "id=banksy"))))
        (funcall wait "[ Follow ]")
        (should-not (netmodel-button-at (point-max)))))))

(ert-deftest netmodel-older-states-are-dropped ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (with-temp-buffer
      (insert "x")
      (let ((b (netmodel-button "artist" "kaws" (point-min))))
        (netmodel-request-sync "follow" '(:kind "artist" :id "kaws" :await t))
        (nmt-wait 5 (lambda () (equal "[ Following ]" (nmt-label b))) "following")
        (let* ((sub (overlay-get b 'netmodel-sub))
               (state (overlay-get b 'netmodel-state))
               (v (plist-get state :version))
               (inject (lambda (version)
                         ;; as the server would send it
                         (netmodel--on-notification
                          nil 'stateChanged
                          (list :subscription (netmodel-sub-name sub) :seq 99
                                :state (append (list :version version :following :json-false
                                                     :confirmed :json-false)
                                               state))))))
          (funcall inject (1- v))
          (should (equal "[ Following ]" (nmt-label b)))
          (funcall inject (1+ v))         ; proves the injection reaches the button
          (should (equal "[ Follow ]" (nmt-label b))))))))

(ert-deftest netmodel-stats-topic-delivers-the-figures ()
  (let ((srv (nmt-start-server (nmt-tmpdir))) got)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((sub (netmodel-subscribe "stats" (lambda (s) (push s got)))))
      (nmt-wait 5 (lambda () got) "a statsChanged push")
      (should (numberp (plist-get (car got) :uptimeMs)))
      (should (eq (car got) (netmodel-sub-stats sub)))
      ;; A follow changes the figures: a later push says so.
      (netmodel-request-sync "follow" (list :kind "artist" :id "stats-1" :await t))
      (nmt-wait 5 (lambda () (> (length got) 1)) "a second push after a follow")
      (netmodel-unsubscribe sub))))

(ert-deftest netmodel-inspect-is-asked-through-the-generic-request ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((res (netmodel-request-sync "inspect" (list :sections ["connections" "entities"] :limit 5) 5)))
      (should (equal 5 (plist-get res :limit)))
      (should (equal 1 (plist-get (plist-get res :connections) :total)))
      (should (equal 0 (plist-get (plist-get res :entities) :total)))
      (should-not (plist-member res :lists)))))

;; `sync' after a follow made without await: answered once it settled, through the
;; generic request as every method.
(ert-deftest netmodel-sync-is-asked-through-the-generic-request ()
  (let ((srv (nmt-start-server (nmt-tmpdir) "--simulate" "latency=200,failure=0")))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (netmodel-follow "artist" "banksy")
    (let* ((res (netmodel-request-sync "sync" (list :timeoutMs 5000) 10))
           (settled (append (plist-get res :settled) nil)))
      (should (equal 1 (length settled)))
      (should (equal "banksy" (plist-get (car settled) :id)))
      (should (equal "confirmed" (plist-get (car settled) :outcome)))
      (should (equal 0 (length (plist-get res :waiting)))))))

(ert-deftest netmodel-killing-the-buffer-ends-its-subscriptions ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((buf (generate-new-buffer "buttons")) b)
      (with-current-buffer buf
        (insert "x")
        (setq b (netmodel-button "artist" "gone" (point-min))))
      (nmt-wait 5 (lambda () (netmodel-sub-name (overlay-get b 'netmodel-sub))) "subscribed")
      (should (= 1 (plist-get (netmodel-request-sync "stats" nil) :subscriptions)))
      (kill-buffer buf)
      (should-not netmodel--subs)
      (nmt-wait 5 (lambda () (= 0 (plist-get (netmodel-request-sync "stats" nil) :subscriptions)))
                "the server to drop the subscription"))))

(ert-deftest netmodel-timeouts-cancels-and-unreadable-params ()
  (let ((srv (nmt-start-server (nmt-tmpdir) "--simulate" "latency=3000")))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((err (cdr (should-error (netmodel-request-sync "follow" '(:kind "artist" :id "slow" :await t) 0.3)
                                  :type 'netmodel-error))))
      (should (equal netmodel-timeout (plist-get err :code))))
    (let* ((got nil)
           (id (netmodel-request "follow" '(:kind "artist" :id "slower" :await t)
                                 (lambda (e r) (push (list e r) got)))))
      (should (netmodel-cancel id))
      (should (equal netmodel-cancelled (plist-get (car (car got)) :code)))
      (should-not (netmodel-cancel id))   ; answered already
      (nmt-sleep 0.2)
      (should (= 1 (length got))))       ; exactly once
    ;; a string that is not Unicode cannot be written: refused before sending
    (should-error (netmodel-request "follow" (list :kind "artist" :id (string-to-multibyte "\377"))))
    (should (plist-get (netmodel-request-sync "stats" nil) :uptimeMs))))

(ert-deftest netmodel-refuses-a-socket-folder-others-could-write ()
  ;; whoever can put a socket there would receive what is sent, tokens included
  (let* ((srv (nmt-start-server (nmt-tmpdir)))
         (folder (file-name-directory (plist-get srv :socket)))
         (link (concat (directory-file-name (nmt-tmpdir)) "/link")))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (should (netmodel-request-sync "stats" nil)) ; the same socket in a 0700 folder works
    (set-file-modes folder #o777)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((err (cdr (should-error (netmodel-request-sync "stats" nil 3) :type 'netmodel-error))))
      (should (equal netmodel-not-connected (plist-get err :code)))
      (should (string-search "can be written by others" (plist-get err :message))))
    (set-file-modes folder #o700)
    (make-symbolic-link (directory-file-name folder) link)
    (nmt-setup 'netmodel-socket (concat link "/s.sock") 'netmodel-spawn nil)
    (let ((err (cdr (should-error (netmodel-request-sync "stats" nil 3) :type 'netmodel-error))))
      (should (string-search "symbolic link" (plist-get err :message))))))

;; A host that ends its socket connection ends its own session, not the daemon others
;; share (issue 27 §6): `netmodel-disconnect', and a host that says LSP's `shutdown' and
;; `exit' first, leave it serving the others.
(ert-deftest netmodel-ending-a-socket-session-leaves-a-shared-daemon-running ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (dotimes (_ 2)
      (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
      (should (eq t (plist-get (netmodel-request-sync "follow" (list :kind "artist" :id "banksy" :await t))
                               :confirmed)))
      (netmodel-disconnect))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (netmodel-request-sync "shutdown" nil) ; answered, not an error
    (netmodel-notify "exit" nil)
    (nmt-sleep 0.3)
    (netmodel-disconnect)
    (should (process-live-p (plist-get srv :process)))
    (let ((answer (nmt-call (plist-get srv :socket) "getFollowState" "kind=artist" "id=banksy")))
      (should (equal 0 (car answer)))
      (should (string-search "\"following\":true" (cadr answer))))))

(provide 'netmodel-connect-test)
;;; netmodel-connect-test.el ends here
