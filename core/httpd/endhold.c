/* See endhold.h: the held last chunk of a chunked response, sent with the
 * last-chunk marker in one sendmsg(). Hand-written because libmicrohttpd
 * 0.9.75 (Debian 12's) has no way to send a content reader's last data
 * and the end of the body together, and corking does not help: the hop
 * into the router is a unix socket (no TCP_CORK there) and libmicrohttpd
 * pushes every chunk it sends. SPDX-License-Identifier: Apache-2.0 */
#include "endhold.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { HOLD_NONE, HOLD_ARMED, HOLD_HELD };

static _Thread_local int t_state = HOLD_NONE;
static _Thread_local int t_fd = -1;
static _Thread_local size_t t_len, t_off;
static _Thread_local char t_data[ASBI_ENDHOLD_MAX];

int asbi_endhold_chunked(const char *version) {
  return version && strcmp(version, "HTTP/1.1") == 0;
}

void asbi_endhold_arm(int fd) {
  if (fd < 0) return;
  if (t_state == HOLD_HELD && t_fd != fd) return; /* never drop held bytes */
  t_state = HOLD_ARMED;
  t_fd = fd;
  t_len = t_off = 0;
}

void asbi_endhold_drop(int fd) {
  if (fd < 0 || fd != t_fd) return;
  t_state = HOLD_NONE;
  t_fd = -1;
}

/* The program's send(): every call but the two of a held end goes to the
 * system call as it is (errno as the system call leaves it). */
__attribute__((visibility("default"))) ssize_t send(int fd, const void *buf, size_t len,
                                                    int flags) {
  if (t_state != HOLD_NONE && fd == t_fd) {
    if (t_state == HOLD_ARMED) {
      if (len <= sizeof t_data) {
        memcpy(t_data, buf, len);
        t_len = len;
        t_off = 0;
        t_state = HOLD_HELD;
        return (ssize_t)len;
      }
      t_state = HOLD_NONE; /* too big to hold: two writes, as without */
    } else {
      struct iovec iov[2] = {{t_data + t_off, t_len - t_off}, {(void *)buf, len}};
      struct msghdr m;
      memset(&m, 0, sizeof m);
      m.msg_iov = iov;
      m.msg_iovlen = 2;
      long w = syscall(SYS_sendmsg, fd, &m, flags);
      if (w < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) t_state = HOLD_NONE;
        return -1;
      }
      size_t held = t_len - t_off;
      if ((size_t)w < held) {
        /* part of the held chunk went: none of this call's bytes did; the
         * caller tries again when the socket takes more */
        t_off += (size_t)w;
        errno = EAGAIN;
        return -1;
      }
      t_state = HOLD_NONE;
      t_fd = -1;
      return (ssize_t)((size_t)w - held);
    }
  }
  return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, (void *)0, 0);
}
