/*
 * nullserver — the "floor" JSON-RPC server for the netmodel benchmarks.
 *
 * It speaks the transport of the README ("Talking to it": framing) and nothing
 * else: every request is answered {"jsonrpc":"2.0","id":<id>,"result":null}
 * in the framing the peer used, whatever its method.  It does no JSON work
 * beyond locating the top-level "id" (see jsonscan.h), so its figures are what
 * the kernel, the pipes/sockets and the load generator cost on this machine;
 * netmodel's figures are judged as a ratio to them.
 *
 *   nullserver                    serve stdin/stdout, exit 0 at EOF on stdin
 *   nullserver --socket PATH      serve many connections on a Unix socket
 *                                 (also --socket=PATH); exit on SIGTERM/SIGINT
 *
 * The I/O discipline is the one the platform notes recommend for netmodel:
 * non-blocking fds driven by epoll, every request that one read() brought in
 * is answered into the connection's output buffer, and the buffer is flushed
 * once per read.  Stdin must be a pipe, socket or tty (epoll refuses files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "jsonscan.h"

enum {
    READ_CHUNK = 256 * 1024,        /* bytes asked of one read() */
    OUT_HIGH_WATER = 4 * 1024 * 1024, /* stop reading while this much is unsent */
    MAX_MESSAGE = 64 * 1024 * 1024, /* a peer sending more is dropped */
    MAX_EVENTS = 64,
};

enum framing { FRAMING_UNKNOWN, FRAMING_LSP, FRAMING_NDJSON };

/* A byte buffer whose live bytes are data[start, len). */
struct buf {
    char *data;
    size_t start, len, cap;
};

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
    b->data = realloc(b->data, cap);
    if (!b->data) {
        perror("nullserver: realloc");
        exit(2);
    }
    b->cap = cap;
}

static void buf_append(struct buf *b, const void *bytes, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

#define buf_append_lit(b, s) buf_append((b), (s), sizeof(s) - 1)

static size_t buf_pending(const struct buf *b) { return b->len - b->start; }

/*
 * One peer.  For stdio in_fd is 0 and out_fd is 1; for a socket both are the
 * connection's fd.  `registered_*` remember the epoll interest so that we call
 * epoll_ctl only when it changes.
 */
struct conn {
    int in_fd, out_fd;
    enum framing framing;
    struct buf in, out;
    bool eof; /* the peer will send no more; close once `out` is drained */
    uint32_t registered_in, registered_out;
};

static int epoll_fd = -1;
static struct conn **conn_by_fd; /* epoll events carry the fd; this maps it back */
static size_t conn_by_fd_len;
static volatile sig_atomic_t stop_requested;
static bool stdio_mode;
static bool stdio_done; /* stdio peer closed: the process exits */
static struct buf scratch; /* one reply body, built before its LSP header */

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        perror("nullserver: fcntl O_NONBLOCK");
        exit(2);
    }
}

static void map_fd(int fd, struct conn *c)
{
    if ((size_t)fd >= conn_by_fd_len) {
        size_t len = conn_by_fd_len ? conn_by_fd_len : 64;
        while (len <= (size_t)fd)
            len *= 2;
        conn_by_fd = realloc(conn_by_fd, len * sizeof *conn_by_fd);
        if (!conn_by_fd) {
            perror("nullserver: realloc");
            exit(2);
        }
        memset(conn_by_fd + conn_by_fd_len, 0, (len - conn_by_fd_len) * sizeof *conn_by_fd);
        conn_by_fd_len = len;
    }
    conn_by_fd[fd] = c;
}

/* Registers or updates one fd's epoll interest when it changed. */
static void set_interest(int fd, uint32_t *registered, uint32_t want, bool first)
{
    if (!first && *registered == want)
        return;
    struct epoll_event ev = {.events = want, .data.fd = fd};
    if (epoll_ctl(epoll_fd, first ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0) {
        perror("nullserver: epoll_ctl");
        exit(2);
    }
    *registered = want;
}

/*
 * Reading stops while a lot of output is unsent, so that a peer that writes
 * but does not read costs bounded memory; writing interest exists only while
 * there is something to write (level-triggered EPOLLOUT would spin otherwise).
 */
static void update_interest(struct conn *c, bool first)
{
    uint32_t want_in = (!c->eof && buf_pending(&c->out) < OUT_HIGH_WATER) ? EPOLLIN : 0;
    uint32_t want_out = buf_pending(&c->out) ? EPOLLOUT : 0;
    if (c->in_fd == c->out_fd) {
        set_interest(c->in_fd, &c->registered_in, want_in | want_out, first);
    } else {
        /* after EOF, stdin is out of the set (see on_readable) */
        if (!c->eof)
            set_interest(c->in_fd, &c->registered_in, want_in, first);
        set_interest(c->out_fd, &c->registered_out, want_out, first);
    }
}

static struct conn *conn_alloc(int in_fd, int out_fd)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        perror("nullserver: calloc");
        exit(2);
    }
    c->in_fd = in_fd;
    c->out_fd = out_fd;
    return c;
}

static struct conn *conn_new(int in_fd, int out_fd)
{
    struct conn *c = conn_alloc(in_fd, out_fd);
    set_nonblocking(in_fd);
    if (out_fd != in_fd)
        set_nonblocking(out_fd);
    map_fd(in_fd, c);
    map_fd(out_fd, c);
    update_interest(c, true);
    return c;
}

static void conn_close(struct conn *c)
{
    if (stdio_mode) {
        stdio_done = true; /* fds 0 and 1 stay open: the process is exiting */
    } else {
        conn_by_fd[c->in_fd] = NULL;
        close(c->in_fd); /* also removes it from the epoll set */
    }
    free(c->in.data);
    free(c->out.data);
    free(c);
}

/* ---- replies --------------------------------------------------------------- */

/* Appends one reply object for a request whose raw id is given. */
static void reply_object(struct buf *b, const char *id, size_t id_len)
{
    buf_append_lit(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_append(b, id, id_len);
    buf_append_lit(b, ",\"result\":null}");
}

static void reply_error(struct buf *b, int code, const char *message)
{
    char text[160];
    int n = snprintf(text, sizeof text,
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
                     code, message);
    buf_append(b, text, (size_t)n);
}

/*
 * Builds in `scratch` the reply body to one message (empty when none is due:
 * a notification, or a batch of notifications).
 */
static void build_reply(const char *p, const char *end)
{
    struct js_message msg;
    scratch.start = scratch.len = 0;
    p = js_skip_ws(p, end);
    if (p < end && *p == '{') {
        if (!js_scan_object(p, end, &msg))
            reply_error(&scratch, -32700, "Parse error");
        else if (msg.id)
            reply_object(&scratch, msg.id, msg.id_len);
        return;
    }
    if (p < end && *p == '[') { /* a batch: one array of replies */
        bool any = false;
        p = js_skip_ws(p + 1, end);
        if (p < end && *p == ']') {
            reply_error(&scratch, -32600, "Invalid Request");
            return;
        }
        buf_append_lit(&scratch, "[");
        while (p < end && *p == '{') {
            p = js_scan_object(p, end, &msg);
            if (!p)
                break;
            if (msg.id) {
                if (any)
                    buf_append_lit(&scratch, ",");
                reply_object(&scratch, msg.id, msg.id_len);
                any = true;
            }
            p = js_skip_ws(p, end);
            if (p < end && *p == ',')
                p = js_skip_ws(p + 1, end);
        }
        if (any)
            buf_append_lit(&scratch, "]");
        else
            scratch.len = 0;
        return;
    }
    reply_error(&scratch, -32700, "Parse error");
}

static void answer(struct conn *c, const char *body, const char *end)
{
    build_reply(body, end);
    if (scratch.len == 0)
        return;
    if (c->framing == FRAMING_LSP) {
        char header[48];
        int n = snprintf(header, sizeof header, "Content-Length: %zu\r\n\r\n", scratch.len);
        buf_append(&c->out, header, (size_t)n);
        buf_append(&c->out, scratch.data, scratch.len);
    } else {
        buf_append(&c->out, scratch.data, scratch.len);
        buf_append_lit(&c->out, "\n");
    }
}

/*
 * Answers every complete message in c->in and consumes it.  Returns false
 * when the peer broke the framing (the connection is then closed).
 */
static bool process_input(struct conn *c)
{
    struct buf *in = &c->in;
    for (;;) {
        const char *p = in->data + in->start;
        const char *end = in->data + in->len;
        if (c->framing == FRAMING_UNKNOWN) {
            const char *first = js_skip_ws(p, end);
            in->start = (size_t)(first - in->data);
            if (first == end)
                return true;
            c->framing = (*first == 'C' || *first == 'c') ? FRAMING_LSP : FRAMING_NDJSON;
            continue;
        }
        if (c->framing == FRAMING_LSP) {
            long long body_len;
            const char *body = js_lsp_header(p, end, &body_len);
            if (!body)
                return end - p < 64 * 1024; /* a header block this long is garbage */
            if (body_len < 0 || body_len > MAX_MESSAGE)
                return false;
            if (end - body < body_len)
                return true; /* wait for the rest of the body */
            answer(c, body, body + body_len);
            in->start = (size_t)(body + body_len - in->data);
        } else {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                return end - p <= MAX_MESSAGE;
            if (js_skip_ws(p, nl) != nl) /* blank lines are not messages */
                answer(c, p, nl);
            in->start = (size_t)(nl + 1 - in->data);
        }
    }
}

/* ---- I/O ------------------------------------------------------------------- */

/* Writes what it can.  Returns false when the peer is gone. */
static bool flush_output(struct conn *c)
{
    struct buf *out = &c->out;
    while (buf_pending(out)) {
        ssize_t n = write(c->out_fd, out->data + out->start, buf_pending(out));
        if (n > 0) {
            out->start += (size_t)n;
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

/* One read, answer all it completed, flush once.  false: close the conn. */
static bool on_readable(struct conn *c)
{
    buf_reserve(&c->in, READ_CHUNK);
    ssize_t n = read(c->in_fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) {
        c->eof = true;
        /* A pipe at EOF reports EPOLLHUP whatever the interest; while the last
         * replies drain that would spin, so a separate input fd leaves the set. */
        if (c->in_fd != c->out_fd)
            epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->in_fd, NULL);
    }
    c->in.len += (size_t)n;
    if (!process_input(c))
        return false;
    return flush_output(c);
}

static void handle_event(struct conn *c, int fd, uint32_t events)
{
    bool ok = true;
    if (fd == c->in_fd && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->eof)
        ok = on_readable(c);
    if (ok && fd == c->out_fd && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        ok = flush_output(c);
    /* A stdout whose reader is gone reports EPOLLERR forever: stop. */
    if (ok && fd == c->out_fd && fd != c->in_fd && (events & EPOLLERR))
        ok = false;
    if (!ok || (c->eof && !buf_pending(&c->out)))
        conn_close(c);
    else
        update_interest(c, false);
}

/* epoll refuses regular files (stdin or stdout redirected to a file). */
static bool pollable(int fd)
{
    struct epoll_event ev = {.events = 0, .data.fd = fd};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return false;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    return true;
}

/*
 * Stdio when one side is a regular file: plain blocking I/O is then safe (a
 * file never blocks, so we cannot deadlock against a peer that is itself
 * blocked writing to us) and keeps `nullserver <requests.txt` usable.
 */
static int serve_stdio_blocking(void)
{
    struct conn *c = conn_alloc(0, 1);
    while (!c->eof) {
        buf_reserve(&c->in, READ_CHUNK);
        ssize_t n = read(0, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            c->eof = true;
        else
            c->in.len += (size_t)n;
        if (!process_input(c) || !flush_output(c))
            return 1;
    }
    return 0;
}

static int listen_on(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        fprintf(stderr, "nullserver: socket path too long (max %zu bytes): %s\n",
                sizeof addr.sun_path - 1, path);
        exit(2);
    }
    strcpy(addr.sun_path, path);
    unlink(path); /* a stale socket from an earlier run */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old_mask = umask(077); /* the socket is 0600, as netmodel's */
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&addr, sizeof addr);
    umask(old_mask);
    if (rc < 0 || listen(fd, 512) < 0) {
        fprintf(stderr, "nullserver: cannot listen on %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return fd;
}

static void accept_all(int listen_fd)
{
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                perror("nullserver: accept4");
            return;
        }
        conn_new(fd, fd);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: nullserver [--socket PATH]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *socket_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
            socket_path = argv[++i];
        else if (strncmp(argv[i], "--socket=", 9) == 0)
            socket_path = argv[i] + 9;
        else
            usage();
    }

    signal(SIGPIPE, SIG_IGN); /* a vanished peer is an EPIPE, not a death */
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: wake epoll */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0) {
        perror("nullserver: epoll_create1");
        return 2;
    }

    int listen_fd = -1;
    int saved_flags[2] = {fcntl(0, F_GETFL), fcntl(1, F_GETFL)};
    if (socket_path) {
        listen_fd = listen_on(socket_path);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = listen_fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
    } else if (!pollable(0) || !pollable(1)) {
        return serve_stdio_blocking();
    } else {
        stdio_mode = true;
        conn_new(0, 1);
    }

    struct epoll_event events[MAX_EVENTS];
    while (!stop_requested && !stdio_done) {
        int n = epoll_wait(epoll_fd, events, MAX_EVENTS, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            perror("nullserver: epoll_wait");
            return 2;
        }
        for (int i = 0; i < n && !stdio_done; i++) {
            int fd = events[i].data.fd;
            if (fd == listen_fd) {
                accept_all(listen_fd);
                continue;
            }
            /* an fd closed earlier in this batch maps to NULL */
            struct conn *c = (size_t)fd < conn_by_fd_len ? conn_by_fd[fd] : NULL;
            if (c)
                handle_event(c, fd, events[i].events);
        }
    }

    if (socket_path)
        unlink(socket_path);
    else {
        /* O_NONBLOCK lives on the shared file description (a tty, say): undo it */
        fcntl(0, F_SETFL, saved_flags[0]);
        fcntl(1, F_SETFL, saved_flags[1]);
    }
    return 0;
}
