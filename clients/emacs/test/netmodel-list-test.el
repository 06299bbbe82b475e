;;; netmodel-list-test.el --- The list buffer against the real fetchList  -*- lexical-binding: t; -*-

;;; Code:

(require 'netmodel-test-helpers)

(defun nmt-items (buf)
  "The items BUF shows: an alist of id and the Follow column."
  (with-current-buffer buf
    (mapcar (lambda (e) (cons (cadr (car e)) (substring-no-properties (aref (cadr e) 1))))
            tabulated-list-entries)))

(defun nmt-status (buf)
  "BUF's status line."
  (with-current-buffer buf (netmodel-list-status)))

(defun nmt-load-all (buf)
  "Wait for BUF's list to load, then press N while it has more; return the pages."
  (let ((pages 1))
    (nmt-wait 5 (lambda () (string-prefix-p "loaded" (nmt-status buf)))
              (lambda () (format "the list (status: %s)" (nmt-status buf))))
    (while (string-match-p "(more: N)" (nmt-status buf))
      (let ((before (length (nmt-items buf))))
        (with-current-buffer buf (execute-kbd-macro (kbd "N")))
        (nmt-wait 5 (lambda () (and (string-prefix-p "loaded" (nmt-status buf))
                                    (> (length (nmt-items buf)) before)))
                  (lambda () (format "page %d (status: %s)" (1+ pages) (nmt-status buf))))
        (cl-incf pages)
        (should (< pages 100))))
    pages))

(ert-deftest netmodel-list-pages-toggles-and-refreshes ()
  (let* ((srv (nmt-start-server (nmt-tmpdir)))
         (n 120) (left n) errors asked)
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    ;; enough follows for more than one page on any reasonable page size
    (dotimes (i n)
      (netmodel-follow "artist" (format "a%03d" (1+ i)) (lambda (e _) (cl-decf left) (when e (push e errors))) t))
    (nmt-wait 20 (lambda () (zerop left)) "the follows")
    (should-not errors)
    ;; what the buffer asks for, to tell a refresh from a next page
    (advice-add 'netmodel-request :before
                (lambda (method params &rest _)
                  (when (equal method "fetchList") (push (plist-get params :page) asked)))
                '((name . nmt-pages)))
    (unwind-protect
        (let* ((buf (netmodel-list "following/artist")))
          (should (eq buf (window-buffer)))
          (should (equal "*netmodel: following/artist*" (buffer-name buf)))
          (let ((pages (nmt-load-all buf)))
            (should (> pages 1))
            (should (equal "first" (car (last asked))))
            (should (= (1- pages) (cl-count "next" asked :test #'equal)))
            (should (= n (length (nmt-items buf))))
            (should (cl-every (lambda (it) (equal "[ Following ]" (cdr it))) (nmt-items buf))))
          ;; RET unfollows the item at point; the list's notification shows it
          (with-current-buffer buf
            (goto-char (point-min))
            (while (not (equal '("artist" "a001") (tabulated-list-get-id))) (forward-line 1))
            (execute-kbd-macro (kbd "RET")))
          (nmt-wait 5 (lambda () (member (assoc "a001" (nmt-items buf)) '(nil ("a001" . "[ Follow ]"))))
                    "a001 unfollowed in the list")
          (should (eq :json-false (plist-get (netmodel-request-sync "getFollowState" '(:kind "artist" :id "a001"))
                                             :following)))
          ;; another client's change arrives as a list notification
          (should (= 0 (car (nmt-call (plist-get srv :socket) "unfollow" "kind=artist" "id=a002" "await:=true"))))
          (nmt-wait 5 (lambda () (member (assoc "a002" (nmt-items buf)) '(nil ("a002" . "[ Follow ]"))))
                    "a002 unfollowed in the list")
          ;; g refreshes: the unfollowed are gone, a new follow appears
          (should (= 0 (car (nmt-call (plist-get srv :socket) "follow" "kind=artist" "id=zzz" "await:=true"))))
          (setq asked nil)
          (with-current-buffer buf (execute-kbd-macro (kbd "g")))
          (should (equal '("refresh") asked))
          (should (string-prefix-p "loading" (nmt-status buf)))
          (nmt-load-all buf)
          (should (equal (sort (mapcar #'car (nmt-items buf)) #'string<)
                         (sort (cons "zzz" (cl-loop for i from 3 to n collect (format "a%03d" i))) #'string<)))
          ;; the same list again is the same buffer
          (should (eq buf (netmodel-list "following/artist" '(:tag nil)))))
      (advice-remove 'netmodel-request 'nmt-pages))))

(ert-deftest netmodel-list-empty ()
  (let ((srv (nmt-start-server (nmt-tmpdir))))
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil)
    (let ((buf (netmodel-list "following/artist")))
      (nmt-wait 5 (lambda () (equal "loaded (empty)" (nmt-status buf)))
                (lambda () (format "the empty list (status: %s)" (nmt-status buf))))
      (kill-buffer buf)
      (should-not netmodel--subs))))

(provide 'netmodel-list-test)
;;; netmodel-list-test.el ends here
