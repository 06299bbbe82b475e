#include "CCurl.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct nm_curl_functions nm_curl;

#define NM_CURL_SYMBOL(member) {"curl_" #member, offsetof(struct nm_curl_functions, member)}

static const struct {
  const char *name;
  size_t offset;
} symbols[] = {
    NM_CURL_SYMBOL(global_init),      NM_CURL_SYMBOL(easy_init),
    NM_CURL_SYMBOL(easy_cleanup),     NM_CURL_SYMBOL(easy_setopt),
    NM_CURL_SYMBOL(easy_getinfo),     NM_CURL_SYMBOL(easy_strerror),
    NM_CURL_SYMBOL(multi_init),       NM_CURL_SYMBOL(multi_cleanup),
    NM_CURL_SYMBOL(multi_setopt),     NM_CURL_SYMBOL(multi_add_handle),
    NM_CURL_SYMBOL(multi_remove_handle), NM_CURL_SYMBOL(multi_socket_action),
    NM_CURL_SYMBOL(multi_info_read),  NM_CURL_SYMBOL(multi_strerror),
    NM_CURL_SYMBOL(slist_append),     NM_CURL_SYMBOL(slist_free_all),
};

_Static_assert(sizeof symbols / sizeof symbols[0] == sizeof(struct nm_curl_functions) / sizeof(void (*)(void)),
               "every member of nm_curl_functions has its name here");

int nm_curl_load(const char *library, char *why, size_t whyCapacity) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *error = dlerror();
    snprintf(why, whyCapacity, "%s", error != NULL ? error : "dlopen failed");
    return -1;
  }
  struct nm_curl_functions loaded;
  for (size_t index = 0; index < sizeof symbols / sizeof symbols[0]; index++) {
    void *function = dlsym(handle, symbols[index].name);
    if (function == NULL) {
      snprintf(why, whyCapacity, "%s", symbols[index].name);
      dlclose(handle);
      return -2;
    }
    // POSIX has a dlsym result convert to a function pointer; memcpy says so in C.
    memcpy((char *)&loaded + symbols[index].offset, &function, sizeof function);
  }
  // Open for the process's life: its functions are called until exit.
  nm_curl = loaded;
  return 0;
}
