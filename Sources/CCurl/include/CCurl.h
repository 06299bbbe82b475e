// libcurl for Swift, loaded at run time. The binary does not link libcurl: of the
// shared libraries a process maps at start, libcurl's dependencies (TLS, Kerberos,
// LDAP, SSH, …) are most of them, and only the REST backend needs any. So libcurl's
// header gives the types and constants at compile time, and `nm_curl_load` resolves
// the functions netmodel calls into `nm_curl` when the first HTTP client is made.
//
// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift
// refuses, so each use gets a typed inline wrapper here (as swift-corelibs-foundation
// does for its own curl use); the other functions get one each too, so that Swift
// never names a libcurl symbol the linker would look for.
#ifndef NETMODEL_CCURL_H
#define NETMODEL_CCURL_H

#include <stddef.h>
#include <curl/curl.h>

/// The libcurl functions netmodel calls; all null until `nm_curl_load` succeeds.
struct nm_curl_functions {
  CURLcode (*global_init)(long flags);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *easy);
  CURLcode (*easy_setopt)(CURL *easy, CURLoption option, ...);
  CURLcode (*easy_getinfo)(CURL *easy, CURLINFO info, ...);
  const char *(*easy_strerror)(CURLcode code);
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_cleanup)(CURLM *multi);
  CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
  CURLMcode (*multi_add_handle)(CURLM *multi, CURL *easy);
  CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *easy);
  CURLMcode (*multi_socket_action)(CURLM *multi, curl_socket_t socket, int mask, int *running);
  CURLMsg *(*multi_info_read)(CURLM *multi, int *remaining);
  const char *(*multi_strerror)(CURLMcode code);
  struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
  void (*slist_free_all)(struct curl_slist *list);
};

extern struct nm_curl_functions nm_curl;

/// Opens `library` (dlopen, RTLD_NOW | RTLD_LOCAL) and resolves every function of
/// `nm_curl`. 0 on success; otherwise -1 when the library cannot be opened, -2 when
/// it lacks a function, with dlerror's words or the function's name in `why`, and
/// `nm_curl` left all null. Not thread-safe: the caller calls it once (HTTPClient's
/// global, which Swift initialises once).
int nm_curl_load(const char *library, char *why, size_t whyCapacity);

typedef size_t (*nm_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*nm_curl_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*nm_curl_timer_callback)(CURLM *multi, long timeoutMs, void *context);

static inline CURLcode nm_global_init(long flags) { return nm_curl.global_init(flags); }
static inline CURL *nm_easy_init(void) { return nm_curl.easy_init(); }
static inline void nm_easy_cleanup(CURL *easy) { nm_curl.easy_cleanup(easy); }
static inline const char *nm_easy_strerror(CURLcode code) { return nm_curl.easy_strerror(code); }
static inline CURLM *nm_multi_init(void) { return nm_curl.multi_init(); }
static inline CURLMcode nm_multi_cleanup(CURLM *multi) { return nm_curl.multi_cleanup(multi); }
static inline CURLMcode nm_multi_add_handle(CURLM *multi, CURL *easy) { return nm_curl.multi_add_handle(multi, easy); }
static inline CURLMcode nm_multi_remove_handle(CURLM *multi, CURL *easy) {
  return nm_curl.multi_remove_handle(multi, easy);
}
static inline CURLMcode nm_multi_socket_action(CURLM *multi, curl_socket_t socket, int mask, int *running) {
  return nm_curl.multi_socket_action(multi, socket, mask, running);
}
static inline CURLMsg *nm_multi_info_read(CURLM *multi, int *remaining) {
  return nm_curl.multi_info_read(multi, remaining);
}
static inline const char *nm_multi_strerror(CURLMcode code) { return nm_curl.multi_strerror(code); }
static inline struct curl_slist *nm_slist_append(struct curl_slist *list, const char *string) {
  return nm_curl.slist_append(list, string);
}
static inline void nm_slist_free_all(struct curl_slist *list) { nm_curl.slist_free_all(list); }

static inline CURLcode nm_easy_setopt_long(CURL *easy, CURLoption option, long value) {
  return nm_curl.easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
  return nm_curl.easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
  return nm_curl.easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
  return nm_curl.easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) {
  return nm_curl.easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_data_callback(CURL *easy, CURLoption option, nm_curl_data_callback value) {
  return nm_curl.easy_setopt(easy, option, value);
}

static inline CURLMcode nm_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
  return nm_curl.multi_setopt(multi, option, value);
}
static inline CURLMcode nm_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
  return nm_curl.multi_setopt(multi, option, value);
}
static inline CURLMcode nm_multi_setopt_socket_callback(CURLM *multi, nm_curl_socket_callback value) {
  return nm_curl.multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, value);
}
static inline CURLMcode nm_multi_setopt_timer_callback(CURLM *multi, nm_curl_timer_callback value) {
  return nm_curl.multi_setopt(multi, CURLMOPT_TIMERFUNCTION, value);
}

static inline long nm_easy_getinfo_long(CURL *easy, CURLINFO info) {
  long value = 0;
  nm_curl.easy_getinfo(easy, info, &value);
  return value;
}
static inline void *nm_easy_getinfo_pointer(CURL *easy, CURLINFO info) {
  char *value = NULL;
  nm_curl.easy_getinfo(easy, info, &value);
  return value;
}

// CURLMsg.data is a union: Swift cannot read its members directly.
static inline CURLcode nm_msg_result(const CURLMsg *message) { return message->data.result; }

static inline int nm_curl_socket_timeout(void) { return CURL_SOCKET_TIMEOUT; }

#endif
