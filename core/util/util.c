/* SPDX-License-Identifier: Apache-2.0 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

char *asbi_strdup(const char *s) {
  return s ? strdup(s) : NULL;
}

char *asbi_strndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

static int lower(int c) {
  return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

int asbi_strcaseeq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  while (*a && *b) {
    if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
    a++;
    b++;
  }
  return *a == *b;
}

int asbi_startswith(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

int asbi_empty(const char *s) {
  return !s || !*s;
}

const char *asbi_getenv(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

int asbi_parse_bool(const char *s, int dflt) {
  if (!s) return dflt;
  static const char *t[] = {"1", "true", "yes", "on"};
  static const char *f[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (asbi_strcaseeq(s, t[i])) return 1;
    if (asbi_strcaseeq(s, f[i])) return 0;
  }
  return dflt;
}

int asbi_parse_i64(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (n == 0) return -1;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
    if (n == 1) return -1;
  }
  uint64_t v = 0;
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (limit - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (neg)
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  else
    *out = (int64_t)v;
  return 0;
}

int asbi_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  const uint64_t hi = 0x8080808080808080ull;
  size_t i = 0;
  /* Sixteen bytes at a time: a block without a top bit set is ASCII and
   * skipped whole; any other is walked byte by byte (its last sequence may
   * run past the block, never past n). */
  while (n - i >= 16) {
    uint64_t a, b;
    memcpy(&a, s + i, 8);
    memcpy(&b, s + i + 8, 8);
    if (!((a | b) & hi)) {
      i += 16;
      continue;
    }
    size_t end = i + 16;
    do {
      if (s[i] < 0x80) {
        i++;
      } else {
        size_t k = asbi_utf8_seq(s + i, n - i);
        if (!k) return 0;
        i += k;
      }
    } while (i < end);
  }
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = asbi_utf8_seq(s + i, n - i);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

uint64_t asbi_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t asbi_now_ms(void) {
  return asbi_now_us() / 1000u;
}

void asbi_rfc3339(int64_t sec, long nsec, char out[40]) {
  struct tm tm;
  time_t t = (time_t)sec;
  gmtime_r(&t, &tm);
  size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
  if (nsec > 0)
    snprintf(out + n, 40 - n, ".%09ldZ", nsec);
  else
    snprintf(out + n, 40 - n, "Z");
}

int64_t asbi_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void asbi_rfc3339_ms(int64_t ms, char out[40]) {
  asbi_rfc3339(ms / 1000, (long)(ms % 1000) * 1000000L, out);
}

void asbi_rfc3339_now(char out[40]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  asbi_rfc3339(ts.tv_sec, ts.tv_nsec, out);
}

int asbi_random_bytes(void *out, size_t n) {
  unsigned char *p = out;
  while (n) {
    ssize_t r = getrandom(p, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int asbi_random_hex(char *out, size_t n) {
  static const char hex[] = "0123456789abcdef";
  unsigned char b[64];
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done > sizeof b * 2 ? sizeof b * 2 : n - done;
    if (asbi_random_bytes(b, (chunk + 1) / 2) != 0) return -1;
    for (size_t i = 0; i < chunk; i++) out[done + i] = hex[(b[i / 2] >> ((i & 1) ? 0 : 4)) & 15];
    done += chunk;
  }
  out[n] = '\0';
  return 0;
}

int asbi_random_alnum(char *out, size_t n) {
  static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  size_t i = 0;
  unsigned char b[64];
  while (i < n) {
    if (asbi_random_bytes(b, sizeof b) != 0) return -1;
    for (size_t j = 0; j < sizeof b && i < n; j++)
      if (b[j] < 252) out[i++] = al[b[j] % 36]; /* 252 = 7*36: unbiased */
  }
  out[n] = '\0';
  return 0;
}

int asbi_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

struct timespec asbi_deadline(clockid_t clock, int64_t ms) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

int asbi_openat2(int dirfd, const char *path, int flags, unsigned mode, uint64_t resolve) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  for (int i = 0;; i++) {
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN || i == 10000) return (int)fd;
  }
}
