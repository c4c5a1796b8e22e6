/* Small shared helpers: strings, numbers, time, randomness. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_UTIL_H
#define ASB_UTIL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ASBI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ASBI_UNUSED(x) (void)(x)
/* A macro's value as a string literal: ASBI_STRINGIFY(ASBI_ENGINE_PORT) -> "49982". */
#define ASBI_STRINGIFY_(x) #x
#define ASBI_STRINGIFY(x) ASBI_STRINGIFY_(x)

/* strdup that accepts NULL (returns NULL). */
char *asbi_strdup(const char *s);
/* Formats a message into err (errlen bytes; nothing when err is NULL or
 * errlen 0) and returns -1: the "fail with a reason" of parsers and
 * checkers that report into a caller's buffer. */
int asbi_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *asbi_strndup(const char *s, size_t n);
/* ASCII case-insensitive equality of NUL-terminated strings. */
int asbi_strcaseeq(const char *a, const char *b);
/* 1 if s starts with prefix. */
int asbi_startswith(const char *s, const char *prefix);
/* 1 if s is NULL or "". */
int asbi_empty(const char *s);
/* getenv that treats "" as unset. */
const char *asbi_getenv(const char *name);
/* "1", "true", "yes", "on" (any case) → 1; "0", "false", "no", "off" → 0;
 * anything else → dflt. */
int asbi_parse_bool(const char *s, int dflt);
/* Parse a whole decimal int64 (optional sign, no spaces). 0 or -1. */
int asbi_parse_i64(const char *s, size_t n, int64_t *out);
/* 1 if the n bytes are valid UTF-8 (no overlongs, no surrogates). */
int asbi_utf8_valid(const char *s, size_t n);
/* Length (2 to 4) of the well-formed multi-byte UTF-8 sequence that starts
 * at s, whose first byte is >= 0x80, with avail bytes readable; 0 if it is
 * not one (The Unicode Standard, Table 3-7). For scanners that handle ASCII
 * themselves. */
static inline size_t asbi_utf8_seq(const unsigned char *s, size_t avail) {
  unsigned c = s[0], lo = 0x80, hi = 0xBF;
  size_t k;
  if (c < 0xC2) return 0; /* a continuation byte, or an overlong C0/C1 */
  if (c < 0xE0) {
    k = 2;
  } else if (c < 0xF0) {
    k = 3;
    if (c == 0xE0)
      lo = 0xA0; /* overlong */
    else if (c == 0xED)
      hi = 0x9F; /* surrogates */
  } else if (c < 0xF5) {
    k = 4;
    if (c == 0xF0)
      lo = 0x90; /* overlong */
    else if (c == 0xF4)
      hi = 0x8F; /* beyond U+10FFFF */
  } else {
    return 0;
  }
  if (avail < k || s[1] < lo || s[1] > hi) return 0;
  if (k > 2 && (s[2] & 0xC0) != 0x80) return 0;
  if (k > 3 && (s[3] & 0xC0) != 0x80) return 0;
  return k;
}

/* Monotonic clock. */
uint64_t asbi_now_us(void);
/* The time ms milliseconds from now on clock (CLOCK_MONOTONIC for a
 * condition variable set to it, CLOCK_REALTIME otherwise): the absolute
 * deadline pthread_cond_timedwait and friends take. */
struct timespec asbi_deadline(clockid_t clock, int64_t ms);

/* openat2(2) with `flags`, `mode` and `resolve` (RESOLVE_*), O_CLOEXEC
 * added. With RESOLVE_IN_ROOT or RESOLVE_BENEATH the kernel fails a walk
 * with EAGAIN when any rename or mount happened on the host meanwhile (its
 * ".." checks cannot tell a race from an escape); on a busy host that is
 * common, and the man page's answer is to retry: this does, a bounded
 * number of times. The fd, or -1 with errno. */
int asbi_openat2(int dirfd, const char *path, int flags, unsigned mode, uint64_t resolve);
uint64_t asbi_now_ms(void);
/* Wall clock as RFC 3339 with nanoseconds, UTC ("2026-01-02T03:04:05.123456789Z").
 * out needs 40 bytes. */
void asbi_rfc3339_now(char out[40]);
void asbi_rfc3339(int64_t sec, long nsec, char out[40]);
/* Wall clock in Unix milliseconds, and such a time as RFC 3339 (UTC, the
 * milliseconds as nanoseconds; out needs 40 bytes): E2B's times. */
int64_t asbi_unix_ms(void);
void asbi_rfc3339_ms(int64_t ms, char out[40]);

/* Cryptographically random bytes (getrandom). 0 or -1. */
int asbi_random_bytes(void *out, size_t n);
/* n random lowercase hex characters + NUL into out (size n+1). 0 or -1. */
int asbi_random_hex(char *out, size_t n);
/* n random characters from [a-z0-9] + NUL. 0 or -1. */
int asbi_random_alnum(char *out, size_t n);

#endif
