;;; netmodel-conformance-test.el --- The shared conformance vectors  -*- lexical-binding: t; -*-

;;; Commentary:

;; clients/conformance/vectors.json, fed to the client's own logic; the Python,
;; Node and Neovim suites run the same file.

;;; Code:

(require 'netmodel-test-helpers)

(defun nmt-json-file (file &rest args)
  "FILE (relative to the repository) read with `json-parse-buffer' ARGS."
  (with-temp-buffer
    (insert-file-contents (expand-file-name file (expand-file-name "../.." nmt-root)))
    (apply #'json-parse-buffer args)))

;; As jsonrpc.el reads the server's messages: plists, null nil, false :json-false.
(defvar nmt-vectors (nmt-json-file "clients/conformance/vectors.json"
                                   :object-type 'plist :null-object nil :false-object :json-false))

(defun nmt-canon (v)
  "V (plists, hash tables, vectors) as sorted alists, to compare JSON values."
  (cond ((hash-table-p v)
         (let (out) (maphash (lambda (k x) (push (cons (format "%s" k) (nmt-canon x)) out)) v)
              (sort out (lambda (a b) (string< (car a) (car b))))))
        ((and (consp v) (keywordp (car v)))
         (sort (cl-loop for (k x) on v by #'cddr collect (cons (substring (symbol-name k) 1) (nmt-canon x)))
               (lambda (a b) (string< (car a) (car b)))))
        ((vectorp v) (mapcar #'nmt-canon v))
        (t v)))

(defun nmt-sent (method params)
  "The JSON text of request METHOD with PARAMS as this client writes it."
  (decode-coding-string
   (jsonrpc--json-encode (list :jsonrpc "2.0" :id 1 :method method
                               :params (or (netmodel--wire params) (make-hash-table))))
   'utf-8))

(ert-deftest netmodel-vectors-deliver ()
  (let ((states (plist-get nmt-vectors :states)))
    (seq-doseq (v (plist-get nmt-vectors :deliver))
      (let* ((held (make-hash-table :test #'equal)) seen
             (name-of (lambda (state)
                        (cl-loop for (k s) on states by #'cddr
                                 when (eq s state) return (substring (symbol-name k) 1))))
             (deliver (lambda (name)
                        ;; what a subscribe answer and a notification do with each state
                        (let ((state (plist-get states (intern (concat ":" name)))))
                          (when (netmodel--newer held (netmodel--key state) state)
                            (push (funcall name-of state) seen)))))
             (answered-by (lambda (instance)
                            ;; no name: an era of its own, like a new connection's
                            (setq netmodel--instance (or instance (make-symbol "anonymous"))))))
        (funcall answered-by (plist-get v :instance))
        (seq-doseq (n (plist-get v :snapshot)) (funcall deliver n))
        (seq-doseq (step (plist-get v :steps))
          (if (plist-get step :notify)
              (funcall deliver (plist-get step :notify))
            (let ((r (plist-get step :reconnect)))
              (funcall answered-by (plist-get r :instance))
              (seq-doseq (n (plist-get r :snapshot)) (funcall deliver n)))))
        (should (equal (list (plist-get v :name) (append (plist-get v :expect) nil))
                       (list (plist-get v :name) (reverse seen))))))
    (setq netmodel--instance nil)))

(ert-deftest netmodel-vectors-topics ()
  (seq-doseq (v (plist-get nmt-vectors :topics))
    (if (plist-get v :error)
        (should-error (netmodel-topic (plist-get v :spec)))
      (let* ((line (nmt-sent "subscribe" (list :topics (vector (netmodel-topic (plist-get v :spec))))))
             (sent (aref (plist-get (plist-get (json-parse-string line :object-type 'plist) :params) :topics) 0)))
        (should (equal (list (plist-get v :spec) (nmt-canon (plist-get v :topic)))
                       (list (plist-get v :spec) (nmt-canon sent))))
        (should-not (string-match-p "\\[\\]" line))
        (should-not (string-match-p "null" line))))))

(ert-deftest netmodel-vectors-encode ()
  (seq-doseq (v (plist-get nmt-vectors :encode))
    (let ((line (nmt-sent (plist-get v :method) (plist-get v :params))))
      (seq-doseq (text (plist-get v :contains))
        (should (equal (list (plist-get v :name) t) (list (plist-get v :name) (and (string-search text line) t)))))
      (seq-doseq (text (plist-get v :absent))
        (should-not (string-search text line))))))

(ert-deftest netmodel-vectors-errors ()
  ;; the server's error object reaches the callback as the client's reader reads it
  (seq-doseq (v (plist-get nmt-vectors :errors))
    (let* ((got nil)
           (err (with-temp-buffer
                  (insert (json-serialize (plist-get v :error) :null-object nil :false-object :json-false))
                  (netmodel--parse (point-min) (point-max)))))
      (puthash 7 (netmodel--make-req :id 7 :callback (lambda (e _r) (setq got e))) netmodel--callbacks)
      (netmodel--answer 7 err nil)
      (should (equal (plist-get v :code) (plist-get got :code)))
      (when (plist-get v :state_version)
        (should (equal (plist-get v :state_version)
                       (plist-get (plist-get (plist-get got :data) :state) :version)))))))

(ert-deftest netmodel-vectors-client-codes ()
  (cl-loop for (name code) on (plist-get nmt-vectors :client_codes) by #'cddr
           do (should (equal (list name code)
                             (list name (symbol-value
                                         (intern (concat "netmodel-" (replace-regexp-in-string
                                                                      "_" "-" (downcase (substring (symbol-name name) 1)))))))))))

(ert-deftest netmodel-vectors-needs-credentials ()
  (seq-doseq (v (plist-get nmt-vectors :needs_credentials))
    (should (equal (netmodel--true-p (plist-get v :expect))
                   (and (netmodel-needs-credentials-p (plist-get v :state)) t)))))

(ert-deftest netmodel-vectors-list-keys ()
  ;; hash tables keep null members (nil), as a caller's params may hold them
  (let ((vectors (gethash "list_keys" (nmt-json-file "clients/conformance/vectors.json"
                                                     :object-type 'hash-table :null-object nil
                                                     :false-object :json-false))))
    (seq-doseq (v vectors)
      (should (equal (list (gethash "name" v) (gethash "key" v))
                     (list (gethash "name" v) (netmodel-params-key (gethash "params" v)))))
      ;; the list the server names (its `params' text read back) is the caller's list
      (should (equal (netmodel--key (list :list "search" :params (json-parse-string (gethash "key" v) :object-type 'plist)))
                     (netmodel--key (list :list "search" :params (gethash "params" v))))))))

(ert-deftest netmodel-vectors-default-socket ()
  (let ((saved (getenv "XDG_RUNTIME_DIR")))
    (unwind-protect
        (seq-doseq (v (plist-get nmt-vectors :default_socket))
          (setenv "XDG_RUNTIME_DIR" (plist-get (plist-get v :env) :XDG_RUNTIME_DIR))
          (should (equal (string-replace "{uid}" (number-to-string (user-uid)) (plist-get v :path))
                         (netmodel-default-socket))))
      (setenv "XDG_RUNTIME_DIR" saved))))

;; The generated table (netmodel-protocol.el, from schema/openrpc.json by
;; scripts/gen-protocol) is what the client's names are.
(defvar nmt-schema (nmt-json-file "schema/openrpc.json" :object-type 'hash-table))

(defun nmt-kebab (name)
  "ParseError -> parse-error."
  (let ((case-fold-search nil))
    (downcase (replace-regexp-in-string "\\([a-z0-9]\\)\\([A-Z]\\)" "\\1-\\2" name))))

(ert-deftest netmodel-error-codes-are-the-table ()
  (let* ((ext (gethash "x-netmodel-protocol" nmt-schema))
         (renamed (gethash "renamed" (gethash "errorNames" ext)))
         (n 0))
    (maphash (lambda (name e)
               (cl-incf n)
               (should (equal (list name (gethash "code" e))
                              (list name (alist-get (intern (nmt-kebab (gethash name renamed name)))
                                                    netmodel-protocol-errors)))))
             (gethash "errors" (gethash "components" nmt-schema)))
    (should (= n (length netmodel-protocol-errors)))
    (maphash (lambda (name code)
               (should (equal (list name code)
                              (list name (symbol-value (intern (concat "netmodel-" (nmt-kebab name))))))))
             (gethash "codes" (gethash "clientErrors" ext)))))

(ert-deftest netmodel-topic-shorthands-are-the-table ()
  (let ((forms (gethash "forms" (gethash "topicShorthands" (gethash "x-netmodel-protocol" nmt-schema)))))
    (seq-doseq (f forms)
      (should (equal (nmt-canon (gethash "topic" f)) (nmt-canon (netmodel-topic (gethash "shorthand" f))))))
    (let ((msg (cadr (should-error (netmodel-topic "nope")))))
      (should (string-search (concat (mapconcat (lambda (f) (gethash "shorthand" f)) (seq-take forms (1- (length forms))) ", ")
                                     " or " (gethash "shorthand" (aref forms (1- (length forms)))))
                             msg)))))

(provide 'netmodel-conformance-test)
;;; netmodel-conformance-test.el ends here
