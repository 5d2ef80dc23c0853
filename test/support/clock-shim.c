/*
 * An LD_PRELOAD shim that shifts the wall clock of one process, and only the wall clock: clock_gettime() of
 * CLOCK_REALTIME (and CLOCK_REALTIME_COARSE), gettimeofday() and time() return the real time plus an offset in
 * ms (may be negative) read from the file named by $REDLOCK_CLOCK_OFFSET_FILE (a decimal integer; a missing or
 * unreadable file means 0). CLOCK_MONOTONIC and every other clock pass through unchanged.
 *
 * Why our own: libfaketime 0.9.10 resolves the real functions with dlsym, which allocates, which in a
 * jemalloc build of redis-server re-enters the clock during malloc's own start-up and hangs it. This shim
 * calls neither malloc nor dlsym: the clocks are read with raw syscalls (no vDSO: slower, ~0.1 µs, fine for a
 * test), the file with open/read/close syscalls into a stack buffer. It re-reads the file at most once per
 * millisecond of CLOCK_MONOTONIC, so a step written by the test is seen within about a millisecond. Everything
 * it touches is a syscall, the stack, a lock-free atomic or a static buffer written once (the path, before it is
 * published): async-signal-safe and thread-safe.
 *
 * Built by test/support/clock-shim.ts: gcc -shared -fPIC -O2 -o clock-shim.so clock-shim.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ENV_NAME "REDLOCK_CLOCK_OFFSET_FILE"
#define REREAD_NS 1000000LL

extern char **environ;

static long long offset_ns;      /* the current offset, ns (atomic) */
static long long next_read_ns;   /* CLOCK_MONOTONIC ns after which the file is read again (atomic) */
/*
 * The offset file's path, copied out of the environment on first use: redis-server's setproctitle() may write
 * its title over the original environment block later. path_state: 0 not looked up, 1 being copied, 2 ready.
 */
static char offset_path[4096];
static int path_state;

static long raw_clock(clockid_t id, struct timespec *ts) { return syscall(SYS_clock_gettime, id, ts); }

/* The value of ENV_NAME, read from environ directly (getenv is not guaranteed async-signal-safe). */
static const char *find_path(void) {
  static const char name[] = ENV_NAME "=";
  if (!environ) return NULL;
  for (char **e = environ; *e; e++) {
    size_t i = 0;
    while (name[i] && (*e)[i] == name[i]) i++;
    if (!name[i]) return *e + i;
  }
  return NULL;
}

/* Parses "[-]digits" (surrounding whitespace allowed); returns 0 when the text is no number. */
static int parse_ms(const char *text, long n, long long *ms) {
  long i = 0;
  int negative = 0, digits = 0;
  long long value = 0;
  while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) i++;
  if (i < n && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  for (; i < n && text[i] >= '0' && text[i] <= '9'; i++, digits++) value = value * 10 + (text[i] - '0');
  if (!digits) return 0;
  *ms = negative ? -value : value;
  return 1;
}

static void read_offset(void) {
  char buf[64];
  long long ms = 0;
  int fd = (int)syscall(SYS_open, offset_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    __atomic_store_n(&offset_ns, 0, __ATOMIC_RELAXED);
    return;
  }
  long n = syscall(SYS_read, fd, buf, sizeof buf);
  syscall(SYS_close, fd);
  if (n > 0 && parse_ms(buf, n, &ms)) __atomic_store_n(&offset_ns, ms * 1000000LL, __ATOMIC_RELAXED);
}

/* The offset to add to the wall clock now, ns. */
static long long current_offset(void) {
  int state = __atomic_load_n(&path_state, __ATOMIC_ACQUIRE);
  if (state == 0 && __atomic_compare_exchange_n(&path_state, &state, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    const char *found = find_path();
    size_t i = 0;
    for (; found && found[i] && i < sizeof offset_path - 1; i++) offset_path[i] = found[i];
    offset_path[i] = '\0';
    state = 2;
    __atomic_store_n(&path_state, state, __ATOMIC_RELEASE);
  }
  /* No path (no offset), or another thread is copying it right now (the first calls of a process). */
  if (state != 2 || !offset_path[0]) return __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
  struct timespec mono;
  if (raw_clock(CLOCK_MONOTONIC, &mono) == 0) {
    long long now = mono.tv_sec * 1000000000LL + mono.tv_nsec;
    long long due = __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED);
    if (now >= due && __atomic_compare_exchange_n(&next_read_ns, &due, now + REREAD_NS, 0, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED))
      read_offset();
  }
  return __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
}

static void shift(struct timespec *ts, long long ns) {
  long long total = ts->tv_nsec + ns % 1000000000LL;
  ts->tv_sec += ns / 1000000000LL;
  if (total < 0) {
    total += 1000000000LL;
    ts->tv_sec -= 1;
  } else if (total >= 1000000000LL) {
    total -= 1000000000LL;
    ts->tv_sec += 1;
  }
  ts->tv_nsec = total;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long rc = raw_clock(id, ts);
  if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts, current_offset());
  return (int)rc;
}

/* glibc declares `tv` non-null. */
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  struct timespec ts;
  if (tz) {
    /* Nobody should ask for a timezone here any more; the kernel's answer is kept. */
    if (syscall(SYS_gettimeofday, NULL, tz) != 0) return -1;
  }
  if (raw_clock(CLOCK_REALTIME, &ts) != 0) return -1;
  shift(&ts, current_offset());
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (raw_clock(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  shift(&ts, current_offset());
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
