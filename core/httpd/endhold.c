/* See endhold.h: sends of a streamed response held back and joined with
 * the next one in one sendmsg(). Hand-written because libmicrohttpd
 * 0.9.75 (Debian 12's) has no way to send a response's head with its
 * first chunk or a content reader's last data with the end of the body,
 * and corking does not help: the hop into the router is a unix socket (no
 * TCP_CORK there) and libmicrohttpd pushes every piece it sends.
 * SPDX-License-Identifier: Apache-2.0 */
#include "endhold.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static _Thread_local int t_fd = -1;
static _Thread_local int t_armed;         /* the next send on t_fd is held */
static _Thread_local size_t t_len, t_off; /* held: t_data[t_off, t_len) */
static _Thread_local char t_data[ASBI_ENDHOLD_MAX];

int asbi_endhold_chunked(const char *version) {
  return version && strcmp(version, "HTTP/1.1") == 0;
}

static void reset(void) {
  t_fd = -1;
  t_armed = 0;
  t_len = t_off = 0;
}

void asbi_endhold_arm(int fd) {
  if (fd < 0) return;
  if (t_fd != fd) {
    if (t_off < t_len) return; /* another socket's bytes held: never drop them */
    reset();
    t_fd = fd;
  }
  t_armed = 1;
}

void asbi_endhold_drop(int fd) {
  if (fd >= 0 && fd == t_fd) reset();
}

int asbi_endhold_flush(int fd) {
  if (fd < 0 || fd != t_fd) return 0;
  t_armed = 0;
  while (t_off < t_len) {
    long w = syscall(SYS_sendto, fd, t_data + t_off, t_len - t_off, MSG_NOSIGNAL, (void *)0, 0);
    if (w > 0) {
      t_off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    reset();
    return -1;
  }
  reset();
  return 0;
}

/* The program's send(): every call on another socket, or with nothing
 * armed or held, goes to the system call as it is (errno as it leaves
 * it). */
__attribute__((visibility("default"))) ssize_t send(int fd, const void *buf, size_t len,
                                                    int flags) {
  if (fd != t_fd || fd < 0) return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, (void *)0, 0);
  if (t_armed && t_off == 0 && len <= sizeof t_data - t_len) {
    memcpy(t_data + t_len, buf, len);
    t_len += len;
    t_armed = 0;
    return (ssize_t)len;
  }
  /* not armed (or too big to hold): what is held goes with this one */
  t_armed = 0;
  if (t_off == t_len) {
    reset();
    return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, (void *)0, 0);
  }
  struct iovec iov[2] = {{t_data + t_off, t_len - t_off}, {(void *)buf, len}};
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  long w = syscall(SYS_sendmsg, fd, &m, flags);
  if (w < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) reset();
    return -1;
  }
  size_t held = t_len - t_off;
  if ((size_t)w < held) {
    /* part of the held bytes went, none of this call's: the caller tries
     * again when the socket takes more */
    t_off += (size_t)w;
    errno = EAGAIN;
    return -1;
  }
  reset();
  return (ssize_t)((size_t)w - held);
}
