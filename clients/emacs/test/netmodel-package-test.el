;;; netmodel-package-test.el --- Byte-compiling and installing the package  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(defun nmt-emacs (&rest forms)
  "Run FORMS in a fresh `emacs --batch -Q'; return (EXIT-CODE OUTPUT)."
  (with-temp-buffer
    (let ((code (call-process (expand-file-name invocation-name invocation-directory) nil t nil
                              "--batch" "-Q" "--eval" (format "%S" `(progn ,@forms)))))
      (list code (buffer-string)))))

(defun nmt-sources ()
  "The package's files."
  (directory-files nmt-root t "\\`netmodel.*\\.el\\'"))

(ert-deftest netmodel-byte-compiles-without-warnings ()
  (let ((dir (nmt-tmpdir)))
    (dolist (f (nmt-sources)) (copy-file f (file-name-as-directory dir)))
    (let ((res (nmt-emacs `(setq byte-compile-error-on-warn t)
                          `(push ,dir load-path)
                          `(dolist (f (directory-files ,dir t "\\.el\\'"))
                             (unless (byte-compile-file f) (kill-emacs 1))))))
      (should (equal (list 0 "") (list (car res) (replace-regexp-in-string "^Loading .*\n" "" (cadr res))))))))

(ert-deftest netmodel-package-install-file-and-autoloads ()
  (let* ((dir (nmt-tmpdir))
         (elpa (expand-file-name "elpa" dir))
         (install (nmt-emacs `(setq package-user-dir ,elpa package-archives nil)
                             '(package-initialize)
                             `(package-install-file ,nmt-root)
                             '(message "installed: %S" (package-installed-p 'netmodel)))))
    (should (equal 0 (car install)))
    (should (string-search "installed: t" (cadr install)))
    (should (file-exists-p (expand-file-name "netmodel-0.1.0/netmodel-autoloads.el" elpa)))
    (should-not (directory-files (expand-file-name "netmodel-0.1.0" elpa) nil "test\\|README"))
    ;; a fresh Emacs: the commands are autoloaded, and load the installed files
    (let ((use (nmt-emacs `(setq package-user-dir ,elpa package-archives nil)
                          '(package-initialize)
                          '(dolist (c '(netmodel-follow netmodel-unfollow netmodel-toggle netmodel-list))
                             (message "%s %s %s" c (commandp c) (autoloadp (symbol-function c))))
                          '(require 'netmodel-list)
                          '(message "loaded from %s" (file-name-directory (locate-library "netmodel")))
                          '(message "compiled %s" (byte-code-function-p (symbol-function 'netmodel-follow))))))
      (should (equal 0 (car use)))
      (dolist (c '("netmodel-follow" "netmodel-unfollow" "netmodel-toggle" "netmodel-list"))
        (should (string-search (concat c " t t") (cadr use))))
      (should (string-search (concat "loaded from " (file-name-as-directory (expand-file-name "netmodel-0.1.0" elpa)))
                             (cadr use)))
      (should (string-search "compiled t" (cadr use))))))

(provide 'netmodel-package-test)
;;; netmodel-package-test.el ends here
