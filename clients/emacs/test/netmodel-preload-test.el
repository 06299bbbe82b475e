;;; netmodel-preload-test.el --- The list buffer tells the server what is on screen  -*- lexical-binding: t; -*-

;;; Commentary:

;; A 500-artist list on the Artsy demo whose pages carry no details: an artist's
;; name and counts come from its detail endpoint, which the server calls for the
;; items a host says it shows (setInterfaceState).  Windows are scrolled for real;
;; `nmt-redisplay' runs the hooks redisplay would (batch Emacs has none).

;;; Code:

(require 'netmodel-test-helpers)

(defconst nmt-detail "/api/v1/artist/")

(defun nmt-artist (n) (format "artist-%03d" n))

(defun nmt-detail-calls (api)
  "The artist ids of the detail calls DEMO received, in order."
  (cl-loop for e across (plist-get (nmt-control api "GET" "stats") :log)
           for path = (plist-get e :path)
           when (string-prefix-p nmt-detail path) collect (substring path (length nmt-detail))))

(defun nmt-row-ids (buf)
  "The ids of BUF's rows, top to bottom."
  (with-current-buffer buf
    (save-excursion
      (goto-char (point-min))
      (cl-loop until (eobp) collect (cadr (tabulated-list-get-id)) do (forward-line 1)))))

(defun nmt-show-row (win row)
  "Scroll WIN so that ROW (0-based) is its top row."
  (with-current-buffer (window-buffer win)
    (let ((pos (save-excursion (goto-char (point-min)) (forward-line row) (point))))
      (set-window-start win pos)
      (set-window-point win pos))))

(defun nmt-window-rows (win)
  "The rows (0-based) WIN shows."
  (let ((top (with-current-buffer (window-buffer win)
               (1- (line-number-at-pos (window-start win))))))
    (number-sequence top (+ top (window-body-height win) -1))))

(defun nmt-preload-idle (srv)
  "Wait for the server's preload queue to be empty."
  (let (preload)
    (nmt-wait 30 (lambda ()
                   (setq preload (plist-get (netmodel-request-sync "stats" nil) :preload))
                   (and (= 0 (plist-get preload :queued)) (= 0 (plist-get preload :inFlight))))
              (lambda () (format "an idle preload on %s (%S)" (plist-get srv :socket) preload)))
    preload))

(defun nmt-details-shown (buf id)
  "BUF's Details column of ID."
  (with-current-buffer buf
    (let ((e (cl-find-if (lambda (e) (equal id (cadr (car e)))) tabulated-list-entries)))
      (and e (substring-no-properties (aref (cadr e) 2))))))

(ert-deftest netmodel-list-preloads-what-its-windows-show ()
  (let* ((api (nmt-start-demo "artsy"))
         (names (mapcar #'nmt-artist (number-sequence 0 499)))
         (config (nmt-demo-config
                  api (lambda (c)
                        (puthash "maxInFlight" 4 c)
                        ;; pages without details: they come from the detail endpoint
                        (let ((item (gethash "item" (gethash "followedArtists" (gethash "lists" c)))))
                          (remhash "attributes" item)
                          (remhash "keep" item)))))
         (srv (progn (nmt-control api "POST" "follows" (list :artist (vconcat names)))
                     (nmt-start-server (nmt-tmpdir) "--backend" "rest" "--config" config)))
         (sent nil)
         (top-range nil))               ; the rows near the first window before the split
    (nmt-setup 'netmodel-socket (plist-get srv :socket) 'netmodel-spawn nil 'netmodel-quiet t
               'netmodel-list-preload-rows 10)
    (advice-add 'netmodel-request :before
                (lambda (method params &rest _)
                  (when (equal method "setInterfaceState")
                    (push (cons (plist-get params :state)
                                (mapcar (lambda (i) (plist-get i :id)) (plist-get params :items)))
                          sent)))
                '((name . nmt-interface)))
    (unwind-protect
        (let* ((buf (netmodel-list "followedArtists"))
               (status (lambda () (with-current-buffer buf (netmodel-list-status))))
               (w1 (selected-window)))
          (delete-other-windows)
          ;; every page, so that the buffer holds all 500 rows
          (nmt-wait 10 (lambda () (string-prefix-p "loaded" (funcall status))) "the first page")
          (while (string-match-p "(more: N)" (funcall status))
            (with-current-buffer buf (netmodel-list-next-page))
            (nmt-wait 10 (lambda () (string-prefix-p "loaded" (funcall status))) "a page"))
          (should (equal names (nmt-row-ids buf)))
          (nmt-preload-idle srv)
          ;; the window shows the top rows: only they and those near them are asked for
          (should (equal nil (cl-set-difference (nmt-detail-calls api)
                                                (mapcar #'nmt-artist
                                                        (number-sequence 0 (+ (window-body-height w1) 9)))
                                                :test #'equal)))
          (should (member (nmt-artist 0) (nmt-detail-calls api)))
          (setq top-range (mapcar #'nmt-artist (number-sequence 0 (+ (window-body-height w1) 9))))

          ;; two windows on the buffer: the top, and rows from 300
          (let ((w2 (split-window w1)))
            (nmt-show-row w1 0)
            (nmt-show-row w2 300)
            (setq sent nil)
            (nmt-redisplay)
            (nmt-wait 5 (lambda () (member (nmt-artist 300) (cdr (assoc "visible" sent))))
                      "the second window's rows")
            (nmt-preload-idle srv)
            (let* ((near (lambda (win) (let ((rows (nmt-window-rows win)))
                                         (number-sequence (max 0 (- (car rows) 10))
                                                          (min 499 (+ (car (last rows)) 10))))))
                   (visible (mapcar #'nmt-artist (append (nmt-window-rows w1) (nmt-window-rows w2))))
                   (in-range (mapcar #'nmt-artist (append (funcall near w1) (funcall near w2))))
                   (asked (nmt-detail-calls api)))
              (should (> (length (nmt-window-rows w2)) 5))
              (should (equal nil (cl-set-difference visible asked :test #'equal)))
              ;; only rows within the range, and the range is all asked for
              (should (equal nil (cl-set-difference asked (append top-range in-range) :test #'equal)))
              (should (equal nil (cl-set-difference in-range asked :test #'equal)))
              (should (= (length asked) (length (delete-dups (copy-sequence asked)))))
              ;; the details show in the rows of both windows
              (nmt-wait 5 (lambda () (string-prefix-p "Artist 305" (nmt-details-shown buf (nmt-artist 305))))
                        (lambda () (format "the details of row 305 (%S)"
                                           (nmt-details-shown buf (nmt-artist 305)))))
              (should (equal "Artist 002, 0 published artworks" (nmt-details-shown buf (nmt-artist 2))))
              (should (equal "" (nmt-details-shown buf (nmt-artist 200))))
              ;; the details drew the rows again: the windows still show their rows
              (should (equal 300 (car (nmt-window-rows w2)))))

            ;; a jump: slow details, rows 150... asked for, then 450... before they load
            (nmt-control api "POST" "faults" (list :method "GET" :path "^/api/v1/artist/" :delay_ms 300
                                                   :times :null)) ; for ever
            (let ((before (nmt-detail-calls api))
                  (cancelled (plist-get (nmt-preload-idle srv) :cancelled))
                  (left (mapcar #'nmt-artist (number-sequence 140 175))))
              (setq sent nil)
              (nmt-show-row w2 150)
              (nmt-redisplay)
              (nmt-wait 5 (lambda () (member (nmt-artist 150) (cdr (assoc "visible" sent))))
                        "the rows from 150")
              (setq sent nil)
              (nmt-show-row w2 450)
              (nmt-redisplay)
              (nmt-wait 5 (lambda () (assoc "none" sent)) "the rows from 150 withdrawn")
              (let ((withdrawn (cdr (assoc "none" sent))))
                (should (member (nmt-artist 150) withdrawn))
                (should-not (member (nmt-artist 455) withdrawn)))
              (let* ((preload (nmt-preload-idle srv))
                     (asked (cl-set-difference (nmt-detail-calls api) before :test #'equal))
                     (asked-left (cl-intersection asked left :test #'equal)))
                (should (> (plist-get preload :cancelled) cancelled))
                ;; at most those already on the wire (4 at once) went out
                (should (< (length asked-left) (length (cl-intersection (mapcar #'nmt-artist (number-sequence 140 175))
                                                                        left :test #'equal))))
                (should (cl-every (lambda (row) (member (nmt-artist row) asked)) (nmt-window-rows w2)))))

            ;; hidden, then shown again and killed: the server is told nothing is shown
            (nmt-control api "DELETE" "faults")
            (setq sent nil)
            (let ((shown (with-current-buffer buf
                           (let (ids) (maphash (lambda (id _) (push (cadr id) ids)) netmodel-list--interface)
                                ids))))
              (should shown)
              (with-temp-buffer
                (set-window-buffer w1 (current-buffer))
                (set-window-buffer w2 (current-buffer))
                (nmt-redisplay)
                (nmt-wait 5 (lambda () (assoc "none" sent)) "the hidden rows withdrawn")
                (should (equal (sort (copy-sequence shown) #'string<)
                               (sort (copy-sequence (cdr (assoc "none" sent))) #'string<)))
                (should (= 0 (hash-table-count (buffer-local-value 'netmodel-list--interface buf))))))
            (set-window-buffer w1 buf)
            (nmt-show-row w1 50)
            (setq sent nil)
            (nmt-redisplay)
            (nmt-wait 5 (lambda () (assoc "visible" sent)) "the rows shown again")
            (should (member (nmt-artist 55) (cdr (assoc "visible" sent))))
            (setq sent nil)
            (kill-buffer buf)
            (should (member (nmt-artist 55) (cdr (assoc "none" sent))))
            (should-not netmodel--subs)))
      (advice-remove 'netmodel-request 'nmt-interface))))

(provide 'netmodel-preload-test)
;;; netmodel-preload-test.el ends here
