;;; netmodel-test-helpers.el --- Shared parts of the ERT tests  -*- lexical-binding: t; -*-

;;; Commentary:

;; Each test file runs in its own `emacs --batch' (test/run.sh), against the real
;; binary ($NETMODEL_BIN), with its own temporary folders.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'netmodel)
(require 'netmodel-list)

(defvar nmt-root (file-name-directory (directory-file-name (file-name-directory load-file-name)))
  "clients/emacs/.")

(defvar nmt-bin (or (getenv "NETMODEL_BIN")
                    (expand-file-name "../../.build/debug/netmodel" nmt-root)))

(defvar nmt--servers nil "Server processes the tests started.")
(defvar nmt--pids nil "Process ids to end when the tests are done.")

(defun nmt-tmpdir ()
  "A fresh folder, 0700, with a short path (socket paths hold at most 107 bytes)."
  (let ((dir (make-temp-file "/tmp/nmt" t)))
    (set-file-modes dir #o700)
    dir))

(defun nmt-wait (secs pred what)
  "Poll PRED every 20 ms until it holds; fail with WHAT (a string or a function) after SECS."
  (let ((deadline (+ (float-time) secs)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (unless (funcall pred)
      (ert-fail (format "timed out after %s s waiting for %s" secs
                        (if (functionp what) (funcall what) what))))))

(defun nmt-sleep (secs)
  "Let timers and processes run for SECS (never an assertion by itself)."
  (let ((deadline (+ (float-time) secs)))
    (while (< (float-time) deadline) (accept-process-output nil 0.02))))

(defun nmt-alive (pid)
  "Whether process PID runs (a zombie has exited: the container may not reap)."
  (let ((stat (ignore-errors (with-temp-buffer
                               (insert-file-contents (format "/proc/%d/stat" pid))
                               (buffer-string)))))
    (and stat (string-match ") \\([A-Za-z]\\)" stat)
         (not (member (match-string 1 stat) '("Z" "X"))))))

(defun nmt-start-server (dir &rest extra)
  "`netmodel serve --socket=DIR/s.sock --no-stdio --state-dir=DIR/state EXTRA…'.
Returns (:socket PATH :process PROC :pid PID) once the socket accepts."
  (let* ((sock (expand-file-name "s.sock" dir))
         (proc (make-process :name "nmt-server" :noquery t :connection-type 'pipe
                             :buffer (generate-new-buffer " *nmt-server*")
                             :command (append (list nmt-bin "serve" (concat "--socket=" sock) "--no-stdio"
                                                    (concat "--state-dir=" dir "/state"))
                                              extra))))
    (push proc nmt--servers)
    (nmt-wait 5 (lambda ()
                  (or (not (process-live-p proc))
                      (let ((c (ignore-errors (make-network-process :name "nmt-probe" :family 'local
                                                                    :service sock :noquery t))))
                        (when c (delete-process c) t))))
              "the server's socket")
    (unless (process-live-p proc)
      (ert-fail (format "server did not start: %s" (with-current-buffer (process-buffer proc) (buffer-string)))))
    (list :socket sock :process proc :pid (process-id proc))))

(defun nmt-call (socket &rest args)
  "`netmodel call --socket=SOCKET ARGS…' as another client: (EXIT-CODE OUTPUT)."
  (with-temp-buffer
    (let ((code (apply #'call-process nmt-bin nil t nil "call" (concat "--socket=" socket) args)))
      (list code (buffer-string)))))

(defun nmt-setup (&rest settings)
  "A fresh client with SETTINGS (pairs of a `netmodel-…' variable and its value)."
  (netmodel-disconnect)
  (dolist (sub netmodel--subs) (netmodel-unsubscribe sub))
  (setq netmodel--subs nil netmodel--configured nil netmodel-quiet nil netmodel-program nmt-bin netmodel-serve-args nil
        netmodel-socket nil netmodel-spawn t netmodel-state-dir nil netmodel-reconnect-max-attempts nil)
  (clrhash netmodel--known)
  (clrhash netmodel--known-versions)
  (cl-loop for (var val) on settings by #'cddr do (set var val)))

(defun nmt-label (ov)
  "The text button OV shows."
  (string-trim (substring-no-properties (or (overlay-get ov 'after-string) ""))))

(defun nmt-recorder (get)
  "A function that records each distinct value of GET and returns the current one.
Called with the argument `seen', it returns what it recorded, oldest first."
  (let (seen)
    (lambda (&optional what)
      (if (eq what 'seen)
          (reverse seen)
        (let ((v (funcall get)))
          (unless (equal v (car seen)) (push v seen))
          v)))))

;;;; The demo API servers of examples/ (examples/README.md), on loopback

(defun nmt-start-demo (api &rest args)
  "examples/API/server.py on a free port with ARGS: (:url URL :process PROC)."
  (let* ((dir (nmt-tmpdir))
         (port-file (expand-file-name "port" dir))
         (proc (make-process :name "nmt-demo" :noquery t :connection-type 'pipe
                             :buffer (generate-new-buffer " *nmt-demo*")
                             :command (append (list "python3" (expand-file-name
                                                              (format "../../examples/%s/server.py" api)
                                                              nmt-root)
                                                    "--port" "0" "--port-file" port-file "--quiet")
                                              args)))
         (port (lambda () (and (file-exists-p port-file)
                               (with-temp-buffer (insert-file-contents port-file)
                                                 (let ((p (string-trim (buffer-string))))
                                                   (and (not (string-empty-p p)) p)))))))
    (push proc nmt--servers)
    (nmt-wait 10 (lambda () (or (not (process-live-p proc)) (funcall port))) "the demo server's port")
    (unless (process-live-p proc)
      (ert-fail (format "the %s demo server exited: %s" api
                        (with-current-buffer (process-buffer proc) (buffer-string)))))
    (list :url (format "http://127.0.0.1:%s" (funcall port)) :process proc :api api)))

(defun nmt-control (demo method path &optional body)
  "METHOD /_control/PATH of DEMO with BODY (serialized as JSON): the answer, parsed."
  (with-temp-buffer
    (let ((code (apply #'call-process "curl" nil t nil "-sSf" "--noproxy" "*" "-X" method
                       (concat (plist-get demo :url) "/_control/" path)
                       (and body (list "-H" "Content-Type: application/json"
                                       "--data-binary" (json-serialize body))))))
      (unless (= 0 code) (ert-fail (format "curl %s %s: %s" method path (buffer-string))))
      (goto-char (point-min))
      (json-parse-buffer :object-type 'plist :null-object nil :false-object :json-false))))

(defun nmt-demo-config (demo &optional edit)
  "A file holding examples/API/config.json pointed at DEMO; EDIT changes it first.
EDIT gets the configuration as nested hash tables."
  (let ((config (with-temp-buffer
                  (insert-file-contents (expand-file-name (format "../../examples/%s/config.json"
                                                                  (plist-get demo :api))
                                                          nmt-root))
                  (json-parse-buffer :object-type 'hash-table)))
        (file (expand-file-name "config.json" (nmt-tmpdir))))
    (puthash "local" (plist-get demo :url) (gethash "environments" config))
    (when edit (funcall edit config))
    (with-temp-file file (insert (json-serialize config)))
    file))

(defun nmt-redisplay ()
  "Run the hooks redisplay runs on window changes and scrolling.
Batch Emacs never redisplays; windows, their starts and heights are real."
  (run-hook-with-args 'window-buffer-change-functions (selected-frame))
  (dolist (win (window-list nil 'no-minibuf))
    (with-current-buffer (window-buffer win)
      (run-hook-with-args 'window-scroll-functions win (window-start win)))))

(defun nmt-finish ()
  "End what the tests started."
  (ignore-errors (netmodel-disconnect))
  (dolist (p nmt--servers) (when (process-live-p p) (kill-process p)))
  (dolist (pid nmt--pids) (when (nmt-alive pid) (signal-process pid 'SIGTERM))))

(add-hook 'kill-emacs-hook #'nmt-finish)

(provide 'netmodel-test-helpers)
;;; netmodel-test-helpers.el ends here
