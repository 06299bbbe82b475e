;;; netmodel-spawn-test.el --- Spawning `netmodel serve', and no orphans  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(ert-deftest netmodel-spawns-and-shares-the-socket ()
  (let* ((dir (nmt-tmpdir))
         (sock (expand-file-name "run/s.sock" dir))) ; its folder does not exist yet
    (nmt-setup 'netmodel-socket sock 'netmodel-state-dir (expand-file-name "state" dir))
    (let ((state (netmodel-request-sync "follow" '(:kind "artist" :id "banksy" :await t)))
          (pid (plist-get (netmodel-info) :pid)))
      (should (eq t (plist-get state :following)))
      (should (eq t (plist-get state :confirmed)))
      (should (eq 'spawn (plist-get (netmodel-info) :transport)))
      (should (and pid (nmt-alive pid)))
      (push pid nmt--pids)
      (should (file-directory-p (expand-file-name "state" dir)))
      ;; another client reaches the same server (and the same models) through the socket
      (let ((res (nmt-call sock "getFollowState" "kind=artist" "id=banksy")))
        (should (= 0 (car res)))
        (should (eq t (plist-get (json-parse-string (cadr res) :object-type 'plist) :following))))
      (netmodel-disconnect)
      (nmt-wait 5 (lambda () (not (nmt-alive pid))) "the spawned server to exit on disconnect"))))

(ert-deftest netmodel-a-server-that-cannot-start-is-reported-not-looped ()
  (let ((dir (nmt-tmpdir)))
    (nmt-start-server dir)              ; owns DIR/state
    (nmt-setup 'netmodel-socket 'none 'netmodel-state-dir (expand-file-name "state" dir))
    (let ((err (cdr (should-error (netmodel-request-sync "stats" nil) :type 'netmodel-error))))
      (should (equal netmodel-not-connected (plist-get err :code)))
      (should (string-match-p "in use" (plist-get err :message))))
    (should (eq 'idle (plist-get (netmodel-info) :status)))))

;; A server that exits before answering (a bad option) while a button waits was
;; started again every 5 s for ever.
(ert-deftest netmodel-a-server-that-cannot-start-is-tried-a-bounded-number-of-times ()
  (let ((spawns 0) errors)
    (nmt-setup 'netmodel-socket 'none 'netmodel-serve-args '("--no-such-option") 'netmodel-quiet t)
    (advice-add 'make-process :before
                (lambda (&rest args)
                  (when (member "serve" (plist-get args :command)) (cl-incf spawns)))
                '((name . nmt-count-spawns)))
    (unwind-protect
        (progn
          (netmodel-subscribe "entity:artist/banksy" #'ignore (lambda (err) (push err errors)))
          (nmt-wait 20 (lambda () (eq 'idle (plist-get (netmodel-info) :status))) "giving up starting the server")
          (should (= netmodel-spawn-max-attempts spawns))
          ;; reported once, in the server's own words
          (should (= 1 (length errors)))
          (should (string-match-p "unknown option --no-such-option" (plist-get (car errors) :message)))
          (nmt-sleep 1)
          (should (= netmodel-spawn-max-attempts spawns))
          ;; a request says why without starting one; `netmodel-connect' tries again
          (let ((err (cdr (should-error (netmodel-request-sync "stats" nil) :type 'netmodel-error))))
            (should (string-match-p "unknown option" (plist-get err :message))))
          (should (= netmodel-spawn-max-attempts spawns))
          (setq netmodel-serve-args nil
                netmodel-state-dir (expand-file-name "state" (nmt-tmpdir)))
          (netmodel-connect)
          (should (plist-get (netmodel-request-sync "stats" nil) :uptimeMs))
          (push (plist-get (netmodel-info) :pid) nmt--pids))
      (advice-remove 'make-process 'nmt-count-spawns))))

(defun nmt-child-with-server ()
  "A child Emacs that spawned a server: (CHILD-PROCESS SERVER-PID)."
  (let* ((dir (nmt-tmpdir))
         (out (generate-new-buffer " *child*"))
         (child (make-process
                 :name "nmt-child" :buffer out :noquery t :connection-type 'pipe
                 :command (list (expand-file-name invocation-name invocation-directory)
                                "--batch" "-Q" "-L" nmt-root
                                "--eval"
                                (format "%S" `(progn
                                                (require 'netmodel)
                                                (setq netmodel-program ,nmt-bin netmodel-socket 'none
                                                      netmodel-state-dir ,(expand-file-name "state" dir))
                                                (netmodel-request-sync "stats" nil)
                                                (message "pid=%d" (plist-get (netmodel-info) :pid)) ; stderr: not buffered
                                                (while t (accept-process-output nil 1)))))))
         pid)
    (nmt-wait 10 (lambda () (with-current-buffer out
                              (when (string-match "pid=\\([0-9]+\\)" (buffer-string))
                                (setq pid (string-to-number (match-string 1 (buffer-string)))))))
              (lambda () (format "the child's server (output: %s)" (with-current-buffer out (buffer-string)))))
    (should (nmt-alive pid))
    (push pid nmt--pids)
    (list child pid)))

(ert-deftest netmodel-no-orphaned-server-after-emacs-is-terminated ()
  (pcase-let ((`(,child ,pid) (nmt-child-with-server)))
    (signal-process child 'SIGTERM)     ; Emacs runs `kill-emacs-hook'
    (nmt-wait 5 (lambda () (not (process-live-p child))) "the child Emacs to end")
    (nmt-wait 5 (lambda () (not (nmt-alive pid))) (format "server %d to exit after SIGTERM" pid))))

(ert-deftest netmodel-no-orphaned-server-after-emacs-is-killed ()
  (pcase-let ((`(,child ,pid) (nmt-child-with-server)))
    (signal-process child 'SIGKILL)     ; no hook runs: the server sees EOF on its stdin
    (nmt-wait 5 (lambda () (not (process-live-p child))) "the child Emacs to die")
    (nmt-wait 5 (lambda () (not (nmt-alive pid))) (format "server %d to exit after SIGKILL" pid))))

(provide 'netmodel-spawn-test)
;;; netmodel-spawn-test.el ends here
