;;; netmodel-wire-test.el --- Reading messages, request ids and timers  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(defun nmt-request-timers ()
  "The :timeout timers armed for requests, still in `timer-list'."
  (cl-remove-if-not (lambda (tm) (memq (timer--function tm) '(netmodel-cancel netmodel--timed-out)))
                    timer-list))

(ert-deftest netmodel-reads-a-message-holding-nul ()
  ;; Emacs 28's parser refuses \u0000: such a message was dropped, the list stayed
  ;; "loading" for good and requests about the entity never called back.
  (let* ((srv (nmt-start-server (nmt-tmpdir)))
         (sock (plist-get srv :socket))
         (id (string ?a 0 ?b)))
    (nmt-setup 'netmodel-socket sock 'netmodel-spawn nil 'netmodel-quiet t)
    (should (= 0 (car (nmt-call sock "follow" "kind=artist" "id:=\"a\\u0000b\"" "await:=true"))))
    (should (= 0 (car (nmt-call sock "follow" "kind=artist" "id=plain" "await:=true"))))
    (let ((buf (netmodel-list "following/artist")))
      (unwind-protect
          (progn
            (nmt-wait 5 (lambda () (string-prefix-p "loaded" (with-current-buffer buf (netmodel-list-status))))
                      (lambda () (format "the list (status: %s)" (with-current-buffer buf (netmodel-list-status)))))
            (should (equal (sort (mapcar (lambda (e) (cadr (car e)))
                                         (with-current-buffer buf tabulated-list-entries))
                                 #'string<)
                           (sort (list id "plain") #'string<))))
        (kill-buffer buf)))
    (let ((state (netmodel-request-sync "getFollowState" (list :kind "artist" :id id) 5)))
      (should (equal id (plist-get state :id)))
      (should (eq t (plist-get state :following))))
    ;; an escaped backslash before "u0000" is not an escape of NUL
    (with-temp-buffer
      (insert "{\"a\":\"\\\\u0000\\u0000\",\"k\\u0000\":[\"x\\u0000\"]}")
      (should (equal (list :a (string ?\\ ?u ?0 ?0 ?0 ?0 0) (intern (string ?: ?k 0)) (vector (string ?x 0)))
                     (netmodel--parse (point-min) (point-max)))))))

;; Bytes are counted as the server counts them (UTF-8), whatever the reads' sizes.
(ert-deftest netmodel-reads-messages-split-anywhere ()
  (let* ((proc (make-pipe-process :name "nmt-pipe" :noquery t :buffer (generate-new-buffer " *nmt-pipe*")))
         (netmodel--process proc)
         (frame (lambda (json) (format "Content-Length: %d\r\n\r\n%s"
                                       (string-bytes (encode-coding-string json 'utf-8)) json)))
         (text (concat (funcall frame "{\"jsonrpc\":\"2.0\",\"id\":901,\"result\":\"é1 ✓\"}")
                       (funcall frame "{\"jsonrpc\":\"2.0\",\"id\":902,\"result\":[\"€\",2]}")))
         got)
    (unwind-protect
        (dolist (chunk '(1 7 1000))
          (setq got nil)
          (dolist (id '(901 902))
            (puthash id (netmodel--make-req :id id :callback (lambda (_e r) (push r got))) netmodel--callbacks))
          (cl-loop for i from 0 below (length text) by chunk
                   do (netmodel--filter proc (substring text i (min (length text) (+ i chunk)))))
          (should (equal '("é1 ✓" ["€" 2]) (reverse got)))
          (should (= 0 (buffer-size (process-buffer proc)))))
      (delete-process proc))))

(ert-deftest netmodel-request-ids-and-timers-belong-to-one-request ()
  ;; Ids restarted at 1 on each connection: an old request's :timeout cancelled the
  ;; new request with its id.  Both requests wait 3 s for the backend; the first
  ;; one's timeout is 2 s.
  (let* ((dir (nmt-tmpdir))
         (srv (nmt-start-server dir "--simulate" "latency=3000"))
         first second)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (netmodel-request-sync "stats" nil) ; the server answered: a lost connection, not a failed start
    (netmodel-request "follow" '(:kind "artist" :id "old" :await t)
                      (lambda (err _) (setq first err)) :timeout 2)
    (nmt-sleep 0.2)
    (signal-process (plist-get srv :pid) 'SIGKILL)
    (nmt-wait 5 (lambda () first) "the first request to fail with the connection")
    (should (= netmodel-connection-lost (plist-get first :code)))
    (should-not (nmt-request-timers))
    (nmt-start-server dir "--simulate" "latency=3000")
    (nmt-wait 10 (lambda () (eq 'connected (plist-get (netmodel-info) :status))) "the reconnect")
    (netmodel-request-sync "stats" nil) ; the next request is the second on this connection too
    (netmodel-request "follow" '(:kind "artist" :id "new" :await t)
                      (lambda (err state) (setq second (list err state))))
    (nmt-wait 10 (lambda () second) "the second request's answer")
    (should-not (car second))
    (should (equal "new" (plist-get (cadr second) :id)))
    ;; a synchronous request leaves no timer behind once answered
    (dotimes (_ 5) (netmodel-request-sync "stats" nil))
    (should-not (nmt-request-timers))))

(ert-deftest netmodel-an-error-without-id-fails-the-waiting-requests ()
  ;; A message over --max-message-bytes is answered with -32600 and no id (the
  ;; server could not read one).
  (let ((srv (nmt-start-server (nmt-tmpdir) "--max-message-bytes=2000")) got)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (netmodel-request-sync "stats" nil)
    (netmodel-request "configure" (list :values (list :big (make-string 3000 ?x)))
                      (lambda (err _) (setq got (or err 'no-error))))
    (nmt-wait 5 (lambda () got) "the oversized request's answer")
    (should (= (alist-get 'invalid-request netmodel-protocol-errors) (plist-get got :code)))
    ;; the connection is still good
    (should (plist-get (netmodel-request-sync "stats" nil) :uptimeMs))))

(ert-deftest netmodel-killing-a-narrowed-buffer-ends-all-its-buttons ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t)
    (let ((buf (generate-new-buffer "*buttons*")))
      (with-current-buffer buf
        (insert "Banksy\nKaws\nKusama\n")
        (netmodel-button "artist" "banksy" (point-min))
        (netmodel-button "artist" "kaws" (line-beginning-position 2))
        (netmodel-button "artist" "kusama" (line-beginning-position 3))
        (nmt-wait 5 (lambda () (cl-every #'netmodel-sub-name netmodel--subs)) "the subscriptions")
        (narrow-to-region (line-beginning-position 2) (line-end-position 2)))
      (should (= 3 (length netmodel--subs)))
      (kill-buffer buf)
      (should-not netmodel--subs)
      (nmt-wait 5 (lambda () (= 0 (plist-get (netmodel-request-sync "stats" nil) :subscriptions)))
                "the server to end them"))))

(ert-deftest netmodel-quiet-says-nothing-when-the-connection-is-lost ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t
               'netmodel-reconnect-max-attempts 1)
    (netmodel-subscribe "entity:artist/x" #'ignore)
    (netmodel-request-sync "stats" nil)
    (with-current-buffer (messages-buffer)
      (let ((inhibit-read-only t)) (erase-buffer)))
    (signal-process (plist-get srv :pid) 'SIGKILL)
    (nmt-wait 10 (lambda () (eq 'idle (plist-get (netmodel-info) :status))) "giving up")
    (should (equal "" (with-current-buffer (messages-buffer) (buffer-string))))))

(provide 'netmodel-wire-test)
;;; netmodel-wire-test.el ends here
