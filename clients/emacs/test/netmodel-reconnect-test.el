;;; netmodel-reconnect-test.el --- The server restarts on the same socket  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-reconnects-and-subscribes-again ()
  (let* ((dir (nmt-tmpdir))
         (srv (nmt-start-server dir)))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (with-temp-buffer
      (insert "Banksy")
      (let* ((b (netmodel-button "artist" "banksy" (point-min)))
             (sub (overlay-get b 'netmodel-sub)))
        (nmt-wait 5 (lambda () (equal "[ Follow ]" (nmt-label b))) "the first state")
        ;; raise the version above what the new server will send
        (dolist (m '("follow" "unfollow" "follow" "unfollow"))
          (netmodel-request-sync m '(:kind "artist" :id "banksy" :await t)))
        (nmt-wait 5 (lambda () (and (equal "[ Follow ]" (nmt-label b))
                                    (>= (plist-get (overlay-get b 'netmodel-state) :version) 6)))
                  "settled at a high version")
        (let ((old-version (plist-get (overlay-get b 'netmodel-state) :version))
              (old-instance (netmodel-sub-instance sub)))
          (let (answered)
            (netmodel-configure '(:environment "staging") (lambda (err res) (setq answered (or err res))))
            (nmt-wait 5 (lambda () answered) "configure")
            (should (equal "staging" (plist-get answered :environment))))
          (signal-process (plist-get srv :pid) 'SIGKILL) ; leaves a stale socket file behind
          (nmt-wait 5 (lambda () (not (eq 'connected (plist-get (netmodel-info) :status))))
                    "the client to see the server gone")
          (let ((srv2 (nmt-start-server dir)))
            (nmt-wait 10 (lambda () (and (eq 'connected (plist-get (netmodel-info) :status))
                                         (netmodel-sub-name sub)))
                      "reconnect and subscribe")
            (should (= 0 (car (nmt-call (plist-get srv2 :socket) "follow" "kind=artist" "id=banksy"
                                        "await:=true"))))
            (nmt-wait 5 (lambda () (equal "[ Following ]" (nmt-label b)))
                      (lambda () (format "the other client's follow on the button (at %s)" (nmt-label b))))
            (should (> (plist-get (overlay-get b 'netmodel-state) :version) old-version))
            ;; the new server was configured again
            (should (equal "staging" (plist-get (netmodel-request-sync "configure" nil) :environment)))
            (should (netmodel-sub-instance sub))
            (should-not (equal old-instance (netmodel-sub-instance sub)))))))))

(ert-deftest netmodel-gives-up-after-max-attempts ()
  (let ((srv (nmt-start-server (nmt-tmpdir))) ended)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t
               'netmodel-reconnect-max-attempts 2)
    (netmodel-subscribe "entity:artist/x" #'ignore (lambda (err) (push (plist-get err :code) ended)))
    (nmt-wait 5 (lambda () (eq 'connected (plist-get (netmodel-info) :status))) "connected")
    (netmodel-request-sync "stats" nil)
    (signal-process (plist-get srv :pid) 'SIGKILL)
    (nmt-wait 10 (lambda () (memq netmodel-connection-lost ended)) "the subscription's end")
    (should (eq 'idle (plist-get (netmodel-info) :status)))))

(ert-deftest netmodel-resumes-on-the-same-server ()
  ;; The connection drops, the server lives on: subscribed again with `since', the
  ;; answer is resumed (only what changed while away: nothing here).
  (let ((srv (nmt-start-server (nmt-tmpdir))) (seen (make-hash-table :test #'equal)))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (let ((sub (netmodel-subscribe
                (cl-loop for n from 1 to 20 collect (format "entity:artist/resume-%d" n))
                (lambda (s) (puthash (plist-get s :id) (1+ (gethash (plist-get s :id) seen 0)) seen)))))
      (nmt-wait 5 (lambda () (and (= 20 (hash-table-count seen)) (netmodel-sub-resume-version sub)))
                "every state fetched")
      (let ((before (copy-hash-table seen)))
        (delete-process netmodel--process)
        (nmt-wait 10 (lambda () (and (eq 'connected (plist-get (netmodel-info) :status))
                                     (netmodel-sub-name sub)))
                  "reconnect and subscribe")
        (should-not (netmodel-sub-reset sub))
        (sleep-for 0.2)
        (should (equal (hash-table-count before) (hash-table-count seen)))
        (maphash (lambda (id n) (should (= n (gethash id seen)))) before))
      (netmodel-request-sync "follow" '(:kind "artist" :id "resume-7" :await t))
      (nmt-wait 5 (lambda () (netmodel--true-p (plist-get (netmodel-state "artist" "resume-7") :confirmed)))
                "a change after the resume still arrives"))))

(provide 'netmodel-reconnect-test)
;;; netmodel-reconnect-test.el ends here
