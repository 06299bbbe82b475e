/*
 * jsonscan.h — the minimal JSON scan shared by nullserver.c and loadgen.c.
 *
 * Neither program parses JSON: they only need to know where the top-level
 * members of a message are, so they can copy the raw bytes of "id" and see
 * whether "error" / "method" are present.  A plain search for `"id":` is not
 * enough, because requests such as `follow` carry `{"kind":..,"id":..}` in
 * their params, and `"id" : 1` (spaces) is legal.  So we walk the top-level
 * object member by member and skip each value by counting brackets outside
 * strings.  Nothing is decoded, validated or allocated; the cost is one linear
 * pass over the bytes, about what a strstr would cost.
 *
 * Needs _GNU_SOURCE (for memmem) defined before the first #include.
 * Malformed input makes the functions return NULL; they never read past `end`.
 */
#ifndef NETMODEL_BENCH_JSONSCAN_H
#define NETMODEL_BENCH_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

static inline bool js_is_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static inline const char *js_skip_ws(const char *p, const char *end)
{
    while (p < end && js_is_ws(*p))
        p++;
    return p;
}

/* p points at the opening quote; returns the byte after the closing quote. */
static inline const char *js_skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++; /* the escaped byte cannot close the string */
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* Skips one value of any type; returns the byte after it. */
static inline const char *js_skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return js_skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            char ch = *p;
            if (ch == '"') {
                p = js_skip_string(p, end);
                if (!p)
                    return NULL;
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if ((ch == '}' || ch == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return NULL;
    }
    /* number, true, false, null: runs until a delimiter */
    const char *start = p;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && !js_is_ws(*p))
        p++;
    return p > start ? p : NULL;
}

/* What the benchmark programs want to know about one message. */
struct js_message {
    const char *id;    /* raw bytes of the "id" value, NULL when absent */
    size_t id_len;
    bool has_error;    /* a response carrying "error" */
    bool has_method;   /* a request or notification (from the peer) */
};

static inline bool js_key_is(const char *key, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(key, want, len) == 0;
}

/*
 * p points at '{'.  Fills *msg from the object's top-level members and returns
 * the byte after the closing '}', or NULL when the object is malformed or cut.
 */
static inline const char *js_scan_object(const char *p, const char *end,
                                         struct js_message *msg)
{
    memset(msg, 0, sizeof *msg);
    p = js_skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    while (p < end) {
        if (*p != '"')
            return NULL;
        const char *key = p + 1;
        const char *after_key = js_skip_string(p, end);
        if (!after_key)
            return NULL;
        size_t key_len = (size_t)(after_key - 1 - key);
        p = js_skip_ws(after_key, end);
        if (p >= end || *p != ':')
            return NULL;
        const char *value = js_skip_ws(p + 1, end);
        const char *value_end = js_skip_value(value, end);
        if (!value_end)
            return NULL;
        if (js_key_is(key, key_len, "id")) {
            msg->id = value;
            msg->id_len = (size_t)(value_end - value);
        } else if (js_key_is(key, key_len, "error")) {
            msg->has_error = true;
        } else if (js_key_is(key, key_len, "method")) {
            msg->has_method = true;
        }
        p = js_skip_ws(value_end, end);
        if (p < end && *p == '}')
            return p + 1;
        if (p >= end || *p != ',')
            return NULL;
        p = js_skip_ws(p + 1, end);
    }
    return NULL;
}

/*
 * Finds the end of an LSP header block ("...\r\n\r\n") in [p, end) and reads its
 * Content-Length (case-insensitive; other headers are ignored, as the protocol
 * says).  Returns the first body byte, or NULL when the block is incomplete.
 * *body_len is set to -1 when the block is complete but has no usable length.
 */
static inline const char *js_lsp_header(const char *p, const char *end,
                                        long long *body_len)
{
    const char *blank = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
    if (!blank)
        return NULL;
    static const char name[] = "content-length:";
    const size_t name_len = sizeof name - 1;
    *body_len = -1;
    for (const char *line = p; line < blank;) {
        const char *eol = memmem(line, (size_t)(blank + 2 - line), "\r\n", 2);
        if ((size_t)(eol - line) > name_len && strncasecmp(line, name, name_len) == 0) {
            long long n = 0;
            const char *d = line + name_len;
            while (d < eol && (*d == ' ' || *d == '\t'))
                d++;
            if (d == eol)
                break;
            for (; d < eol && *d >= '0' && *d <= '9' && n < (1LL << 40); d++)
                n = n * 10 + (*d - '0');
            if (d == eol || *d == ' ' || *d == '\t')
                *body_len = n;
        }
        line = eol + 2;
    }
    return blank + 4;
}

#endif
