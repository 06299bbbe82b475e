#ifndef NETMODEL_CSYSTEM_SHIM_H
#define NETMODEL_CSYSTEM_SHIM_H
// System calls that Glibc's Swift overlay does not give us cleanly: epoll, eventfd,
// signalfd, peer credentials, accept4. Everything is wrapped in small inline
// functions so no variadic or _GNU_SOURCE-only declaration reaches Swift.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static inline int nm_errno(void) { return errno; }

// Likewise pthread_setname_np; pthread_t is an unsigned long on glibc.
extern int pthread_setname_np(unsigned long thread, const char *name);
static inline int nm_thread_setname(unsigned long thread, const char *name) {
  return pthread_setname_np(thread, name);
}

static inline int nm_set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return -1;
  return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// accept4 is declared only under _GNU_SOURCE, which a system module cannot set for
// the headers Glibc already imported.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int nm_accept(int fd) {
  return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

// struct ucred is hidden behind _GNU_SOURCE too; its layout is fixed by the kernel.
struct nm_ucred { int pid; unsigned int uid; unsigned int gid; };
static inline int nm_peer_uid(int fd, unsigned int *uid) {
  struct nm_ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, 17 /* SO_PEERCRED */, &cred, &len) != 0) return -1;
  *uid = cred.uid;
  return 0;
}

static inline int nm_unix_socket(void) {
  return socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

// Returns -2 when the path does not fit in sun_path.
static inline int nm_unix_bind(int fd, const char *path) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(addr.sun_path)) { errno = ENAMETOOLONG; return -1; }
  strcpy(addr.sun_path, path);
  return bind(fd, (struct sockaddr *)&addr, sizeof(addr));
}

static inline int nm_unix_connect(int fd, const char *path) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(addr.sun_path)) { errno = ENAMETOOLONG; return -1; }
  strcpy(addr.sun_path, path);
  return connect(fd, (struct sockaddr *)&addr, sizeof(addr));
}

static inline int nm_socketpair(int fds[2]) {
  return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds);
}

// 1: pipe or socket (pollable, may block), 2: regular file (never blocks, not
// pollable), 3: character device such as a tty or /dev/null, 0: other, -1: error.
static inline int nm_fd_kind(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return 1;
  if (S_ISREG(st.st_mode)) return 2;
  if (S_ISCHR(st.st_mode)) return 3;
  return 0;
}

static inline int nm_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int nm_epoll_ctl(int epfd, int op, int fd, unsigned int events, unsigned long long token) {
  struct epoll_event ev;
  ev.events = events;
  ev.data.u64 = token;
  return epoll_ctl(epfd, op, fd, &ev);
}

// Fills parallel arrays so Swift never touches the packed epoll_event struct.
static inline int nm_epoll_wait(int epfd, unsigned int *events, unsigned long long *tokens, int max, int timeout_ms) {
  struct epoll_event evs[256];
  if (max > 256) max = 256;
  int n = epoll_wait(epfd, evs, max, timeout_ms);
  for (int i = 0; i < n; i++) { events[i] = evs[i].events; tokens[i] = evs[i].data.u64; }
  return n;
}

static inline int nm_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

// Blocks the signals in the mask for normal delivery and returns an fd that reports them.
static inline int nm_signalfd(const int *signals, int count) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int i = 0; i < count; i++) sigaddset(&mask, signals[i]);
  if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) return -1;
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

// Returns the signal number read, 0 when none is waiting, -1 on error.
static inline int nm_signalfd_read(int fd) {
  struct signalfd_siginfo info;
  ssize_t n = read(fd, &info, sizeof(info));
  if (n == (ssize_t)sizeof(info)) return (int)info.ssi_signo;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  return -1;
}

static inline void nm_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

static inline unsigned long long nm_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static const unsigned int NM_EPOLLIN = EPOLLIN;
static const unsigned int NM_EPOLLOUT = EPOLLOUT;
static const unsigned int NM_EPOLLERR = EPOLLERR;
static const unsigned int NM_EPOLLHUP = EPOLLHUP;
static const unsigned int NM_EPOLLRDHUP = EPOLLRDHUP;
// Gives freed heap pages back to the system after a large eviction (glibc keeps them).
#include <malloc.h>
static inline void nm_malloc_trim(void) { (void)malloc_trim(0); }

// The terminal cells a code point takes (wcwidth), in glibc's built-in C.UTF-8 locale
// whatever the process's own: -1 for a non-printing one, -2 when that locale is missing.
#include <locale.h>
#include <wchar.h>
static inline int nm_cell_width(unsigned int scalar) {
  static locale_t utf8 = (locale_t)0;
  if (utf8 == (locale_t)0) utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (utf8 == (locale_t)0) return -2;
  locale_t previous = uselocale(utf8);
  int width = wcwidth((wchar_t)scalar);
  uselocale(previous);
  return width;
}

#endif
