/*
 * spawntime — how long whole short-lived processes take, spawn to exit: the
 * per-call cost of a script that runs `netmodel call …` once a line, against
 * socat sending the same request (bench/start.sh).
 *
 *   spawntime [--runs N] [--stdin FILE] [--expect TEXT] LABEL=COMMAND...
 *
 * Each round runs every COMMAND once, in the order given, so a burst of
 * background load spreads over all of them; --runs rounds (default 9).  A
 * COMMAND is split on spaces (no shell, no quoting) and executed with
 * posix_spawnp; its stdin is FILE (opened anew each run; default /dev/null),
 * its stdout a pipe read to the end, its stderr inherited.  The time runs from
 * just before posix_spawnp to waitpid's return.  A run fails when the process
 * exits other than 0 or its output lacks TEXT; failed runs are left out of the
 * figures and counted in failures=.
 *
 * Output: one line per COMMAND, e.g.
 *   target=socat runs=9 median_ms=6.10 min_ms=5.02 max_ms=9.33 failures=0
 * The exit status is 0 only when no run failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct target {
    const char *label;
    char **argv;
    uint64_t *times;
    long count, failures;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "spawntime: %s: %s\n", what, strerror(errno));
    exit(2);
}

static char **split_command(char *cmd)
{
    size_t cap = 8, n = 0;
    char **argv = malloc(cap * sizeof *argv);
    if (!argv)
        die("malloc");
    for (char *tok = strtok(cmd, " \t"); tok; tok = strtok(NULL, " \t")) {
        if (n + 2 > cap && !(argv = realloc(argv, (cap *= 2) * sizeof *argv)))
            die("realloc");
        argv[n++] = tok;
    }
    argv[n] = NULL;
    return argv;
}

/* One run: spawn → exit in ns, or 0 when it failed. */
static uint64_t run_once(char **argv, const char *stdin_path, const char *expect)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        die("pipe2");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, stdin_path, O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    pid_t pid;
    uint64_t t0 = now_ns();
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
        errno = rc;
        die(argv[0]);
    }
    static char output[1 << 16];
    size_t length = 0;
    for (;;) {
        ssize_t n = read(out[0], output + length, sizeof output - 1 - length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        length += (size_t)n;
        if (length == sizeof output - 1)
            length = 0; /* only the tail is searched; enough for one reply */
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    uint64_t elapsed = now_ns() - t0;
    close(out[0]);
    output[length] = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "spawntime: %s: exit status %d\n", argv[0], status);
        return 0;
    }
    if (expect && !strstr(output, expect)) {
        fprintf(stderr, "spawntime: %s: output lacks %s: %.200s\n", argv[0], expect, output);
        return 0;
    }
    return elapsed ? elapsed : 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: spawntime [--runs N] [--stdin FILE] [--expect TEXT] LABEL=COMMAND...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long runs = 9;
    const char *stdin_path = "/dev/null", *expect = NULL;
    struct target targets[16];
    int ntargets = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atol(argv[++i]);
        else if (!strcmp(argv[i], "--stdin") && i + 1 < argc)
            stdin_path = argv[++i];
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = argv[++i];
        else if (argv[i][0] != '-' && strchr(argv[i], '=') && ntargets < 16) {
            char *eq = strchr(argv[i], '=');
            *eq = 0;
            targets[ntargets].label = argv[i];
            targets[ntargets].argv = split_command(eq + 1);
            if (!targets[ntargets].argv[0])
                usage();
            ntargets++;
        } else
            usage();
    }
    if (runs < 1 || ntargets == 0)
        usage();
    for (int t = 0; t < ntargets; t++) {
        targets[t].times = calloc((size_t)runs, sizeof(uint64_t));
        targets[t].count = targets[t].failures = 0;
        if (!targets[t].times)
            die("calloc");
    }
    for (long round = 0; round < runs; round++)
        for (int t = 0; t < ntargets; t++) {
            uint64_t elapsed = run_once(targets[t].argv, stdin_path, expect);
            if (elapsed)
                targets[t].times[targets[t].count++] = elapsed;
            else
                targets[t].failures++;
        }
    int status = 0;
    for (int t = 0; t < ntargets; t++) {
        struct target *x = &targets[t];
        qsort(x->times, (size_t)x->count, sizeof *x->times, cmp_u64);
        double median = x->count ? (double)x->times[(x->count - 1) / 2] / 1e6 : 0;
        printf("target=%s runs=%ld median_ms=%.2f min_ms=%.2f max_ms=%.2f failures=%ld\n", x->label, x->count,
               median, x->count ? (double)x->times[0] / 1e6 : 0, x->count ? (double)x->times[x->count - 1] / 1e6 : 0,
               x->failures);
        if (x->failures)
            status = 1;
    }
    return status;
}
