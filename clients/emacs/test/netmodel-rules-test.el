;;; netmodel-rules-test.el --- Rows of the README's client table not proven elsewhere  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-the-snapshot-comes-first ()
  (let* ((srv (nmt-start-server (nmt-tmpdir)))
         (sock (plist-get srv :socket))
         sub seen)
    (nmt-setup 'netmodel-socket sock 'netmodel-spawn nil 'netmodel-quiet t)
    (should (= 0 (car (nmt-call sock "follow" "kind=artist" "id=banksy" "await:=true"))))
    (setq sub (netmodel-subscribe "entity:artist/banksy"
                                  (lambda (state) (push (list (netmodel-sub-name sub) state) seen))))
    (nmt-wait 5 (lambda () seen) "the first state")
    ;; delivered with the subscribe answer (the subscription has its name), following
    (should (netmodel-sub-name sub))
    (should (equal (netmodel-sub-name sub) (car (car (last seen)))))
    (should (eq t (plist-get (cadr (car (last seen))) :following)))
    (should (eq t (plist-get (cadr (car (last seen))) :confirmed)))))

(ert-deftest netmodel-a-spawned-server-that-dies-is-not-started-again ()
  (let ((spawns 0) ended got)
    (nmt-setup 'netmodel-socket 'none 'netmodel-state-dir (expand-file-name "state" (nmt-tmpdir))
               'netmodel-serve-args '("--simulate" "latency=3000") 'netmodel-quiet t)
    (advice-add 'make-process :before
                (lambda (&rest args) (when (member "serve" (plist-get args :command)) (cl-incf spawns)))
                '((name . nmt-count-spawns)))
    (unwind-protect
        (let ((sub (netmodel-subscribe "entity:artist/x" #'ignore
                                       (lambda (err) (push (plist-get err :code) ended)))))
          (netmodel-request-sync "stats" nil)
          (let ((pid (plist-get (netmodel-info) :pid)))
            (netmodel-request "follow" '(:kind "artist" :id "x" :await t) (lambda (err _) (setq got err)))
            (nmt-wait 5 (lambda () (netmodel-sub-name sub)) "subscribed")
            (signal-process pid 'SIGKILL))
          (nmt-wait 5 (lambda () got) "the waiting request to fail")
          (should (= netmodel-connection-lost (plist-get got :code)))
          (should (equal (list netmodel-connection-lost) ended))
          (should (eq 'idle (plist-get (netmodel-info) :status)))
          (nmt-sleep 0.5)
          (should (= 1 spawns))
          ;; the next request starts one, and the subscription is made again
          (should (plist-get (netmodel-request-sync "stats" nil) :uptimeMs))
          (push (plist-get (netmodel-info) :pid) nmt--pids)
          (should (= 2 spawns))
          (nmt-wait 5 (lambda () (netmodel-sub-name sub)) "subscribed again"))
      (advice-remove 'make-process 'nmt-count-spawns))))

(ert-deftest netmodel-a-callback-that-throws-breaks-nothing ()
  ;; ERT sets `debug-on-error', under which an error goes to the debugger instead
  (let ((srv (nmt-start-server (nmt-tmpdir))) (debug-on-error nil) others answered)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (netmodel-subscribe "entity:artist/banksy" (lambda (_) (error "first subscriber broke")))
    (netmodel-subscribe "entity:artist/banksy" (lambda (state) (push state others)))
    (netmodel-request "stats" nil (lambda (_e _r) (error "a request callback broke")))
    (netmodel-request "stats" nil (lambda (_e r) (setq answered r)))
    (nmt-wait 5 (lambda () (and others answered)) "the other callbacks")
    (netmodel-follow "artist" "banksy" nil t)
    (nmt-wait 5 (lambda () (cl-some (lambda (s) (eq t (plist-get s :following))) others)) "the follow")
    (should (eq 'connected (plist-get (netmodel-info) :status)))
    (should (string-match-p "error in a callback: first subscriber broke"
                            (with-current-buffer (messages-buffer) (buffer-string))))
    (should (string-match-p "error in a callback: a request callback broke"
                            (with-current-buffer (messages-buffer) (buffer-string))))))

(ert-deftest netmodel-timeouts-and-cancels-reach-the-server ()
  (let ((srv (nmt-start-server (nmt-tmpdir) "--simulate" "latency=3000")) got)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (netmodel-request "follow" '(:kind "artist" :id "a" :await t) (lambda (e _) (push e got)) :timeout 0.2)
    (netmodel-cancel (netmodel-request "follow" '(:kind "artist" :id "b" :await t)
                                       (lambda (e _) (push e got))))
    (nmt-wait 5 (lambda () (= 2 (length got))) "both answers")
    (should (equal (list netmodel-timeout netmodel-cancelled)
                   (sort (mapcar (lambda (e) (plist-get e :code)) got) #'<)))
    ;; the server cancels both (its -32800 answers count as its errors)
    (nmt-wait 5 (lambda () (equal 2 (plist-get (plist-get (plist-get (netmodel-request-sync "stats" nil) :errors)
                                                          :byCode)
                                               (intern ":-32800"))))
              "the server to cancel both")))

(provide 'netmodel-rules-test)
;;; netmodel-rules-test.el ends here
