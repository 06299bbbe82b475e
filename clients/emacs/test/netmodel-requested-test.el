;;; netmodel-requested-test.el --- A follow request awaiting approval, on the Mastodon demo  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-pressing-requested-withdraws-the-request ()
  ;; Account 7 of the demo is locked: a follow is a request it has to approve.
  ;; Pressing [ Requested ] sent follow again (ignored); Mastodon's UI withdraws it.
  (let* ((api (nmt-start-demo "mastodon"))
         (srv (let ((process-environment (append '("MASTODON_TOKEN=demo-token" "MASTODON_ACCOUNT_ID=1")
                                                 process-environment)))
                (nmt-start-server (nmt-tmpdir) "--backend" "rest" "--config" (nmt-demo-config api)))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (with-temp-buffer
      (insert "Locked account\n")
      (let ((b (netmodel-button "account" "7" (point-min))))
        (nmt-wait 5 (lambda () (equal "[ Follow ]" (nmt-label b)))
                  (lambda () (format "the first state (at %S)" (nmt-label b))))
        (goto-char (point-min))
        (netmodel-toggle-at-point)
        (nmt-wait 5 (lambda () (equal "[ Requested ]" (nmt-label b)))
                  (lambda () (format "the request (at %S)" (nmt-label b))))
        (should (equal ["7"] (plist-get (nmt-control api "GET" "state") :requested)))
        (goto-char (point-min))
        (netmodel-toggle-at-point)
        (nmt-wait 5 (lambda () (let ((s (overlay-get b 'netmodel-state)))
                                 (and (equal "[ Follow ]" (nmt-label b))
                                      (not (netmodel--true-p (plist-get s :requested)))
                                      (not (netmodel--true-p (plist-get s :pending))))))
                  (lambda () (format "the withdrawn request (at %S)" (nmt-label b))))
        (let ((api-state (nmt-control api "GET" "state")))
          (should (equal [] (plist-get api-state :requested)))
          (should-not (seq-contains-p (plist-get api-state :following) "7")))))))

(provide 'netmodel-requested-test)
;;; netmodel-requested-test.el ends here
