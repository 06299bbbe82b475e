/*
 * curlmulti — the floor for netmodel's REST backend: HTTP round trips per
 * second through a bare libcurl multi loop, with nothing else in the process.
 *
 *   curlmulti --url http://127.0.0.1:PORT/v1/me [--requests N] [--in-flight K]
 *             [--method GET|PUT|POST|DELETE] [--work-us U [--worker]]
 *
 * It drives libcurl the way netmodel does, so that the ratio between the two
 * is netmodel's own cost and not a difference in how curl is used:
 *   - its own epoll loop; libcurl reports the sockets it wants watched through
 *     CURLMOPT_SOCKETFUNCTION and the timeout it wants through
 *     CURLMOPT_TIMERFUNCTION, and the loop calls curl_multi_socket_action for
 *     each ready socket and for each expired timeout (no curl_multi_perform,
 *     no curl_multi_poll).  The timeout is a deadline that bounds epoll_wait,
 *     in milliseconds, as netmodel's EventLoop does with its timer heap;
 *   - K easy handles made once and reused: a finished handle is removed from
 *     the multi, gets the next URL and is added again;
 *   - keep-alive, with CURLMOPT_MAX_TOTAL_CONNECTIONS, MAX_HOST_CONNECTIONS and
 *     MAXCONNECTS all K, so at most K connections exist and none is dropped
 *     from the cache;
 *   - CURLOPT_NOSIGNAL=1, HTTP/1.1.
 *
 * Request n (0-based) goes to URL/follow/artist/<n>.  Every response must be
 * 200 with the body {"id":"<n>","following":true} (what bench/httpserver.c
 * answers); anything else is an error, the first few are printed on stderr, and
 * the exit status is 1.
 *
 * --work-us U spends U µs of CPU on each answer before its handle goes out
 * again: a stand-in for what netmodel's models do with an answer, to measure
 * what a design would give before building it (bench/README, "2026-12-04:
 * libcurl on its own thread").  By default the work runs on the loop's thread, in turn with
 * libcurl's, as netmodel's one thread does; with --worker it runs on a second
 * thread, which hands each handle back through an eventfd the loop watches:
 * libcurl on its own thread, the models on theirs.
 *
 * Output, one JSON line on stdout:
 *   {"requests":N,"in_flight":K,"seconds":S,"per_second":R,"connections":C}
 * seconds runs from adding the first transfer to the last completion, so it
 * includes opening the connections; C is CURLINFO_NUM_CONNECTS summed over all
 * transfers, i.e. the connections libcurl opened.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <time.h>

enum {
    MAX_EVENTS = 64,
    BODY_CAP = 256, /* bytes of a response body kept for the check */
    MAX_REPORTED_ERRORS = 5,
};

/* One reusable transfer: an easy handle and what its current response brought. */
struct xfer {
    CURL *easy;
    long n; /* the request number, which is also the id in its URL */
    char body[BODY_CAP];
    size_t body_len; /* may exceed BODY_CAP: then the body is too long anyway */
    char error[CURL_ERROR_SIZE];
};

static struct {
    const char *url;
    long requests, in_flight;
    const char *method;
    long work_us;
    bool worker;
} opt = {.requests = 10000, .in_flight = 16, .method = "GET"};

static CURLM *multi;
static int epoll_fd = -1;
static bool deadline_set; /* libcurl asked to be called back at `deadline_ns` */
static uint64_t deadline_ns;
static long started, completed, errors, connections;
static char *url_buf; /* base URL + "/follow/artist/" + id, rewritten per request */
static size_t url_prefix_len;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "curlmulti: %s: %s\n", what, detail);
    exit(2);
}

/* ---- libcurl's callbacks ------------------------------------------------------ */

/*
 * libcurl tells us which socket to watch for what.  The socket's "assigned"
 * pointer (curl_multi_assign) marks that it is already in the epoll set, so
 * we know whether to ADD or MOD without a table of our own.
 */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    (void)userp;
    if (what == CURL_POLL_REMOVE) {
        /* libcurl calls this before it closes the socket; ENOENT/EBADF are harmless */
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s, NULL);
        curl_multi_assign(multi, s, NULL);
        return 0;
    }
    struct epoll_event ev = {
        .events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
        .data.fd = s,
    };
    if (epoll_ctl(epoll_fd, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev) < 0)
        fail("epoll_ctl", strerror(errno));
    if (!socketp)
        curl_multi_assign(multi, s, (void *)1);
    return 0;
}

/*
 * libcurl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT) after timeout_ms
 * (-1: never).  It must not be called from inside this callback, so we only
 * note the deadline; 0 means "on the next turn of the loop".
 */
static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    (void)userp;
    deadline_set = timeout_ms >= 0;
    if (deadline_set)
        deadline_ns = now_ns() + (uint64_t)timeout_ms * 1000000u;
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    struct xfer *x = userp;
    size_t n = size * nmemb;
    if (x->body_len < BODY_CAP)
        memcpy(x->body + x->body_len, data, n < BODY_CAP - x->body_len ? n : BODY_CAP - x->body_len);
    x->body_len += n;
    return n;
}

/* ---- the stand-in for the models' work (--work-us) ------------------------------ */

static void spend_work(void)
{
    uint64_t until = now_ns() + (uint64_t)opt.work_us * 1000u;
    while (now_ns() < until) {
    }
}

/* A queue of handles between the two threads: a ring as large as the pool. */
struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct xfer **ring;
    long head, count;
};

static struct handoff to_worker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};
static struct handoff to_loop = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};
static int back_fd = -1; /* the worker's eventfd: handles are waiting in to_loop */

/* true when the queue was empty: the other side may be asleep. */
static bool push(struct handoff *q, struct xfer *x)
{
    pthread_mutex_lock(&q->lock);
    q->ring[(q->head + q->count) % opt.in_flight] = x;
    bool was_empty = q->count++ == 0;
    pthread_cond_signal(&q->ready);
    pthread_mutex_unlock(&q->lock);
    return was_empty;
}

/* ---- transfers ---------------------------------------------------------------- */

static void setup_easy(struct xfer *x)
{
    CURL *e = curl_easy_init();
    if (!e)
        fail("curl_easy_init", "failed");
    x->easy = e;
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for DNS timeouts: we own the process */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L); /* the default since 7.50.2; stated, not assumed */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->error);
    /* The method is the same for every request, so it is set once.  No body:
     * POST sends "Content-Length: 0", PUT and DELETE send no length at all. */
    if (strcmp(opt.method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    } else if (strcmp(opt.method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, opt.method);
    }
}

/* Points x at the next request and hands it to the multi. */
static void start_next(struct xfer *x)
{
    x->n = started++;
    x->body_len = 0;
    x->error[0] = '\0';
    snprintf(url_buf + url_prefix_len, 24, "%ld", x->n);
    curl_easy_setopt(x->easy, CURLOPT_URL, url_buf); /* libcurl copies it */
    CURLMcode rc = curl_multi_add_handle(multi, x->easy);
    if (rc != CURLM_OK)
        fail("curl_multi_add_handle", curl_multi_strerror(rc));
}

static void report_error(const struct xfer *x, const char *what)
{
    if (++errors <= MAX_REPORTED_ERRORS)
        fprintf(stderr, "curlmulti: request %ld: %s\n", x->n, what);
}

/* Checks a finished transfer: status 200 and exactly the expected body. */
static void check(struct xfer *x, CURLcode result)
{
    if (result != CURLE_OK) {
        report_error(x, x->error[0] ? x->error : curl_easy_strerror(result));
        return;
    }
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    char expected[64];
    int len = snprintf(expected, sizeof expected, "{\"id\":\"%ld\",\"following\":true}", x->n);
    if (status != 200) {
        char text[32];
        snprintf(text, sizeof text, "status %ld", status);
        report_error(x, text);
    } else if (x->body_len != (size_t)len || memcmp(x->body, expected, (size_t)len) != 0) {
        char text[BODY_CAP + 32];
        snprintf(text, sizeof text, "unexpected body (%zu bytes): %.*s", x->body_len,
                 (int)(x->body_len < BODY_CAP ? x->body_len : BODY_CAP), x->body);
        report_error(x, text);
    }
}

/* Collects finished transfers and reuses each handle for the next request. */
static void drain_completions(void)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode result = msg->data.result; /* read before remove_handle frees msg */
        struct xfer *x;
        long opened = 0;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &opened);
        connections += opened;
        check(x, result);
        curl_multi_remove_handle(multi, e);
        completed++;
        if (opt.worker) {
            push(&to_worker, x);
            continue;
        }
        if (opt.work_us)
            spend_work();
        if (started < opt.requests)
            start_next(x);
    }
}

/* ---- the worker's thread (--worker) ------------------------------------------- */

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&to_worker.lock);
        while (to_worker.count == 0)
            pthread_cond_wait(&to_worker.ready, &to_worker.lock);
        struct xfer *x = to_worker.ring[to_worker.head];
        to_worker.head = (to_worker.head + 1) % opt.in_flight;
        to_worker.count--;
        pthread_mutex_unlock(&to_worker.lock);
        spend_work();
        if (push(&to_loop, x)) {
            uint64_t one = 1;
            if (write(back_fd, &one, sizeof one) < 0)
                fail("write eventfd", strerror(errno));
        }
    }
    return NULL;
}

/* On the loop: the handles the worker is done with go out again. */
static void take_back(void)
{
    uint64_t value;
    if (read(back_fd, &value, sizeof value) < 0 && errno != EAGAIN)
        fail("read eventfd", strerror(errno));
    pthread_mutex_lock(&to_loop.lock);
    while (to_loop.count > 0) {
        struct xfer *x = to_loop.ring[to_loop.head];
        to_loop.head = (to_loop.head + 1) % opt.in_flight;
        to_loop.count--;
        if (started < opt.requests)
            start_next(x);
    }
    pthread_mutex_unlock(&to_loop.lock);
}

/* ---- main ------------------------------------------------------------------------ */

static long parse_count(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1)
        fail(what, "expects a positive integer");
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: curlmulti --url URL [--requests N] [--in-flight K] "
                    "[--method GET|PUT|POST|DELETE] [--work-us U [--worker]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--worker") == 0) {
            opt.worker = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        if (strcmp(arg, "--url") == 0)
            opt.url = argv[++i];
        else if (strcmp(arg, "--requests") == 0)
            opt.requests = parse_count(argv[++i], "--requests");
        else if (strcmp(arg, "--in-flight") == 0)
            opt.in_flight = parse_count(argv[++i], "--in-flight");
        else if (strcmp(arg, "--method") == 0)
            opt.method = argv[++i];
        else if (strcmp(arg, "--work-us") == 0)
            opt.work_us = parse_count(argv[++i], "--work-us");
        else
            usage();
    }
    if (!opt.url)
        usage();
    if (strcmp(opt.method, "GET") && strcmp(opt.method, "PUT") && strcmp(opt.method, "POST") &&
        strcmp(opt.method, "DELETE"))
        usage();
    if (opt.in_flight > opt.requests)
        opt.in_flight = opt.requests;
    if (opt.worker && !opt.work_us)
        usage();

    size_t base_len = strlen(opt.url);
    while (base_len > 0 && opt.url[base_len - 1] == '/')
        base_len--;
    static const char suffix[] = "/follow/artist/";
    url_prefix_len = base_len + sizeof suffix - 1;
    url_buf = malloc(url_prefix_len + 24);
    if (!url_buf)
        fail("malloc", strerror(errno));
    memcpy(url_buf, opt.url, base_len);
    memcpy(url_buf + base_len, suffix, sizeof suffix - 1);

    /* Once, before anything else and before any thread could exist. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        fail("curl_global_init", "failed");
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        fail("epoll_create1", strerror(errno));
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, opt.in_flight);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, opt.in_flight);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, opt.in_flight);

    struct xfer *pool = calloc((size_t)opt.in_flight, sizeof *pool);
    if (!pool)
        fail("calloc", strerror(errno));
    for (long i = 0; i < opt.in_flight; i++)
        setup_easy(&pool[i]);

    uint64_t t0 = now_ns();
    for (long i = 0; i < opt.in_flight; i++)
        start_next(&pool[i]); /* each add sets a 0 ms timeout: the loop starts them */

    if (opt.worker) {
        to_worker.ring = calloc((size_t)opt.in_flight, sizeof *to_worker.ring);
        to_loop.ring = calloc((size_t)opt.in_flight, sizeof *to_loop.ring);
        back_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (!to_worker.ring || !to_loop.ring || back_fd < 0)
            fail("worker set-up", strerror(errno));
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = back_fd};
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, back_fd, &ev) < 0)
            fail("epoll_ctl eventfd", strerror(errno));
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker_main, NULL) != 0)
            fail("pthread_create", "failed");
        pthread_detach(thread);
    }

    struct epoll_event events[MAX_EVENTS];
    int running = 0;
    while (completed < opt.requests) {
        int timeout_ms = -1;
        if (deadline_set) {
            uint64_t now = now_ns();
            /* round up, so libcurl is never called before its deadline */
            timeout_ms = deadline_ns <= now ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
        }
        int n = epoll_wait(epoll_fd, events, MAX_EVENTS, timeout_ms);
        if (n < 0 && errno != EINTR)
            fail("epoll_wait", strerror(errno));
        for (int i = 0; i < n; i++) {
            if (events[i].data.fd == back_fd) {
                take_back();
                continue;
            }
            uint32_t ev = events[i].events;
            int flags = ((ev & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((ev & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((ev & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(multi, events[i].data.fd, flags, &running);
        }
        if (deadline_set && now_ns() >= deadline_ns) {
            deadline_set = false; /* the callback may set a new one during the call */
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        drain_completions();
    }
    double seconds = (double)(now_ns() - t0) / 1e9;

    printf("{\"requests\":%ld,\"in_flight\":%ld,\"seconds\":%.6f,\"per_second\":%.0f,\"connections\":%ld}\n",
           opt.requests, opt.in_flight, seconds, (double)opt.requests / seconds, connections);
    fflush(stdout);
    if (errors)
        fprintf(stderr, "curlmulti: %ld of %ld requests failed\n", errors, opt.requests);

    for (long i = 0; i < opt.in_flight; i++)
        curl_easy_cleanup(pool[i].easy); /* none is in the multi any more */
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    free(pool);
    free(url_buf);
    return errors ? 1 : 0;
}
