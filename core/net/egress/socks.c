/* SOCKS5 CONNECT (socks.h). SPDX-License-Identifier: Apache-2.0 */
#include "socks.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int io(int fd, void *b, size_t n, int wr, long end) {
  size_t at = 0;
  while (at < n) {
    long left = end - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {fd, wr ? POLLOUT : POLLIN, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    ssize_t k =
        wr ? send(fd, (char *)b + at, n - at, MSG_NOSIGNAL) : recv(fd, (char *)b + at, n - at, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return -1;
    at += (size_t)k;
  }
  return 0;
}

int socks_connect(int fd, const char *user, const char *pass, const char *name, int family,
                  const uint8_t *dst, uint16_t port, int timeout_ms) {
  long end = now_ms() + timeout_ms;
  int auth = user && pass;
  size_t ul = auth ? strlen(user) : 0, pl = auth ? strlen(pass) : 0;
  if (ul > 255 || pl > 255) return -1;
  uint8_t b[600];
  b[0] = 5;
  b[1] = 1;
  b[2] = auth ? 2 : 0;
  if (io(fd, b, 3, 1, end) || io(fd, b, 2, 0, end)) return -1;
  if (b[0] != 5 || b[1] != (auth ? 2 : 0)) return -1;
  if (auth) {
    size_t n = 0;
    b[n++] = 1;
    b[n++] = (uint8_t)ul;
    memcpy(b + n, user, ul);
    n += ul;
    b[n++] = (uint8_t)pl;
    memcpy(b + n, pass, pl);
    n += pl;
    int bad = io(fd, b, n, 1, end);
    memset(b, 0, n); /* the password leaves no copy behind */
    if (bad || io(fd, b, 2, 0, end) || b[0] != 1 || b[1] != 0) return -1;
  }
  size_t n = 0;
  b[n++] = 5;
  b[n++] = 1; /* CONNECT */
  b[n++] = 0;
  if (name && name[0]) {
    size_t nl = strlen(name);
    if (nl > 255) return -1;
    b[n++] = 3;
    b[n++] = (uint8_t)nl;
    memcpy(b + n, name, nl);
    n += nl;
  } else if (family == AF_INET) {
    b[n++] = 1;
    memcpy(b + n, dst, 4);
    n += 4;
  } else {
    b[n++] = 4;
    memcpy(b + n, dst, 16);
    n += 16;
  }
  b[n++] = (uint8_t)(port >> 8);
  b[n++] = (uint8_t)port;
  if (io(fd, b, n, 1, end) || io(fd, b, 4, 0, end)) return -1;
  if (b[0] != 5 || b[1] != 0 || b[2] != 0) return -1;
  size_t rest;
  if (b[3] == 1)
    rest = 4 + 2;
  else if (b[3] == 4)
    rest = 16 + 2;
  else if (b[3] == 3) {
    if (io(fd, b, 1, 0, end)) return -1;
    rest = (size_t)b[0] + 2;
  } else
    return -1;
  return io(fd, b, rest, 0, end);
}
