/*
 * fanout — how long one `follow` takes to reach every subscriber.
 *
 *   fanout --socket PATH [--conns 1000] [--iterations 10] [--kind artist] [--id fan]
 *          [--timeout S]
 *   fanout --floor [--conns 1000] [--iterations 10]
 *
 * 1. A "sender" connection does a warm-up cycle, `follow` then `unfollow`, both
 *    with await:true, so the entity is known and confirmed (not following).
 * 2. --conns connections each `subscribe` to {type:"entity",kind,id} and read the
 *    reply (the snapshot must show following:false).
 * 3. --iterations times: the sender writes `follow` (even iterations) or
 *    `unfollow` (odd ones).  T0 is taken just before the write.  epoll then
 *    watches every connection until each has received a `stateChanged` whose
 *    state.following is the new value; the figure is T0 → the last of them.
 *    Between iterations the connections are drained until 30 ms pass quietly,
 *    so the backend's confirmation notifications do not spill into the next.
 *
 * --floor measures the same thing against a forked "null fan-out server"
 * instead of netmodel: socketpairs instead of a listening socket, and for each
 * request on the sender's pair it writes the reply and then one ready-made,
 * netmodel-sized stateChanged line to every subscriber, in a plain loop of
 * write(2).  It is the floor of this machine: the kernel's cost of 1,000 writes
 * and wake-ups plus this program's cost of reading them.  (No warm-up or
 * subscribe phase there.)
 *
 * Output, one line of key=value pairs on stdout:
 *   first_ms        the first follow (the cold case: first fan-out of the entity)
 *   follow_ms       median over the follow iterations (first included)
 *   unfollow_ms     median over the unfollow iterations
 *   median_conn_ms  median over all iterations of the time the *median*
 *                   connection got it
 *   seq_gaps        notifications whose seq was not the previous one + 1
 *                   (the protocol says seq grows by one per notification)
 *   stale_versions  entity states whose version was lower than one already seen
 * Exit status 0 only when every iteration completed (status=ok).
 * Newline-delimited JSON only; the server's writes are compact JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsonscan.h"

static const char *socket_path;
static bool floor_mode;
static long n_conns = 1000, iterations = 10;
static const char *kind = "artist", *entity_id = "fan";
static double timeout_s = 10;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "fanout: %s: %s\n", what, strerror(errno));
    exit(2);
}

struct conn {
    int fd;
    char *buf;
    size_t len, cap;
    int64_t last_seq;      /* -1 before the first notification */
    int64_t last_version;  /* highest entity version seen */
    bool replied;          /* the subscribe (or, for the sender, the current request) answered */
    bool got;              /* has the wanted state in this iteration */
    bool bad_snapshot;
    uint64_t got_at;
};

static struct conn *conns; /* [0, n_conns) subscribers, [n_conns] the sender */
static int ep;
static uint64_t seq_gaps, stale_versions, notifications, errors;
static int want_following = -1; /* 0/1 during an iteration, -1 otherwise */
static long remaining;           /* subscribers that do not have it yet */

static int connect_socket(void)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof addr.sun_path) {
        fprintf(stderr, "fanout: socket path too long\n");
        exit(2);
    }
    strcpy(addr.sun_path, socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    /* blocking connect: when the listen backlog is full it waits for accept */
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect");
    return fd;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && errno == EAGAIN) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        } else {
            die("write");
        }
    }
}

/* The value after "key": inside [p, end), or NULL.  Compact and spaced JSON. */
static const char *field(const char *p, const char *end, const char *quoted_key)
{
    size_t k = strlen(quoted_key);
    const char *hit = memmem(p, (size_t)(end - p), quoted_key, k);
    if (!hit)
        return NULL;
    const char *v = js_skip_ws(hit + k, end);
    if (v >= end || *v != ':')
        return NULL;
    return js_skip_ws(v + 1, end);
}

static int64_t int_field(const char *p, const char *end, const char *quoted_key)
{
    const char *v = field(p, end, quoted_key);
    if (!v)
        return -1;
    int64_t n = 0;
    for (; v < end && *v >= '0' && *v <= '9'; v++)
        n = n * 10 + (*v - '0');
    return n;
}

/* 1 true, 0 false, -1 null or absent */
static int bool_field(const char *p, const char *end, const char *quoted_key)
{
    const char *v = field(p, end, quoted_key);
    if (!v)
        return -1;
    if (end - v >= 4 && memcmp(v, "true", 4) == 0)
        return 1;
    if (end - v >= 5 && memcmp(v, "false", 5) == 0)
        return 0;
    return -1;
}

static void on_line(struct conn *c, bool is_sender, const char *p, const char *end, uint64_t now)
{
    struct js_message msg;
    p = js_skip_ws(p, end);
    if (p >= end)
        return;
    if (*p != '{' || !js_scan_object(p, end, &msg)) {
        fprintf(stderr, "fanout: malformed line: %.*s\n", (int)(end - p > 120 ? 120 : end - p), p);
        exit(2);
    }
    if (msg.has_method) {
        notifications++;
        int64_t seq = int_field(p, end, "\"seq\"");
        if (c->last_seq >= 0 && seq != c->last_seq + 1)
            seq_gaps++;
        c->last_seq = seq;
        int64_t version = int_field(p, end, "\"version\"");
        if (version < c->last_version)
            stale_versions++;
        else
            c->last_version = version;
        int following = bool_field(p, end, "\"following\"");
        if (!is_sender && want_following >= 0 && !c->got && following == want_following) {
            c->got = true;
            c->got_at = now;
            remaining--;
        }
        return;
    }
    if (msg.has_error) {
        errors++;
        if (errors <= 5)
            fprintf(stderr, "fanout: error reply: %.*s\n", (int)(end - p > 200 ? 200 : end - p), p);
    }
    c->replied = true;
    if (!is_sender) { /* the subscribe reply: its snapshot must say not following */
        if (bool_field(p, end, "\"following\"") != 0)
            c->bad_snapshot = true;
        int64_t version = int_field(p, end, "\"version\"");
        if (version > c->last_version)
            c->last_version = version;
    }
}

/* Reads what is there; returns false on EOF or error. */
static bool pump(struct conn *c, bool is_sender)
{
    for (;;) {
        if (c->cap - c->len < 4096) {
            c->cap = c->cap ? c->cap * 2 : 16384;
            if (!(c->buf = realloc(c->buf, c->cap)))
                die("realloc");
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n == 0)
            return false;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return true;
            return false;
        }
        uint64_t now = now_ns();
        c->len += (size_t)n;
        char *start = c->buf, *end = c->buf + c->len, *nl;
        while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
            on_line(c, is_sender, start, nl, now);
            start = nl + 1;
        }
        c->len = (size_t)(end - start);
        memmove(c->buf, start, c->len);
    }
}

/*
 * Runs epoll until done() holds, or until `quiet_ns` passed without input when
 * quiet_ns > 0.  Returns false on a timeout (no input for timeout_s) or EOF.
 */
static bool loop_until(bool (*done)(void), uint64_t quiet_ns)
{
    struct epoll_event events[256];
    uint64_t last_input = now_ns();
    for (;;) {
        if (done && done())
            return true;
        int wait_ms = quiet_ns ? 5 : 100;
        int n = epoll_wait(ep, events, 256, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        uint64_t now = now_ns();
        if (n == 0) {
            if (quiet_ns && now - last_input >= quiet_ns)
                return true;
            if (now - last_input > (uint64_t)(timeout_s * 1e9)) {
                fprintf(stderr, "fanout: no input for %.0f s\n", timeout_s);
                return false;
            }
            continue;
        }
        last_input = now;
        for (int i = 0; i < n; i++) {
            long idx = (long)events[i].data.u64;
            if (!pump(&conns[idx], idx == n_conns)) {
                fprintf(stderr, "fanout: connection %ld closed by the server\n", idx);
                return false;
            }
        }
    }
}

static bool all_subscribed(void)
{
    for (long i = 0; i < n_conns; i++)
        if (!conns[i].replied)
            return false;
    return true;
}

static bool sender_replied(void) { return conns[n_conns].replied; }

static bool all_got(void) { return remaining == 0 && conns[n_conns].replied; }

static void sender_request(long id, const char *method, bool await)
{
    char req[512];
    int n = snprintf(req, sizeof req,
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":{\"kind\":\"%s\","
                     "\"id\":\"%s\"%s}}\n",
                     id, method, kind, entity_id, await ? ",\"await\":true" : "");
    conns[n_conns].replied = false;
    write_all(conns[n_conns].fd, req, (size_t)n);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, long n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return (n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2) / 1e6;
}

/*
 * The null fan-out server (--floor), in a forked child: for each request line
 * on `ctrl`, the reply, then one stateChanged line to each of `fds`.
 */
static void floor_server(int ctrl, const int *fds, long n)
{
    char in[65536], note[512];
    size_t len = 0;
    long seq = 0, version = 0;
    for (;;) {
        ssize_t r = read(ctrl, in + len, sizeof in - len);
        if (r <= 0)
            _exit(0);
        len += (size_t)r;
        char *start = in, *nl;
        while ((nl = memchr(start, '\n', (size_t)(in + len - start)))) {
            struct js_message msg;
            if (!js_scan_object(start, nl, &msg) || !msg.id)
                _exit(3);
            bool follow = memmem(start, (size_t)(nl - start), "\"method\":\"follow\"", 17) != NULL;
            int m = snprintf(note, sizeof note, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":null}\n",
                             (int)msg.id_len, msg.id);
            write_all(ctrl, note, (size_t)m);
            seq++;
            version++;
            m = snprintf(note, sizeof note,
                         "{\"jsonrpc\":\"2.0\",\"method\":\"stateChanged\",\"params\":{\"subscription\":"
                         "\"s1\",\"seq\":%ld,\"state\":{\"kind\":\"%s\",\"id\":\"%s\",\"following\":%s,"
                         "\"confirmed\":%s,\"pending\":false,\"error\":null,\"attributes\":null,"
                         "\"version\":%ld}}}\n",
                         seq, kind, entity_id, follow ? "true" : "false", follow ? "true" : "false",
                         version);
            for (long i = 0; i < n; i++)
                write_all(fds[i], note, (size_t)m);
            start = nl + 1;
        }
        len = (size_t)(in + len - start);
        memmove(in, start, len);
    }
}

/* --floor: socketpairs and the forked null fan-out server; returns its pid. */
static pid_t start_floor(void)
{
    int *server_ends = calloc((size_t)n_conns + 1, sizeof *server_ends);
    if (!server_ends)
        die("calloc");
    for (long i = 0; i <= n_conns; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
            die("socketpair");
        conns[i].fd = sv[0];
        server_ends[i] = sv[1];
    }
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        for (long i = 0; i <= n_conns; i++)
            close(conns[i].fd);
        floor_server(server_ends[n_conns], server_ends, n_conns);
    }
    for (long i = 0; i <= n_conns; i++)
        close(server_ends[i]);
    free(server_ends);
    return pid;
}

static void usage(void)
{
    fprintf(stderr, "usage: fanout (--socket PATH | --floor) [--conns N] [--iterations N] [--kind K] "
                    "[--id I] [--timeout S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--floor")) {
            floor_mode = true;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(a, "--socket"))
            socket_path = v;
        else if (!strcmp(a, "--conns"))
            n_conns = atol(v);
        else if (!strcmp(a, "--iterations"))
            iterations = atol(v);
        else if (!strcmp(a, "--kind"))
            kind = v;
        else if (!strcmp(a, "--id"))
            entity_id = v;
        else if (!strcmp(a, "--timeout"))
            timeout_s = atof(v);
        else
            usage();
        i++;
    }
    if (!socket_path == !floor_mode || n_conns < 1 || iterations < 1)
        usage();

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n_conns + 64) {
        rl.rlim_cur = (rlim_t)n_conns + 64;
        if (rl.rlim_max < rl.rlim_cur)
            rl.rlim_max = rl.rlim_cur; /* works as root only */
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            die("setrlimit(RLIMIT_NOFILE)");
    }

    conns = calloc((size_t)n_conns + 1, sizeof *conns);
    if (!conns)
        die("calloc");
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    enum status { OK, TIMEOUT } status = OK;

    pid_t floor_pid = floor_mode ? start_floor() : -1;
    for (long i = 0; i <= n_conns; i++) {
        conns[i].last_seq = -1;
        conns[i].last_version = -1;
        /* allocated and touched now, so that no first read pays for it */
        conns[i].cap = 16384;
        if (!(conns[i].buf = malloc(conns[i].cap)))
            die("malloc");
        memset(conns[i].buf, 0, conns[i].cap);
    }

    /* 1. sender and the warm-up cycle */
    struct conn *sender = &conns[n_conns];
    if (!floor_mode)
        sender->fd = connect_socket();
    fcntl(sender->fd, F_SETFL, O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)n_conns};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, sender->fd, &ev) < 0)
        die("epoll_ctl");
    long next_id = 1;
    if (!floor_mode) {
        sender_request(next_id++, "follow", true);
        if (!loop_until(sender_replied, 0))
            return 1;
        sender_request(next_id++, "unfollow", true);
        if (!loop_until(sender_replied, 0))
            return 1;
    }

    /* 2. subscribers */
    uint64_t t_connect = now_ns();
    for (long i = 0; i < n_conns; i++) {
        if (!floor_mode)
            conns[i].fd = connect_socket();
        fcntl(conns[i].fd, F_SETFL, O_NONBLOCK);
        ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = (uint64_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0)
            die("epoll_ctl");
    }
    double connect_ms = (double)(now_ns() - t_connect) / 1e6;
    char sub[512];
    int sub_len = snprintf(sub, sizeof sub,
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscribe\",\"params\":{\"topics\":"
                           "[{\"type\":\"entity\",\"kind\":\"%s\",\"id\":\"%s\"}]}}\n",
                           kind, entity_id);
    uint64_t t_sub = now_ns();
    for (long i = 0; i < n_conns; i++) {
        if (floor_mode)
            conns[i].replied = true; /* nothing to subscribe to */
        else
            write_all(conns[i].fd, sub, (size_t)sub_len);
    }
    if (!loop_until(all_subscribed, 0))
        return 1;
    double subscribe_ms = (double)(now_ns() - t_sub) / 1e6;
    long bad_snapshots = 0;
    for (long i = 0; i < n_conns; i++)
        bad_snapshots += conns[i].bad_snapshot;
    loop_until(NULL, 30000000); /* anything the subscription itself sends */

    /* 3. the measured toggles */
    uint64_t *follow_t = calloc((size_t)iterations, sizeof *follow_t);
    uint64_t *unfollow_t = calloc((size_t)iterations, sizeof *unfollow_t);
    uint64_t *median_conn = calloc((size_t)iterations, sizeof *median_conn);
    uint64_t *per_conn = calloc((size_t)n_conns, sizeof *per_conn);
    long n_follow = 0, n_unfollow = 0, done_iterations = 0;
    uint64_t first = 0;
    for (long it = 0; it < iterations; it++) {
        bool follow = it % 2 == 0;
        for (long i = 0; i < n_conns; i++)
            conns[i].got = false;
        remaining = n_conns;
        want_following = follow;
        uint64_t t0 = now_ns();
        sender_request(next_id++, follow ? "follow" : "unfollow", false);
        bool ok = loop_until(all_got, 0);
        want_following = -1;
        if (!ok) {
            fprintf(stderr, "fanout: iteration %ld: %ld of %ld connections never got following=%d\n",
                    it, remaining, n_conns, follow);
            status = TIMEOUT;
            break;
        }
        uint64_t last = 0;
        for (long i = 0; i < n_conns; i++) {
            per_conn[i] = conns[i].got_at - t0;
            if (per_conn[i] > last)
                last = per_conn[i];
        }
        qsort(per_conn, (size_t)n_conns, sizeof *per_conn, cmp_u64);
        median_conn[it] = per_conn[n_conns / 2];
        if (it == 0)
            first = last;
        if (follow)
            follow_t[n_follow++] = last;
        else
            unfollow_t[n_unfollow++] = last;
        done_iterations++;
        loop_until(NULL, 30000000); /* the confirmation notifications */
    }
    printf("mode=fanout target=%s conns=%ld iterations=%ld connect_ms=%.1f subscribe_ms=%.1f first_ms=%.3f "
           "follow_ms=%.3f unfollow_ms=%.3f median_conn_ms=%.3f notifications=%" PRIu64
           " seq_gaps=%" PRIu64 " stale_versions=%" PRIu64 " bad_snapshots=%ld errors=%" PRIu64
           " status=%s\n",
           floor_mode ? "floor" : "netmodel", n_conns, done_iterations, connect_ms, subscribe_ms, (double)first / 1e6,
           median_ms(follow_t, n_follow), median_ms(unfollow_t, n_unfollow),
           median_ms(median_conn, done_iterations), notifications, seq_gaps, stale_versions,
           bad_snapshots, errors, status == OK ? "ok" : "timeout");
    for (long i = 0; i <= n_conns; i++)
        close(conns[i].fd);
    if (floor_pid > 0)
        waitpid(floor_pid, NULL, 0);
    return status == OK && errors == 0 ? 0 : 1;
}
