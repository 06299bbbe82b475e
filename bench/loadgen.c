/*
 * loadgen — load generator for JSON-RPC servers (netmodel, nullserver, clangd).
 *
 * Target (one of, or both):
 *   --spawn "CMD ARG..."   start the server as a child; without --socket its
 *                          stdin/stdout are our pipes.  The string is split on
 *                          spaces (no quoting) and exec'd directly, without a
 *                          shell, so a shell's start-up is not timed.
 *   --socket PATH          connect to a Unix socket.  With --spawn as well, the
 *                          child is started first (stdin/stdout /dev/null) and
 *                          connect is retried until it listens.
 * Options:
 *   --framing lsp|ndjson   (default ndjson)
 *   --mode pingpong        one request at a time: p50/p99/mean latency in µs
 *   --mode pipelined       keep --inflight requests outstanding: requests/s
 *   --mode startup         --runs times: spawn the server fresh, send one request,
 *                          time from spawn to the complete reply: median ms
 *   --count N              measured requests (default 20000)
 *   --warmup N             unmeasured requests first (default count/10, max 10000)
 *   --inflight N           window for pipelined (default 256)
 *   --runs N               spawns for startup (default 10)
 *   --method NAME          request method (default "stats"), inserted verbatim
 *   --params JSON          request params, verbatim (default: no params member)
 *   --label TEXT           target=... in the output (default: the command's name)
 *   --server-log FILE      the child's stderr (default /dev/null)
 *   --max-seconds S        stop sending after S s and report what was done (10)
 *   --timeout S            give up when no reply came for S s (10)
 *
 * Output: one line of key=value pairs on stdout, e.g.
 *   mode=pipelined transport=stdio framing=ndjson target=nullserver ... rps=412345 status=ok
 * Every reply's id is checked against the requests in flight: error replies
 * count as replies (and in errors=), ids that match nothing count in
 * mismatches= and the first few are printed on stderr.  The exit status is 0
 * only when status=ok and mismatches=0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsonscan.h"

extern char **environ;

enum framing { FRAMING_LSP, FRAMING_NDJSON };
enum mode { MODE_PINGPONG, MODE_PIPELINED, MODE_STARTUP };

static const char *const framing_names[] = {"lsp", "ndjson"};
static const char *const mode_names[] = {"pingpong", "pipelined", "startup"};

struct options {
    char **spawn_argv; /* NULL-terminated, or NULL */
    const char *socket_path;
    enum framing framing;
    enum mode mode;
    long count, warmup, inflight, runs;
    const char *method, *params, *label, *server_log;
    double max_seconds, timeout;
};

static struct options opt = {
    .framing = FRAMING_NDJSON,
    .mode = MODE_PINGPONG,
    .count = 20000,
    .warmup = -1,
    .inflight = 256,
    .runs = 10,
    .method = "stats",
    .server_log = "/dev/null",
    .max_seconds = 10,
    .timeout = 10,
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        die("calloc");
    return p;
}

/* ---- buffers (live bytes are data[start, len)) ---------------------------- */

struct buf {
    char *data;
    size_t start, len, cap;
};

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->start > 0 && b->len + extra > b->cap) {
        memmove(b->data, b->data + b->start, b->len - b->start);
        b->len -= b->start;
        b->start = 0;
    }
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    if (!(b->data = realloc(b->data, cap)))
        die("realloc");
    b->cap = cap;
}

static size_t buf_pending(const struct buf *b) { return b->len - b->start; }

/* ---- the server under test ------------------------------------------------- */

struct peer {
    pid_t pid;    /* -1 when we did not spawn it */
    int wfd, rfd; /* equal for a socket */
    struct buf in, out;
};

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        die("fcntl");
}

/*
 * Starts the server.  posix_spawn (vfork-like in glibc) rather than fork, so
 * the start-up figure does not include copying our page tables.
 */
static pid_t spawn_server(bool use_pipes, int *wfd, int *rfd)
{
    /* opened here, not in the child, so that a bad path is named as such and
     * /dev/stderr means ours */
    int log_fd = open(opt.server_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        die(opt.server_log);
    int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (use_pipes) {
        if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0)
            die("pipe2");
        posix_spawn_file_actions_adddup2(&fa, to_child[0], 0); /* dup2 clears CLOEXEC */
        posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, opt.spawn_argv[0], &fa, NULL, opt.spawn_argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(log_fd);
    if (rc != 0) {
        errno = rc;
        die(opt.spawn_argv[0]);
    }
    if (use_pipes) {
        close(to_child[0]);
        close(from_child[1]);
        *wfd = to_child[1];
        *rfd = from_child[0];
    }
    return pid;
}

/* Connects, retrying while the (just spawned) server is not listening yet. */
static int connect_socket(const char *path, pid_t child, uint64_t deadline)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        fprintf(stderr, "loadgen: socket path too long: %s\n", path);
        exit(2);
    }
    strcpy(addr.sun_path, path);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            die("socket");
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            return fd;
        int err = errno;
        close(fd);
        if ((err != ENOENT && err != ECONNREFUSED) || child < 0 || now_ns() > deadline) {
            fprintf(stderr, "loadgen: connect %s: %s\n", path, strerror(err));
            return -1;
        }
        if (waitpid(child, NULL, WNOHANG) == child) {
            fprintf(stderr, "loadgen: the server exited before listening on %s\n", path);
            return -1;
        }
        usleep(100); /* the granularity this adds to start-up figures: 0.1 ms */
    }
}

/* Spawns and/or connects as the options say.  false: it did not come up. */
static bool peer_open(struct peer *p)
{
    memset(p, 0, sizeof *p);
    p->pid = -1;
    if (opt.spawn_argv) {
        if (opt.socket_path)
            unlink(opt.socket_path); /* never connect to a stale socket */
        p->pid = spawn_server(!opt.socket_path, &p->wfd, &p->rfd);
    }
    if (opt.socket_path) {
        uint64_t deadline = now_ns() + (uint64_t)(opt.timeout * 1e9);
        p->wfd = p->rfd = connect_socket(opt.socket_path, p->pid, deadline);
        if (p->wfd < 0) {
            if (p->pid > 0) {
                kill(p->pid, SIGKILL);
                waitpid(p->pid, NULL, 0);
            }
            return false;
        }
    }
    set_nonblocking(p->wfd);
    if (p->rfd != p->wfd)
        set_nonblocking(p->rfd);
    return true;
}

/* Waits for a server we asked to stop; SIGKILL after 3 s.  Not timed. */
static void reap_server(pid_t pid)
{
    int status = 0;
    uint64_t deadline = now_ns() + 3000000000u;
    pid_t r;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && now_ns() < deadline)
        usleep(1000);
    if (r == 0) {
        fprintf(stderr, "loadgen: server pid %d did not exit within 3 s: SIGKILL\n", pid);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM) {
        /* a crash during the measurement: the figures are suspect */
        fprintf(stderr, "loadgen: server died of signal %d\n", WTERMSIG(status));
    }
}

/* Ends the connection and, if we spawned the server, the server. */
static void peer_close(struct peer *p)
{
    close(p->wfd); /* a stdio server sees EOF on stdin and exits */
    if (p->rfd != p->wfd)
        close(p->rfd);
    if (p->pid >= 0) {
        if (opt.socket_path)
            kill(p->pid, SIGTERM); /* the socket server's way to stop */
        reap_server(p->pid);
    }
    free(p->in.data);
    free(p->out.data);
}

/* ---- requests and replies ---------------------------------------------------- */

enum status { ST_OK, ST_TIMEOUT, ST_EOF, ST_IO_ERROR, ST_BAD_FRAMING };
static const char *const status_names[] = {"ok", "timeout", "eof", "io_error", "bad_framing"};

/* The state of one connection's request stream. */
struct stream {
    struct peer *peer;
    uint64_t next_id;  /* ids are 1, 2, 3, ... */
    uint64_t *sent_at; /* indexed by id: send time in ns, 0 once answered */
    uint64_t inflight;
    uint64_t *latencies; /* ns, of matched replies while recording, or NULL */
    uint64_t n_latencies;
    uint64_t replies, errors, mismatches, malformed, from_server;
    uint64_t last_progress;
};

static void stream_init(struct stream *s, struct peer *p, uint64_t max_ids)
{
    memset(s, 0, sizeof *s);
    s->peer = p;
    s->next_id = 1;
    s->sent_at = xmalloc((max_ids + 1) * sizeof *s->sent_at);
}

static void stream_free(struct stream *s)
{
    free(s->sent_at);
    free(s->latencies);
}

/*
 * Every request is REQUEST_PREFIX <id> request_suffix.  The suffix is built
 * once; the per-request work is a copy and an integer conversion, because at
 * millions of requests per second snprintf would make the load generator,
 * not the server, the bottleneck.
 */
static const char REQUEST_PREFIX[] = "{\"jsonrpc\":\"2.0\",\"id\":";
static char *request_suffix; /* ,"method":"M"[,"params":P]} */
static size_t request_suffix_len;

static void build_request_suffix(void)
{
    size_t cap = strlen(opt.method) + (opt.params ? strlen(opt.params) : 0) + 32;
    request_suffix = xmalloc(cap);
    request_suffix_len = (size_t)snprintf(request_suffix, cap, ",\"method\":\"%s\"%s%s}",
                                          opt.method, opt.params ? ",\"params\":" : "",
                                          opt.params ? opt.params : "");
}

/* Writes v in decimal at p; returns the number of digits. */
static size_t put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

static size_t decimal_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Appends one framed request with the next id; `now` is its send time. */
static void send_request(struct stream *s, uint64_t now)
{
    static const char header[] = "Content-Length: ";
    uint64_t id = s->next_id++;
    size_t body_len = sizeof REQUEST_PREFIX - 1 + decimal_len(id) + request_suffix_len;
    struct buf *out = &s->peer->out;
    buf_reserve(out, body_len + 48);
    char *p = out->data + out->len;
    if (opt.framing == FRAMING_LSP) {
        memcpy(p, header, sizeof header - 1);
        p += sizeof header - 1;
        p += put_u64(p, body_len);
        memcpy(p, "\r\n\r\n", 4);
        p += 4;
    }
    memcpy(p, REQUEST_PREFIX, sizeof REQUEST_PREFIX - 1);
    p += sizeof REQUEST_PREFIX - 1;
    p += put_u64(p, id);
    memcpy(p, request_suffix, request_suffix_len);
    p += request_suffix_len;
    if (opt.framing == FRAMING_NDJSON)
        *p++ = '\n';
    out->len = (size_t)(p - out->data);
    s->sent_at[id] = now;
    s->inflight++;
}

static void report_mismatch(struct stream *s, const char *why, const char *raw, size_t len)
{
    if (++s->mismatches <= 5)
        fprintf(stderr, "loadgen: reply %s: id=%.*s\n", why, (int)(len > 80 ? 80 : len), raw);
    else if (s->mismatches == 6)
        fprintf(stderr, "loadgen: (further mismatches only counted)\n");
}

/*
 * Matches one reply body against the requests in flight.  `now` is the time
 * of the read that brought it: one clock read per read(), not per reply,
 * because the clock costs ~40 ns here and would show at millions of replies
 * per second.  For ping-pong it is the same thing.
 */
static void on_message(struct stream *s, const char *p, const char *end, uint64_t now)
{
    struct js_message msg;
    p = js_skip_ws(p, end);
    if (p >= end || *p != '{' || !js_scan_object(p, end, &msg)) {
        if (++s->malformed <= 5)
            fprintf(stderr, "loadgen: malformed reply: %.*s\n",
                    (int)(end - p > 120 ? 120 : end - p), p);
        return;
    }
    if (msg.has_method) { /* a notification or request from the server */
        s->from_server++;
        return;
    }
    if (!msg.id) {
        report_mismatch(s, "without id", "", 0);
        return;
    }
    uint64_t id = 0;
    size_t i = 0;
    for (; i < msg.id_len && msg.id[i] >= '0' && msg.id[i] <= '9' && i < 19; i++)
        id = id * 10 + (uint64_t)(msg.id[i] - '0');
    if (i == 0 || i != msg.id_len || id == 0 || id >= s->next_id || s->sent_at[id] == 0) {
        report_mismatch(s, "matching no request in flight", msg.id, msg.id_len);
        return;
    }
    if (s->latencies)
        s->latencies[s->n_latencies++] = now - s->sent_at[id];
    s->sent_at[id] = 0;
    s->inflight--;
    s->replies++;
    s->last_progress = now;
    if (msg.has_error)
        s->errors++;
}

/* Consumes every complete message in the input buffer. */
static enum status parse_input(struct stream *s, uint64_t now)
{
    struct buf *in = &s->peer->in;
    for (;;) {
        const char *p = in->data + in->start, *end = in->data + in->len;
        if (opt.framing == FRAMING_LSP) {
            p = js_skip_ws(p, end);
            long long body_len;
            const char *body = js_lsp_header(p, end, &body_len);
            if (!body)
                return end - p > 64 * 1024 ? ST_BAD_FRAMING : ST_OK;
            if (body_len < 0)
                return ST_BAD_FRAMING;
            if (end - body < body_len)
                return ST_OK;
            on_message(s, body, body + body_len, now);
            in->start = (size_t)(body + body_len - in->data);
        } else {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                return ST_OK;
            if (js_skip_ws(p, nl) != nl)
                on_message(s, p, nl, now);
            in->start = (size_t)(nl + 1 - in->data);
        }
    }
}

/*
 * Writes what can be written, waits (at most until `deadline`) for the
 * connection to become readable or writable, and reads and matches whatever
 * arrived.
 */
static enum status pump(struct stream *s, uint64_t deadline)
{
    struct peer *p = s->peer;
    struct buf *out = &p->out;
    while (buf_pending(out)) { /* write first: the usual case needs no poll */
        ssize_t n = write(p->wfd, out->data + out->start, buf_pending(out));
        if (n > 0)
            out->start += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        else
            return ST_IO_ERROR;
    }

    struct pollfd fds[2] = {{.fd = p->rfd, .events = POLLIN}};
    nfds_t nfds = 1;
    if (buf_pending(out)) {
        if (p->wfd == p->rfd)
            fds[0].events |= POLLOUT;
        else
            fds[nfds++] = (struct pollfd){.fd = p->wfd, .events = POLLOUT};
    }
    uint64_t t = now_ns();
    int wait_ms = t >= deadline ? 0 : (int)((deadline - t) / 1000000u) + 1;
    int rc = poll(fds, nfds, wait_ms);
    if (rc < 0)
        return errno == EINTR ? ST_OK : ST_IO_ERROR;
    if (rc == 0)
        return now_ns() >= deadline ? ST_TIMEOUT : ST_OK;
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
        return ST_OK; /* only writable: the next pump writes */

    buf_reserve(&p->in, 256 * 1024);
    ssize_t n = read(p->rfd, p->in.data + p->in.len, p->in.cap - p->in.len);
    if (n == 0)
        return ST_EOF;
    if (n < 0)
        return (errno == EAGAIN || errno == EINTR) ? ST_OK : ST_IO_ERROR;
    p->in.len += (size_t)n;
    return parse_input(s, now_ns());
}

/*
 * Sends n requests keeping at most `window` in flight and waits for all their
 * replies.  Stops sending new ones after opt.max_seconds (*truncated is set).
 */
static enum status drive(struct stream *s, uint64_t n, uint64_t window, bool *truncated)
{
    uint64_t end_id = s->next_id + n;
    uint64_t stop_at = now_ns() + (uint64_t)(opt.max_seconds * 1e9);
    uint64_t patience = (uint64_t)(opt.timeout * 1e9);
    s->last_progress = now_ns();
    while (s->next_id < end_id || s->inflight > 0) {
        if (s->inflight < window && s->next_id < end_id) {
            uint64_t now = now_ns(); /* one send time for the whole batch */
            while (s->inflight < window && s->next_id < end_id)
                send_request(s, now);
        }
        enum status st = pump(s, s->last_progress + patience);
        if (st != ST_OK)
            return st;
        if (s->next_id < end_id && now_ns() > stop_at) {
            end_id = s->next_id;
            if (truncated)
                *truncated = true;
        }
    }
    return ST_OK;
}

/* ---- statistics and output --------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static uint64_t percentile(const uint64_t *v, uint64_t n, double pct)
{
    if (n == 0)
        return 0;
    uint64_t rank = (uint64_t)(pct / 100.0 * (double)n + 0.999999);
    return v[rank == 0 ? 0 : rank - 1];
}

static double mean_of(const uint64_t *v, uint64_t n)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)v[i];
    return n ? sum / (double)n : 0;
}

static const char *target_label(void)
{
    if (opt.label)
        return opt.label;
    if (opt.spawn_argv) {
        const char *slash = strrchr(opt.spawn_argv[0], '/');
        return slash ? slash + 1 : opt.spawn_argv[0];
    }
    return opt.socket_path;
}

static void print_prefix(void)
{
    printf("mode=%s transport=%s framing=%s target=%s method=%s", mode_names[opt.mode],
           opt.socket_path ? "socket" : "stdio", framing_names[opt.framing], target_label(),
           opt.method);
}

static void print_counters(const struct stream *s, enum status st, bool truncated)
{
    printf(" replies=%" PRIu64 " errors=%" PRIu64 " mismatches=%" PRIu64 " malformed=%" PRIu64
           " from_server=%" PRIu64 " truncated=%d status=%s\n",
           s->replies, s->errors, s->mismatches, s->malformed, s->from_server, truncated,
           status_names[st]);
}

/* ---- modes ------------------------------------------------------------------- */

/* pingpong and pipelined: one connection, warm-up, then the measured requests. */
static int run_load(void)
{
    struct peer peer;
    if (!peer_open(&peer))
        return 2;
    uint64_t warmup = opt.warmup >= 0 ? (uint64_t)opt.warmup
                                      : (uint64_t)(opt.count / 10 > 10000 ? 10000 : opt.count / 10);
    uint64_t window = opt.mode == MODE_PINGPONG ? 1 : (uint64_t)opt.inflight;
    struct stream s;
    stream_init(&s, &peer, warmup + (uint64_t)opt.count);

    bool truncated = false;
    enum status st = drive(&s, warmup, window, NULL);
    uint64_t warm_replies = s.replies;
    uint64_t t0 = now_ns(), t1 = t0;
    if (st == ST_OK) {
        s.latencies = xmalloc((uint64_t)opt.count * sizeof *s.latencies);
        st = drive(&s, (uint64_t)opt.count, window, &truncated);
        t1 = now_ns();
    }
    peer_close(&peer);

    uint64_t n = s.n_latencies;
    qsort(s.latencies, n, sizeof *s.latencies, cmp_u64);
    double elapsed = (double)(t1 - t0) / 1e9;
    print_prefix();
    printf(" count=%" PRIu64 " warmup=%" PRIu64, n, warm_replies);
    if (opt.mode == MODE_PIPELINED)
        printf(" inflight=%" PRIu64 " rps=%.0f", window, elapsed > 0 ? (double)n / elapsed : 0);
    /* for pipelined these are latencies under load (queueing included) */
    printf(" p50_us=%.1f p99_us=%.1f mean_us=%.1f max_us=%.1f elapsed_s=%.3f",
           (double)percentile(s.latencies, n, 50) / 1e3, (double)percentile(s.latencies, n, 99) / 1e3,
           mean_of(s.latencies, n) / 1e3, n ? (double)s.latencies[n - 1] / 1e3 : 0.0, elapsed);
    print_counters(&s, st, truncated);
    stream_free(&s);
    return st == ST_OK && s.mismatches == 0 ? 0 : 1;
}

/* startup: a fresh server per run; spawn → first complete reply. */
static int run_startup(void)
{
    if (!opt.spawn_argv) {
        fprintf(stderr, "loadgen: --mode startup needs --spawn\n");
        return 2;
    }
    uint64_t *times = xmalloc((uint64_t)opt.runs * sizeof *times);
    uint64_t n = 0; /* successful runs */
    struct stream total = {0};
    enum status st = ST_OK;
    uint64_t budget_end = now_ns() + (uint64_t)(opt.max_seconds * 1e9);
    bool truncated = false;
    for (long run = 0; run < opt.runs; run++) {
        if (run > 0 && now_ns() > budget_end) {
            truncated = true;
            break;
        }
        struct peer peer;
        uint64_t t0 = now_ns();
        if (!peer_open(&peer)) {
            st = ST_IO_ERROR;
            break;
        }
        struct stream s;
        stream_init(&s, &peer, 1);
        st = drive(&s, 1, 1, NULL);
        uint64_t elapsed = now_ns() - t0;
        peer_close(&peer); /* not timed: the next run starts on an idle machine */
        total.replies += s.replies;
        total.errors += s.errors;
        total.mismatches += s.mismatches;
        total.malformed += s.malformed;
        total.from_server += s.from_server;
        stream_free(&s);
        if (st != ST_OK)
            break;
        times[n++] = elapsed;
    }
    qsort(times, n, sizeof *times, cmp_u64);
    print_prefix();
    printf(" runs=%" PRIu64 " median_ms=%.2f min_ms=%.2f max_ms=%.2f mean_ms=%.2f", n,
           n ? (double)times[(n - 1) / 2] / 1e6 : 0.0, n ? (double)times[0] / 1e6 : 0.0,
           n ? (double)times[n - 1] / 1e6 : 0.0, mean_of(times, n) / 1e6);
    print_counters(&total, st, truncated);
    free(times);
    return st == ST_OK && total.mismatches == 0 ? 0 : 1;
}

/* ---- command line ------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: loadgen (--spawn \"CMD ARGS\" | --socket PATH | both)\n"
            "               [--framing lsp|ndjson] [--mode pingpong|pipelined|startup]\n"
            "               [--count N] [--warmup N] [--inflight N] [--runs N]\n"
            "               [--method NAME] [--params JSON] [--label TEXT]\n"
            "               [--server-log FILE] [--max-seconds S] [--timeout S]\n");
    exit(2);
}

/* Splits on spaces into a NULL-terminated argv (the string is modified). */
static char **split_command(char *cmd)
{
    size_t cap = 8, n = 0;
    char **argv = xmalloc(cap * sizeof *argv);
    for (char *tok = strtok(cmd, " \t"); tok; tok = strtok(NULL, " \t")) {
        if (n + 2 > cap && !(argv = realloc(argv, (cap *= 2) * sizeof *argv)))
            die("realloc");
        argv[n++] = tok;
    }
    argv[n] = NULL;
    if (n == 0)
        usage();
    return argv;
}

static long parse_long(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0)
        usage();
    return v;
}

static double parse_double(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || v <= 0)
        usage();
    return v;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        char *v = argv[++i];
        if (!strcmp(a, "--spawn"))
            opt.spawn_argv = split_command(v);
        else if (!strcmp(a, "--socket"))
            opt.socket_path = v;
        else if (!strcmp(a, "--framing") && !strcmp(v, "lsp"))
            opt.framing = FRAMING_LSP;
        else if (!strcmp(a, "--framing") && !strcmp(v, "ndjson"))
            opt.framing = FRAMING_NDJSON;
        else if (!strcmp(a, "--mode") && !strcmp(v, "pingpong"))
            opt.mode = MODE_PINGPONG;
        else if (!strcmp(a, "--mode") && !strcmp(v, "pipelined"))
            opt.mode = MODE_PIPELINED;
        else if (!strcmp(a, "--mode") && !strcmp(v, "startup"))
            opt.mode = MODE_STARTUP;
        else if (!strcmp(a, "--count"))
            opt.count = parse_long(v);
        else if (!strcmp(a, "--warmup"))
            opt.warmup = parse_long(v);
        else if (!strcmp(a, "--inflight"))
            opt.inflight = parse_long(v);
        else if (!strcmp(a, "--runs"))
            opt.runs = parse_long(v);
        else if (!strcmp(a, "--method"))
            opt.method = v;
        else if (!strcmp(a, "--params"))
            opt.params = v;
        else if (!strcmp(a, "--label"))
            opt.label = v;
        else if (!strcmp(a, "--server-log"))
            opt.server_log = v;
        else if (!strcmp(a, "--max-seconds"))
            opt.max_seconds = parse_double(v);
        else if (!strcmp(a, "--timeout"))
            opt.timeout = parse_double(v);
        else
            usage();
    }
    if ((!opt.spawn_argv && !opt.socket_path) || opt.count < 1 || opt.inflight < 1 || opt.runs < 1)
        usage();
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    build_request_suffix();
    signal(SIGPIPE, SIG_IGN); /* a dying server is an EPIPE we report */
    int rc = opt.mode == MODE_STARTUP ? run_startup() : run_load();
    fflush(stdout);
    return rc;
}
