/*
 * httpserver — a small, fast HTTP/1.1 server on 127.0.0.1 for the HTTP
 * benchmarks (bench/http.sh): the REST backend that netmodel and the bare
 * libcurl loop (curlmulti.c) both talk to.
 *
 *   httpserver [--port N] [--port-file F] [--delay-us N]
 *
 *   --port N        port to listen on; 0 (the default) lets the kernel choose.
 *                   "listening on 127.0.0.1:PORT" is printed on stdout either way.
 *   --port-file F   also write the port to F (written to F.tmp, then renamed,
 *                   so a script polling F never reads half a number)
 *   --delay-us N    hold every response N µs before it may be sent (default 0):
 *                   a backend with latency, without threads (one timerfd)
 *
 * Every request gets 200 and a small JSON body:
 *   GET  ...?ids[]=a&ids[]=b          ["a","b"]   (also ids%5B%5D=; values are
 *                                     percent-decoded, '+' is a space)
 *   ANY  .../follow/artist/<id>       {"id":"<id>","following":true}
 *   GET  /_stats                      {"connections":N,"requests":N}
 *   anything else                     {"ok":true}
 * The counts are of accepted connections and of parsed requests, and they
 * include the /_stats request itself and its connection.  On SIGTERM/SIGINT
 * the same line goes to stderr and the server exits 0.
 *
 * Single-threaded: non-blocking sockets on epoll, level-triggered.  One read()
 * per readiness event; every complete request in the input is answered into
 * the connection's output buffer, and the buffer is written once per read, so
 * pipelined requests cost one write.  Parsing handles requests split anywhere
 * across reads and many requests in one read.  Bodies are read by
 * Content-Length (chunked bodies get 501 and the connection is closed).
 * Keep-alive is the HTTP/1.1 default; HTTP/1.0 needs "Connection: keep-alive".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum {
    READ_CHUNK = 64 * 1024,           /* bytes asked of one read() */
    OUT_HIGH_WATER = 4 * 1024 * 1024, /* stop reading while this much is unsent */
    MAX_HEADER = 64 * 1024,           /* request line + headers; more is a 431 */
    MAX_BODY = 16 * 1024 * 1024,      /* a larger Content-Length is a 413 */
    MAX_EVENTS = 64,
};

/* epoll's data.u64 for the fds that are not connections (connections use their fd) */
#define TOKEN_LISTEN (UINT64_C(1) << 40)
#define TOKEN_TIMER (TOKEN_LISTEN + 1)
#define TOKEN_SIGNAL (TOKEN_LISTEN + 2)

/* ---- buffers (live bytes are data[start, len)) ------------------------------ */

struct buf {
    char *data;
    size_t start, len, cap;
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        perror("httpserver: realloc");
        exit(2);
    }
    return p;
}

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->start > 0 && b->len + extra > b->cap) { /* compact first */
        memmove(b->data, b->data + b->start, b->len - b->start);
        b->len -= b->start;
        b->start = 0;
    }
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

static void buf_append(struct buf *b, const void *bytes, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

#define buf_append_lit(b, s) buf_append((b), (s), sizeof(s) - 1)

static void buf_append_u64(struct buf *b, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    buf_append(b, digits + sizeof digits - n, n);
}

static size_t buf_pending(const struct buf *b) { return b->len - b->start; }

/* ---- state ------------------------------------------------------------------ */

/*
 * One client connection.  Output is tracked in absolute byte counts so that
 * delayed responses can sit in `out` in order while only the released prefix
 * is written: bytes [written, released) may go out, [released, appended) wait
 * for their timer.  Without --delay-us, released == appended always.
 */
struct conn {
    int fd;
    uint32_t gen; /* tells a reused fd number from the conn a timer entry meant */
    struct buf in, out;
    size_t scanned;        /* bytes of the pending request already searched for CRLFCRLF */
    bool continue_sent;    /* "100 Continue" went out for the request at the head of `in` */
    bool closing;          /* read no more; close once everything is written */
    uint64_t appended, released, written;
    uint32_t delayed;      /* timer entries still pending for this conn */
    uint32_t registered;   /* current epoll interest */
};

/* A delayed release: conn `fd` (if still generation `gen`) may write up to `upto`. */
struct release {
    int fd;
    uint32_t gen;
    uint64_t upto, due_ns;
};

static int epoll_fd = -1, timer_fd = -1;
static struct conn **conn_by_fd;
static size_t conn_by_fd_len;
static uint32_t next_gen = 1;
static uint64_t delay_ns;
static uint64_t connections_accepted, requests_parsed;
static uint64_t now_ns; /* taken once per loop iteration; due times derive from it */
static struct buf scratch; /* one response body, built before its header */

/* The delayed releases in due order: the delay is the same for every response,
 * so arrival order is due order and a FIFO ring is enough (no heap). */
static struct release *ring;
static size_t ring_cap, ring_head, ring_len;

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "httpserver: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void print_stats(FILE *f)
{
    fprintf(f, "{\"connections\":%llu,\"requests\":%llu}\n",
            (unsigned long long)connections_accepted, (unsigned long long)requests_parsed);
    fflush(f);
}

/* ---- timers ------------------------------------------------------------------- */

static void arm_timer(uint64_t due_ns)
{
    struct itimerspec its = {
        .it_value = {.tv_sec = (time_t)(due_ns / 1000000000u),
                     .tv_nsec = (long)(due_ns % 1000000000u)},
    };
    if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        die("timerfd_settime");
}

/*
 * Marks everything appended to c->out so far as sendable after `delay`.  The
 * due time never precedes the last queued one, which keeps the ring in due
 * order; it also keeps a conn's responses in request order when an undelayed
 * "100 Continue" follows delayed responses on the same connection.
 */
static void release_after(struct conn *c, uint64_t delay)
{
    if (delay == 0 && c->delayed == 0) {
        c->released = c->appended;
        return;
    }
    uint64_t due = now_ns + delay;
    if (ring_len > 0) {
        uint64_t tail_due = ring[(ring_head + ring_len - 1) % ring_cap].due_ns;
        if (due < tail_due)
            due = tail_due;
    }
    if (ring_len == ring_cap) { /* grow, unwrapping the ring into the new array */
        size_t cap = ring_cap ? ring_cap * 2 : 1024;
        struct release *grown = xrealloc(NULL, cap * sizeof *grown);
        for (size_t i = 0; i < ring_len; i++)
            grown[i] = ring[(ring_head + i) % ring_cap];
        free(ring);
        ring = grown;
        ring_cap = cap;
        ring_head = 0;
    }
    ring[(ring_head + ring_len) % ring_cap] =
        (struct release){.fd = c->fd, .gen = c->gen, .upto = c->appended, .due_ns = due};
    if (ring_len++ == 0)
        arm_timer(due);
    c->delayed++;
}

/* ---- connections ---------------------------------------------------------------- */

static void map_fd(int fd, struct conn *c)
{
    if ((size_t)fd >= conn_by_fd_len) {
        size_t len = conn_by_fd_len ? conn_by_fd_len : 64;
        while (len <= (size_t)fd)
            len *= 2;
        conn_by_fd = xrealloc(conn_by_fd, len * sizeof *conn_by_fd);
        memset(conn_by_fd + conn_by_fd_len, 0, (len - conn_by_fd_len) * sizeof *conn_by_fd);
        conn_by_fd_len = len;
    }
    conn_by_fd[fd] = c;
}

static struct conn *conn_for_fd(int fd)
{
    return (size_t)fd < conn_by_fd_len ? conn_by_fd[fd] : NULL;
}

/*
 * Reading stops while a lot of output is unsent (a client that pipelines but
 * does not read costs bounded memory) and once the conn is closing.  Write
 * interest exists only while released bytes are unsent: level-triggered
 * EPOLLOUT would spin otherwise.
 */
static void update_interest(struct conn *c, bool first)
{
    uint32_t want = 0;
    if (!c->closing && c->appended - c->written < OUT_HIGH_WATER)
        want |= EPOLLIN;
    if (c->released > c->written)
        want |= EPOLLOUT;
    if (!first && want == c->registered)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = (uint64_t)c->fd};
    if (epoll_ctl(epoll_fd, first ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev) < 0)
        die("epoll_ctl");
    c->registered = want;
}

static void conn_close(struct conn *c)
{
    conn_by_fd[c->fd] = NULL;
    close(c->fd); /* also leaves the epoll set; its ring entries die by `gen` */
    free(c->in.data);
    free(c->out.data);
    free(c);
}

/* Writes what is released.  Returns false when the peer is gone. */
static bool flush_output(struct conn *c)
{
    struct buf *out = &c->out;
    while (c->released > c->written) {
        size_t n_ready = (size_t)(c->released - c->written);
        ssize_t n = send(c->fd, out->data + out->start, n_ready, MSG_NOSIGNAL);
        if (n > 0) {
            out->start += (size_t)n;
            c->written += (uint64_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            return false; /* EPIPE, ECONNRESET, ... */
        }
    }
    if (!buf_pending(out))
        out->start = out->len = 0;
    return true;
}

/* After I/O on c: close it when it is done, else refresh its epoll interest. */
static void settle(struct conn *c, bool ok)
{
    if (!ok || (c->closing && c->delayed == 0 && c->written == c->appended))
        conn_close(c);
    else
        update_interest(c, false);
}

/* ---- URL pieces -------------------------------------------------------------------- */

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes [p, end) into dst (which holds end - p bytes); returns the length.
 * A '%' not followed by two hex digits stays as it is. */
static size_t percent_decode(const char *p, const char *end, char *dst, bool plus_is_space)
{
    size_t n = 0;
    while (p < end) {
        int hi, lo;
        if (*p == '%' && end - p >= 3 && (hi = hex_value(p[1])) >= 0 && (lo = hex_value(p[2])) >= 0) {
            dst[n++] = (char)(hi * 16 + lo);
            p += 3;
        } else {
            dst[n++] = (plus_is_space && *p == '+') ? ' ' : *p;
            p++;
        }
    }
    return n;
}

/* Appends [p, p + n) as the inside of a JSON string.  Other bytes pass through
 * unchanged: a valid UTF-8 id stays valid, and this is a benchmark, not a validator. */
static void append_json_chars(struct buf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            buf_append(b, esc, 2);
        } else if (ch < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
            buf_append(b, esc, 6);
        } else {
            buf_append(b, &p[i], 1);
        }
    }
}

/* Appends a percent-decoded URL piece as a JSON string. */
static void append_json_decoded(struct buf *b, const char *p, const char *end, bool plus_is_space)
{
    char small[256];
    char *dst = (size_t)(end - p) <= sizeof small ? small : xrealloc(NULL, (size_t)(end - p));
    size_t n = percent_decode(p, end, dst, plus_is_space);
    buf_append_lit(b, "\"");
    append_json_chars(b, dst, n);
    buf_append_lit(b, "\"");
    if (dst != small)
        free(dst);
}

/* Is [p, end), percent-decoded, exactly "ids[]"?  Accepts ids[] and ids%5B%5D. */
static bool is_ids_key(const char *p, const char *end)
{
    char key[16];
    if (end - p > (ptrdiff_t)sizeof key)
        return false;
    size_t n = percent_decode(p, end, key, true);
    return n == 5 && memcmp(key, "ids[]", 5) == 0;
}

/* Builds ["a","b",...] from every ids[]= in the query; false when there is none. */
static bool build_ids_array(struct buf *b, const char *query, const char *end)
{
    bool any = false;
    const char *p = query;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pair_end = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pair_end - p));
        if (eq && is_ids_key(p, eq)) {
            buf_append(b, any ? "," : "[", 1);
            append_json_decoded(b, eq + 1, pair_end, true);
            any = true;
        }
        p = pair_end + 1;
    }
    if (any)
        buf_append_lit(b, "]");
    return any;
}

/* ---- requests ------------------------------------------------------------------------ */

struct request {
    const char *method, *target;
    size_t method_len, target_len;
    size_t header_len; /* request line + headers + the blank line */
    uint64_t body_len;
    bool keep_alive, http10, expect_continue, chunked;
};

enum parse_result { PARSE_INCOMPLETE, PARSE_OK, PARSE_BAD, PARSE_HEADER_TOO_LARGE, PARSE_BODY_TOO_LARGE };

static bool token_eq(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && strncasecmp(p, lit, n) == 0;
}

static const char *trim_left(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

static const char *trim_right(const char *p, const char *end)
{
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return end;
}

/* Connection: is a comma-separated token list ("keep-alive, Upgrade"). */
static void scan_connection_tokens(const char *p, const char *end, bool *close, bool *keep)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *tok_end = comma ? comma : end;
        const char *a = trim_left(p, tok_end), *z = trim_right(a, tok_end);
        if (token_eq(a, (size_t)(z - a), "close"))
            *close = true;
        else if (token_eq(a, (size_t)(z - a), "keep-alive"))
            *keep = true;
        p = tok_end + 1;
    }
}

/*
 * Parses the request at the head of c->in: request line and headers up to the
 * blank line.  The body need not be there yet (the caller checks).  c->scanned
 * remembers how far the search for the blank line got, so a header block
 * trickling in byte by byte is not searched again from the start each time.
 */
static enum parse_result parse_head(struct conn *c, struct request *r)
{
    const char *base = c->in.data + c->in.start;
    size_t avail = buf_pending(&c->in);
    size_t from = c->scanned > 3 ? c->scanned - 3 : 0;
    const char *blank = avail > from ? memmem(base + from, avail - from, "\r\n\r\n", 4) : NULL;
    if (!blank) {
        c->scanned = avail;
        return avail > MAX_HEADER ? PARSE_HEADER_TOO_LARGE : PARSE_INCOMPLETE;
    }
    const char *end = blank + 2; /* just past the last header line's CRLF */
    *r = (struct request){.header_len = (size_t)(blank + 4 - base)};
    if (r->header_len > MAX_HEADER)
        return PARSE_HEADER_TOO_LARGE;

    /* request line: METHOD SP target SP HTTP/1.x CRLF */
    const char *eol = memmem(base, (size_t)(end - base), "\r\n", 2);
    const char *sp1 = memchr(base, ' ', (size_t)(eol - base));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp2 || sp1 == base || sp2 == sp1 + 1 || eol - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
        (sp2[8] != '0' && sp2[8] != '1'))
        return PARSE_BAD;
    r->method = base;
    r->method_len = (size_t)(sp1 - base);
    r->target = sp1 + 1;
    r->target_len = (size_t)(sp2 - sp1 - 1);
    r->http10 = sp2[8] == '0';

    bool has_length = false, conn_close_tok = false, conn_keep_tok = false;
    for (const char *line = eol + 2; line < end;) {
        const char *line_end = memmem(line, (size_t)(end - line), "\r\n", 2);
        const char *colon = memchr(line, ':', (size_t)(line_end - line));
        if (!colon || colon == line || *line == ' ' || *line == '\t')
            return PARSE_BAD; /* no name, or obsolete line folding */
        size_t name_len = (size_t)(colon - line);
        const char *v = trim_left(colon + 1, line_end), *v_end = trim_right(v, line_end);
        if (token_eq(line, name_len, "content-length")) {
            uint64_t n = 0;
            if (v == v_end)
                return PARSE_BAD;
            for (const char *d = v; d < v_end; d++) {
                if (*d < '0' || *d > '9')
                    return PARSE_BAD;
                if (n > MAX_BODY) /* stop before the digits overflow */
                    return PARSE_BODY_TOO_LARGE;
                n = n * 10 + (uint64_t)(*d - '0');
            }
            if (has_length && n != r->body_len)
                return PARSE_BAD; /* two different lengths: request smuggling bait */
            has_length = true;
            r->body_len = n;
        } else if (token_eq(line, name_len, "transfer-encoding")) {
            r->chunked = true;
        } else if (token_eq(line, name_len, "connection")) {
            scan_connection_tokens(v, v_end, &conn_close_tok, &conn_keep_tok);
        } else if (token_eq(line, name_len, "expect")) {
            r->expect_continue = token_eq(v, (size_t)(v_end - v), "100-continue");
        }
        line = line_end + 2;
    }
    if (r->body_len > MAX_BODY)
        return PARSE_BODY_TOO_LARGE;
    r->keep_alive = r->http10 ? conn_keep_tok : !conn_close_tok;
    return PARSE_OK;
}

/* Builds the response body for r into `scratch`. */
static void build_body(const struct request *r)
{
    const char *path = r->target, *target_end = r->target + r->target_len;
    const char *query = memchr(path, '?', r->target_len);
    const char *path_end = query ? query : target_end;
    const char *fragment = query ? memchr(query, '#', (size_t)(target_end - query)) : NULL;
    const char *query_end = fragment ? fragment : target_end;
    bool get = token_eq(r->method, r->method_len, "GET");
    scratch.start = scratch.len = 0;

    if (get && path_end - path == 7 && memcmp(path, "/_stats", 7) == 0) {
        buf_append_lit(&scratch, "{\"connections\":");
        buf_append_u64(&scratch, connections_accepted);
        buf_append_lit(&scratch, ",\"requests\":");
        buf_append_u64(&scratch, requests_parsed);
        buf_append_lit(&scratch, "}");
        return;
    }
    if (get && query && build_ids_array(&scratch, query + 1, query_end))
        return;

    /* .../follow/artist/<id>: the id is the last segment, and it is not empty */
    static const char suffix[] = "/follow/artist";
    const char *slash = memrchr(path, '/', (size_t)(path_end - path));
    size_t suffix_len = sizeof suffix - 1;
    if (slash && slash + 1 < path_end && (size_t)(slash - path) >= suffix_len &&
        memcmp(slash - suffix_len, suffix, suffix_len) == 0) {
        buf_append_lit(&scratch, "{\"id\":");
        append_json_decoded(&scratch, slash + 1, path_end, false);
        buf_append_lit(&scratch, ",\"following\":true}");
        return;
    }
    buf_append_lit(&scratch, "{\"ok\":true}");
}

static void respond(struct conn *c, const struct request *r)
{
    build_body(r);
    struct buf *out = &c->out;
    size_t before = out->len;
    buf_append_lit(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ");
    buf_append_u64(out, scratch.len);
    if (!r->keep_alive)
        buf_append_lit(out, "\r\nConnection: close");
    else if (r->http10)
        buf_append_lit(out, "\r\nConnection: keep-alive");
    buf_append_lit(out, "\r\n\r\n");
    if (!token_eq(r->method, r->method_len, "HEAD")) /* HEAD: the length, no body */
        buf_append(out, scratch.data, scratch.len);
    c->appended += out->len - before;
    release_after(c, delay_ns);
}

/* An error status ends the connection: after a malformed request we cannot
 * know where the next one would start. */
static void respond_error(struct conn *c, const char *status_line)
{
    size_t before = c->out.len;
    buf_append(&c->out, status_line, strlen(status_line));
    buf_append_lit(&c->out, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    c->appended += c->out.len - before;
    release_after(c, delay_ns);
    c->closing = true;
}

/* Answers every complete request in c->in and consumes it. */
static void process_input(struct conn *c)
{
    struct buf *in = &c->in;
    while (!c->closing) {
        /* RFC 9112 2.2: empty lines before a request line are to be ignored */
        while (buf_pending(in) >= 2 && in->data[in->start] == '\r' && in->data[in->start + 1] == '\n') {
            in->start += 2;
            c->scanned = 0;
        }
        struct request r;
        switch (parse_head(c, &r)) {
        case PARSE_INCOMPLETE:
            return;
        case PARSE_BAD:
            respond_error(c, "HTTP/1.1 400 Bad Request");
            return;
        case PARSE_HEADER_TOO_LARGE:
            respond_error(c, "HTTP/1.1 431 Request Header Fields Too Large");
            return;
        case PARSE_BODY_TOO_LARGE:
            respond_error(c, "HTTP/1.1 413 Content Too Large");
            return;
        case PARSE_OK:
            break;
        }
        if (r.chunked) {
            respond_error(c, "HTTP/1.1 501 Not Implemented");
            return;
        }
        if (buf_pending(in) < r.header_len + r.body_len) {
            /* A client that sent "Expect: 100-continue" waits for this before
             * the body (libcurl does for large POSTs, for up to a second). */
            if (r.expect_continue && !c->continue_sent) {
                size_t before = c->out.len;
                buf_append_lit(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
                c->appended += c->out.len - before;
                release_after(c, 0);
                c->continue_sent = true;
            }
            return;
        }
        requests_parsed++;
        respond(c, &r);
        in->start += r.header_len + (size_t)r.body_len;
        c->scanned = 0;
        c->continue_sent = false;
        if (!r.keep_alive)
            c->closing = true;
    }
}

/* One read, answer all it completed, flush once. */
static void on_conn_event(struct conn *c, uint32_t events)
{
    /* On TCP, HUP or ERR means nothing more can be written (a reset, say).
     * They are reported whatever the interest, so waiting would spin. */
    bool ok = !(events & (EPOLLHUP | EPOLLERR));
    if (ok && (events & EPOLLIN) && !c->closing) {
        buf_reserve(&c->in, READ_CHUNK);
        ssize_t n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        if (n > 0) {
            c->in.len += (size_t)n;
            process_input(c);
        } else if (n == 0) {
            c->closing = true; /* the peer sends no more; answer what it sent */
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            ok = false;
        }
        if (c->closing) { /* whatever else it sent will not be answered */
            c->in.start = c->in.len = 0;
        }
    }
    if (ok)
        ok = flush_output(c);
    settle(c, ok);
}

static void on_timer(void)
{
    uint64_t expirations;
    if (read(timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        die("read timerfd");
    while (ring_len > 0) {
        struct release *rel = &ring[ring_head];
        if (rel->due_ns > now_ns) {
            arm_timer(rel->due_ns);
            break;
        }
        struct release due = *rel;
        ring_head = (ring_head + 1) % ring_cap;
        ring_len--;
        struct conn *c = conn_for_fd(due.fd);
        if (!c || c->gen != due.gen)
            continue; /* the conn went away; its fd may belong to a newer one */
        c->delayed--;
        if (due.upto > c->released)
            c->released = due.upto;
        settle(c, flush_output(c));
    }
}

static void accept_all(int listen_fd)
{
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                perror("httpserver: accept4");
            return;
        }
        /* Responses go out in one write, but a delayed response released
         * behind a partial write would wait ~40 ms for an ACK without this. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        if (!c)
            die("calloc");
        c->fd = fd;
        c->gen = next_gen++;
        map_fd(fd, c);
        update_interest(c, true);
        connections_accepted++;
    }
}

/* ---- main -------------------------------------------------------------------------- */

static int listen_tcp(long port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* rebind over TIME_WAIT */
    struct sockaddr_in addr = {
        .sin_family = AF_INET,
        .sin_port = htons((uint16_t)port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, SOMAXCONN) < 0)
        die("bind/listen on 127.0.0.1");
    return fd;
}

static void write_port_file(const char *path, unsigned port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        die("writing the port file");
}

static void add_to_epoll(int fd, uint64_t token)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = token};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        die("epoll_ctl");
}

static long parse_number(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0) {
        fprintf(stderr, "httpserver: bad %s: %s\n", what, s);
        exit(2);
    }
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: httpserver [--port N] [--port-file F] [--delay-us N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long port = 0;
    const char *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
            port = parse_number(argv[++i], "--port");
        else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc)
            port_file = argv[++i];
        else if (strcmp(argv[i], "--delay-us") == 0 && i + 1 < argc)
            delay_ns = (uint64_t)parse_number(argv[++i], "--delay-us") * 1000u;
        else
            usage();
    }
    if (port > 65535)
        usage();

    /* Signals arrive as a readable fd, so the loop never races a flag check
     * against epoll_wait. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN); /* a vanished peer is an EPIPE, not a death */
    int signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (signal_fd < 0 || epoll_fd < 0 || timer_fd < 0)
        die("signalfd/epoll_create1/timerfd_create");

    int listen_fd = listen_tcp(port);
    struct sockaddr_in bound;
    socklen_t bound_len = sizeof bound;
    if (getsockname(listen_fd, (struct sockaddr *)&bound, &bound_len) < 0)
        die("getsockname");
    unsigned actual_port = ntohs(bound.sin_port);
    add_to_epoll(listen_fd, TOKEN_LISTEN);
    add_to_epoll(timer_fd, TOKEN_TIMER);
    add_to_epoll(signal_fd, TOKEN_SIGNAL);
    if (port_file)
        write_port_file(port_file, actual_port);
    printf("listening on 127.0.0.1:%u\n", actual_port);
    fflush(stdout);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(epoll_fd, events, MAX_EVENTS, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        now_ns = delay_ns ? monotonic_ns() : 0; /* only delays need the clock */
        for (int i = 0; i < n; i++) {
            uint64_t token = events[i].data.u64;
            if (token == TOKEN_LISTEN) {
                accept_all(listen_fd);
            } else if (token == TOKEN_TIMER) {
                on_timer();
            } else if (token == TOKEN_SIGNAL) {
                print_stats(stderr);
                return 0;
            } else {
                /* NULL when an earlier event in this batch closed it */
                struct conn *c = conn_for_fd((int)token);
                if (c)
                    on_conn_event(c, events[i].events);
            }
        }
    }
}
