/*
 * entities — memory per entity: pipeline one request per distinct id, then ask
 * the server how many entities it holds and how much memory it uses.
 *
 *   entities --socket PATH [--method follow] [--count 1000000] [--inflight 256]
 *            [--kind artist] [--prefix a] [--max-seconds 120] [--timeout 30] [--pid PID]
 *
 * 1. `stats` → residentMemoryBytes and entities before.
 * 2. --count requests `METHOD {"kind":K,"id":"<prefix><7 digits>"}` (ids
 *    a0000001, a0000002, …), at most --inflight outstanding, replies matched by
 *    id.  `follow` is sent without await: the reply is the optimistic state.
 * 3. Waits until the server settled: `stats` every 100 ms until `outbox` is 0
 *    and `backend.calls` stopped growing (at most --timeout s).
 * 4. `stats` → residentMemoryBytes and entities after.
 *
 * Output, one line: ... rss_before= rss_after= entities_before= entities_after=
 * bytes_per_entity=(rss_after-rss_before)/(entities_after-entities_before)
 * With --pid (the server's), also peak_rss= (VmHWM from /proc, the high-water
 * mark: a hash table that grows holds its old and new storage for a moment) and
 * peak_bytes_per_entity=(peak_rss-rss_before)/(entities_after-entities_before).
 * Newline-delimited JSON only.  Exit status 0 only when every request got a
 * reply without error (status=ok).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "jsonscan.h"

static const char *socket_path, *method = "follow", *kind = "artist", *prefix = "a";
static long count = 1000000, inflight = 256, server_pid = 0;
static double max_seconds = 120, timeout_s = 30;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "entities: %s: %s\n", what, strerror(errno));
    exit(2);
}

static int fd;
static char *in;
static size_t in_len, in_cap;
static char *out;
static size_t out_start, out_len, out_cap;

static void out_reserve(size_t n)
{
    if (out_start > 0 && out_len + n > out_cap) {
        memmove(out, out + out_start, out_len - out_start);
        out_len -= out_start;
        out_start = 0;
    }
    if (out_len + n > out_cap) {
        out_cap = (out_len + n) * 2;
        if (!(out = realloc(out, out_cap)))
            die("realloc");
    }
}

/* The state of the request stream. */
static long sent, replies, errors, inflight_now, mismatches;
static char last_stats[65536]; /* the last `stats` reply (id 0) */
static bool stats_pending;

static void on_line(const char *p, const char *end)
{
    struct js_message msg;
    p = js_skip_ws(p, end);
    if (p >= end)
        return;
    if (*p != '{' || !js_scan_object(p, end, &msg)) {
        fprintf(stderr, "entities: malformed line: %.*s\n", (int)(end - p > 120 ? 120 : end - p), p);
        exit(2);
    }
    if (msg.has_method)
        return; /* a notification: not subscribed, so none are expected */
    if (msg.id_len == 1 && msg.id[0] == '0') { /* stats */
        size_t n = (size_t)(end - p);
        if (n >= sizeof last_stats)
            n = sizeof last_stats - 1;
        memcpy(last_stats, p, n);
        last_stats[n] = 0;
        stats_pending = false;
        return;
    }
    if (!msg.id || msg.id_len == 0 || msg.id[0] < '1' || msg.id[0] > '9') {
        mismatches++;
        return;
    }
    inflight_now--;
    replies++;
    if (msg.has_error && ++errors <= 5)
        fprintf(stderr, "entities: error reply: %.*s\n", (int)(end - p > 200 ? 200 : end - p), p);
}

/* Writes, waits up to wait_ms for input, reads and handles it.  false: EOF/error. */
static bool pump(int wait_ms)
{
    while (out_len > out_start) {
        ssize_t n = write(fd, out + out_start, out_len - out_start);
        if (n > 0)
            out_start += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && errno == EAGAIN)
            break;
        else
            return false;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN | (out_len > out_start ? POLLOUT : 0)};
    int rc = poll(&pfd, 1, wait_ms);
    if (rc <= 0 || !(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
        return rc >= 0 || errno == EINTR;
    if (in_cap - in_len < 65536) {
        in_cap = in_cap ? in_cap * 2 : 262144;
        if (!(in = realloc(in, in_cap)))
            die("realloc");
    }
    ssize_t n = read(fd, in + in_len, in_cap - in_len);
    if (n == 0)
        return false;
    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    in_len += (size_t)n;
    char *start = in, *end = in + in_len, *nl;
    while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
        on_line(start, nl);
        start = nl + 1;
    }
    in_len = (size_t)(end - start);
    memmove(in, start, in_len);
    return true;
}

static int64_t stats_field(const char *quoted_key)
{
    const char *hit = strstr(last_stats, quoted_key);
    if (!hit)
        return -1;
    const char *v = hit + strlen(quoted_key);
    while (*v == ' ' || *v == ':')
        v++;
    return strtoll(v, NULL, 10);
}

/* Sends `stats` and waits for its reply (other replies are handled meanwhile). */
static bool stats(void)
{
    static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"stats\"}\n";
    out_reserve(sizeof req);
    memcpy(out + out_len, req, sizeof req - 1);
    out_len += sizeof req - 1;
    stats_pending = true;
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    while (stats_pending) {
        if (!pump(100) || now_ns() > deadline) {
            fprintf(stderr, "entities: no stats reply\n");
            return false;
        }
    }
    return true;
}

/* VmHWM of `pid` in bytes, or -1. */
static int64_t peak_rss(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int64_t kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtoll(line + 6, NULL, 10);
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

static void usage(void)
{
    fprintf(stderr, "usage: entities --socket PATH [--method M] [--count N] [--inflight N] "
                    "[--kind K] [--prefix P] [--max-seconds S] [--timeout S] [--pid PID]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc % 2 == 0)
        usage(); /* every option takes a value */
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--socket"))
            socket_path = v;
        else if (!strcmp(a, "--method"))
            method = v;
        else if (!strcmp(a, "--count"))
            count = atol(v);
        else if (!strcmp(a, "--inflight"))
            inflight = atol(v);
        else if (!strcmp(a, "--kind"))
            kind = v;
        else if (!strcmp(a, "--prefix"))
            prefix = v;
        else if (!strcmp(a, "--max-seconds"))
            max_seconds = atof(v);
        else if (!strcmp(a, "--timeout"))
            timeout_s = atof(v);
        else if (!strcmp(a, "--pid"))
            server_pid = atol(v);
        else
            usage();
    }
    if (!socket_path || count < 1 || count > 9999999 || inflight < 1)
        usage();

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof addr.sun_path)
        usage();
    strcpy(addr.sun_path, socket_path);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        die("socket");
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect");
    fcntl(fd, F_SETFL, O_NONBLOCK);

    if (!stats())
        return 1;
    int64_t rss_before = stats_field("\"residentMemoryBytes\"");
    int64_t entities_before = stats_field("\"entities\"");

    const char *status = "ok";
    bool truncated = false;
    uint64_t t0 = now_ns(), stop_at = t0 + (uint64_t)(max_seconds * 1e9), last_progress = t0;
    long target = count;
    while (sent < target || inflight_now > 0) {
        while (inflight_now < inflight && sent < target) {
            out_reserve(256);
            long id = ++sent;
            out_len += (size_t)snprintf(out + out_len, 256,
                                        "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":"
                                        "{\"kind\":\"%s\",\"id\":\"%s%07ld\"}}\n",
                                        id, method, kind, prefix, id);
            inflight_now++;
        }
        long before = replies;
        if (!pump(100)) {
            status = "eof";
            break;
        }
        uint64_t now = now_ns();
        if (replies != before)
            last_progress = now;
        else if (now - last_progress > (uint64_t)(timeout_s * 1e9)) {
            status = "timeout";
            break;
        }
        if (sent < target && now > stop_at) {
            target = sent;
            truncated = true;
        }
    }
    double elapsed = (double)(now_ns() - t0) / 1e9;

    /* let the backend settle: outbox empty and no more backend calls */
    uint64_t t_settle = now_ns();
    int64_t last_calls = -1;
    int quiet = 0;
    while (strcmp(status, "ok") == 0 && stats()) {
        int64_t calls = stats_field("\"calls\"");
        int64_t outbox = stats_field("\"outbox\"");
        quiet = (outbox <= 0 && calls == last_calls) ? quiet + 1 : 0;
        last_calls = calls;
        if (quiet >= 2 || now_ns() - t_settle > (uint64_t)(timeout_s * 1e9))
            break;
        usleep(100000);
    }
    double settle_s = (double)(now_ns() - t_settle) / 1e9;
    if (!stats())
        return 1;
    int64_t rss_after = stats_field("\"residentMemoryBytes\"");
    int64_t entities_after = stats_field("\"entities\"");
    int64_t outbox = stats_field("\"outbox\"");
    int64_t d_entities = entities_after - entities_before;
    int64_t peak = server_pid > 0 ? peak_rss(server_pid) : -1;
    if (peak >= 0 && peak < rss_after)
        peak = rss_after; /* the kernel's counters are updated lazily */
    printf("mode=entities method=%s count=%ld inflight=%ld replies=%ld errors=%ld mismatches=%ld "
           "elapsed_s=%.3f rps=%.0f settle_s=%.2f rss_before=%" PRId64 " rss_after=%" PRId64
           " entities_before=%" PRId64 " entities_after=%" PRId64 " outbox=%" PRId64
           " bytes_per_entity=%.1f peak_rss=%" PRId64 " peak_bytes_per_entity=%.1f truncated=%d"
           " status=%s\n",
           method, sent, inflight, replies, errors, mismatches, elapsed,
           elapsed > 0 ? (double)replies / elapsed : 0, settle_s, rss_before, rss_after,
           entities_before, entities_after, outbox,
           d_entities > 0 ? (double)(rss_after - rss_before) / (double)d_entities : 0.0, peak,
           d_entities > 0 && peak >= 0 ? (double)(peak - rss_before) / (double)d_entities : 0.0,
           truncated, status);
    close(fd);
    return strcmp(status, "ok") == 0 && errors == 0 && mismatches == 0 ? 0 : 1;
}
