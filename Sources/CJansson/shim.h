#ifndef NETMODEL_CJANSSON_SHIM_H
#define NETMODEL_CJANSSON_SHIM_H
#include <jansson.h>

// jansson's type tests are macros, which Swift cannot import.
static inline int nm_json_typeof(const json_t *j) { return j ? (int)json_typeof(j) : -1; }
#endif
