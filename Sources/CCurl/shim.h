// libcurl for Swift: curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are
// variadic, which Swift refuses, so each use gets a typed inline wrapper here (as
// swift-corelibs-foundation does for its own curl use).
#ifndef NETMODEL_CCURL_SHIM_H
#define NETMODEL_CCURL_SHIM_H

#include <curl/curl.h>

typedef size_t (*nm_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*nm_curl_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*nm_curl_timer_callback)(CURLM *multi, long timeoutMs, void *context);

static inline CURLcode nm_easy_setopt_long(CURL *easy, CURLoption option, long value) {
  return curl_easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
  return curl_easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
  return curl_easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
  return curl_easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) {
  return curl_easy_setopt(easy, option, value);
}
static inline CURLcode nm_easy_setopt_data_callback(CURL *easy, CURLoption option, nm_curl_data_callback value) {
  return curl_easy_setopt(easy, option, value);
}

static inline CURLMcode nm_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
  return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode nm_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
  return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode nm_multi_setopt_socket_callback(CURLM *multi, nm_curl_socket_callback value) {
  return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, value);
}
static inline CURLMcode nm_multi_setopt_timer_callback(CURLM *multi, nm_curl_timer_callback value) {
  return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, value);
}

static inline long nm_easy_getinfo_long(CURL *easy, CURLINFO info) {
  long value = 0;
  curl_easy_getinfo(easy, info, &value);
  return value;
}
static inline void *nm_easy_getinfo_pointer(CURL *easy, CURLINFO info) {
  char *value = NULL;
  curl_easy_getinfo(easy, info, &value);
  return value;
}

// CURLMsg.data is a union: Swift cannot read its members directly.
static inline CURLcode nm_msg_result(const CURLMsg *message) { return message->data.result; }

static inline int nm_curl_socket_timeout(void) { return CURL_SOCKET_TIMEOUT; }

#endif
