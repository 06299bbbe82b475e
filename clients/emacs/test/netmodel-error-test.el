;;; netmodel-error-test.el --- Rollbacks and credentials on the button  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-rollback-is-shown-with-the-error ()
  ;; a backend that refuses everything (422), on a spawned server
  (nmt-setup 'netmodel-socket 'none 'netmodel-state-dir (expand-file-name "state" (nmt-tmpdir))
             'netmodel-serve-args '("--simulate" "latency=200,failure=1,status=422" "--seed" "1"))
  (with-temp-buffer
    (insert "Banksy")
    (let* ((b (netmodel-button "artist" "banksy" (point-min)))
           (rec (nmt-recorder (lambda () (nmt-label b))))
           got)
      ;; the first fetch fails too: no state is known, the error is shown
      (nmt-wait 5 (lambda () (string-match-p "422" (funcall rec)))
                (lambda () (format "the failed fetch (seen %S)" (funcall rec 'seen))))
      (netmodel-follow "artist" "banksy" (lambda (err state) (setq got (list err state))) t)
      (nmt-wait 5 (lambda () (funcall rec) got) "the follow's answer")
      (push (plist-get (netmodel-info) :pid) nmt--pids)
      (let ((err (car got)))
        (should-not (cadr got))
        (should (= -32002 (plist-get err :code)))
        (should (= 422 (plist-get (plist-get err :data) :status)))
        (should-not (netmodel--true-p (plist-get (plist-get (plist-get err :data) :state) :following))))
      (nmt-wait 5 (lambda () (let ((l (funcall rec)))
                               (and (string-prefix-p "[ Follow ] ✗ " l) (string-match-p "422" l))))
                (lambda () (format "the rollback on the button (seen %S)" (funcall rec 'seen))))
      (should (cl-some (lambda (l) (string-prefix-p "[ Following… ]" l)) (funcall rec 'seen)))
      (should (eq 'netmodel-error (get-text-property (- (length (overlay-get b 'after-string)) 1)
                                                     'face (overlay-get b 'after-string))))
      (should (= -32002 (plist-get (plist-get (netmodel-state "artist" "banksy") :error) :code))))))

(ert-deftest netmodel-waiting-for-credentials-says-sign-in ()
  (let ((srv (nmt-start-server (nmt-tmpdir) "--simulate" "failure=1,status=401")))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (with-temp-buffer
      (insert "Locked")
      (let ((b (netmodel-button "artist" "locked" (point-min))))
        (netmodel-follow "artist" "locked")
        (nmt-wait 5 (lambda () (equal "[ Following… ] 🔑 sign in" (nmt-label b)))
                  (lambda () (format "the sign-in marker (at %S)" (nmt-label b))))
        (should (netmodel-needs-credentials-p (netmodel-state "artist" "locked")))
        ;; The label may show the read's 401 a turn before the intent's own 401 is
        ;; answered (the intent is sent after its group commit): wait for the intent.
        (let ((waiting nil) (tries 0))
          (while (and (< tries 100)
                      (not (eql 1 (setq waiting (plist-get (netmodel-request-sync "stats" nil)
                                                           :waitingForCredentials)))))
            (setq tries (1+ tries))
            (sleep-for 0.05))
          (should (eql 1 waiting)))))))

(ert-deftest netmodel-label-of-a-follow-request ()
  ;; the server's `requested': a follow request awaiting approval, not a follow
  (should (equal "[ Requested ]"
                 (substring-no-properties
                  (netmodel-label '(:kind "account" :id "7" :following :json-false :confirmed :json-false
                                          :pending :json-false :requested t :version 2))))))

(provide 'netmodel-error-test)
;;; netmodel-error-test.el ends here
