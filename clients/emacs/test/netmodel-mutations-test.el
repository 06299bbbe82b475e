;;; netmodel-mutations-test.el --- Failed intents told on connect  -*- lexical-binding: t; -*-

;;; Commentary:

;; `netmodel-tell-failures': the intents the server's ledger says failed are shown
;; in the echo area ("your follow of X failed: ..."), each once: as they fail, and on
;; connect and every reconnect those not told yet; the mutations topic gives each
;; outcome to the subscription.

;;; Code:

(require 'netmodel-test-helpers)

(defvar nmt--told nil "Messages that told a failure, newest first.")

(defun nmt--record-message (format &rest args)
  "Keep the failures `message' is asked to show (FORMAT, ARGS)."
  (when format
    (let ((text (apply #'format-message format args)))
      (when (string-match-p "failed:" text) (push text nmt--told)))))

(defmacro nmt--recording-failures (&rest body)
  "Run BODY with the failures `message' shows kept in `nmt--told', newest first."
  (declare (indent 0))
  `(progn
     (setq nmt--told nil)
     (advice-add 'message :before #'nmt--record-message)
     (unwind-protect (progn ,@body)
       (advice-remove 'message #'nmt--record-message))))

(ert-deftest netmodel-tells-failures-on-connect-and-reconnect-once ()
  (let* ((dir (nmt-tmpdir))
         (refusing "--simulate=latency=10,failure=1,status=422")
         (srv (nmt-start-server dir refusing))
         (seen (expand-file-name "seen" dir)))
    (nmt--recording-failures
     ;; Without the option: nothing told.
     (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
     (should (= 1 (car (nmt-call (plist-get srv :socket) "follow" "kind=artist" "id=kaws" "await:=true"))))
     (netmodel-request-sync "stats" nil)
     (nmt-sleep 0.3)
     (should-not nmt--told)
     ;; With it: told on connect, once.
     (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t
                'netmodel-tell-failures t 'netmodel-seen-file seen)
     (netmodel-request-sync "stats" nil)
     (nmt-wait 5 (lambda () nmt--told) "the failure told")
     (should (equal nmt--told
                    '("netmodel: your follow of artist/kaws failed: simulated HTTP 422 (follow artist/kaws)")))
     (nmt-wait 5 (lambda () (= 1 (netmodel--read-seen))) "the seq seen kept")
     ;; While Emacs is away, another server on the state folder sees an unfollow
     ;; refused; the reconnect tells only that one.
     (signal-process (plist-get srv :pid) 'SIGKILL)
     (nmt-wait 5 (lambda () (not (eq 'connected (plist-get (netmodel-info) :status))))
               "the client to see the server gone")
     (let* ((other-dir (nmt-tmpdir))
            (other (nmt-start-server other-dir (concat "--state-dir=" dir "/state") refusing)))
       (should (= 1 (car (nmt-call (plist-get other :socket) "unfollow" "kind=artist" "id=andy"
                                   "await:=true"))))
       (signal-process (plist-get other :pid) 'SIGTERM)
       (nmt-wait 5 (lambda () (not (process-live-p (plist-get other :process)))) "the other server gone"))
     (nmt-start-server dir refusing)
     (netmodel-subscribe "mutations" #'ignore) ; something that wants the connection back
     (nmt-wait 10 (lambda () (= 2 (length nmt--told))) "the new failure told on reconnect")
     (should (equal (car nmt--told)
                    "netmodel: your unfollow of artist/andy failed: simulated HTTP 422 (unfollow artist/andy)"))
     (nmt-sleep 0.3)
     (should (= 2 (length nmt--told))))))

(ert-deftest netmodel-tells-a-failure-as-it-happens-and-not-again-on-reconnect ()
  (let* ((dir (nmt-tmpdir))
         (refusing "--simulate=latency=10,failure=1,status=422")
         (srv (nmt-start-server dir refusing))
         (seen (expand-file-name "seen" dir)))
    (nmt--recording-failures
     (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t
                'netmodel-tell-failures t 'netmodel-seen-file seen)
     (netmodel-request-sync "stats" nil)
     (nmt-wait 5 (lambda () (file-exists-p seen)) "the empty ledger read")
     (netmodel-follow "artist" "kaws" #'ignore)
     (nmt-wait 5 (lambda () nmt--told) "the failure told as it happened")
     (should (equal nmt--told
                    '("netmodel: your follow of artist/kaws failed: simulated HTTP 422 (follow artist/kaws)")))
     (signal-process (plist-get srv :pid) 'SIGKILL)
     (nmt-wait 5 (lambda () (not (eq 'connected (plist-get (netmodel-info) :status))))
               "the client to see the server gone")
     (nmt-start-server dir refusing)
     (nmt-wait 10 (lambda () (eq 'connected (plist-get (netmodel-info) :status))) "reconnected")
     (netmodel-request-sync "stats" nil)
     (nmt-sleep 0.5)
     (should (= 1 (length nmt--told))))))

(ert-deftest netmodel-tells-next-time-an-intent-pending-when-the-ledger-was-read ()
  (let* ((dir (nmt-tmpdir))
         (srv (nmt-start-server dir "--simulate=latency=1500,failure=1,status=422"))
         (socket (plist-get srv :socket))
         (seen (expand-file-name "seen" dir)))
    (nmt--recording-failures
     ;; Another client's follow, not settled when this client reads the ledger.
     (should (= 0 (car (nmt-call socket "follow" "kind=artist" "id=kaws"))))
     (nmt-setup 'netmodel-socket socket 'netmodel-spawn nil 'netmodel-quiet t
                'netmodel-tell-failures t 'netmodel-seen-file seen)
     (netmodel-request-sync "stats" nil)
     (nmt-wait 5 (lambda () (file-exists-p seen)) "the ledger read")
     (should (= 0 (netmodel--read-seen)))
     (netmodel-disconnect)
     (nmt-wait 5 (lambda () (string-match-p "\"refused\"" (cadr (nmt-call socket "getMutations"))))
               "the follow refused while this client is away")
     (should-not nmt--told)
     (nmt-setup 'netmodel-socket socket 'netmodel-spawn nil 'netmodel-quiet t
                'netmodel-tell-failures t 'netmodel-seen-file seen)
     (netmodel-request-sync "stats" nil)
     (nmt-wait 5 (lambda () nmt--told) "told on the next connect")
     (nmt-wait 5 (lambda () (= 1 (netmodel--read-seen))) "settled: the next read starts after it"))))

(ert-deftest netmodel-mutations-topic-gives-each-outcome ()
  (let* ((srv (nmt-start-server (nmt-tmpdir) "--simulate=latency=10,failure=1,status=422"))
         got)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (should (equal (netmodel-topic "mutations") '(:type "mutations")))
    (let ((sub (netmodel-subscribe "mutations" (lambda (entry) (push entry got)))))
      (nmt-wait 5 (lambda () (netmodel-sub-name sub)) "subscribed")
      (netmodel-follow "artist" "kaws" #'ignore)
      (nmt-wait 5 (lambda () got) "the outcome pushed")
      (should (equal "refused" (plist-get (car got) :outcome)))
      (should (netmodel-mutation-failed-p (car got)))
      (should (string-prefix-p "your follow of artist/kaws failed: simulated HTTP 422"
                               (netmodel-mutation-message (car got)))))))

(provide 'netmodel-mutations-test)
;;; netmodel-mutations-test.el ends here
