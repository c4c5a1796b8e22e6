/* The stdio transport: newline-delimited JSON-RPC on stdin/stdout (MCP
 * "stdio"). The reader only frames and dispatches, so a long tool call
 * never holds up the next message (cancellations included). An over-long
 * message is answered with an error and skipped; malformed JSON gets a
 * parse error; the session survives both. End of input (the client went
 * away or is shutting us down) gives calls in flight a short grace, then
 * cancels them and ends the session; so does a signal, at once.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mcp.h"

#define EOF_GRACE_MS 2000

typedef struct stdout_sink {
  mcp_sink base;
  pthread_mutex_t mu;
  int fd;
  int dead;
} stdout_sink;

static void stdout_send(mcp_sink *sk, char *msg, int final) {
  (void)final;
  stdout_sink *o = (stdout_sink *)sk;
  if (!msg) return;
  size_t len = strlen(msg);
  pthread_mutex_lock(&o->mu);
  if (!o->dead) {
    struct iovec iov[2] = {{msg, len}, {(void *)"\n", 1}};
    size_t left = len + 1;
    int i = 0;
    while (left) {
      ssize_t n = writev(o->fd, iov + i, 2 - i);
      if (n < 0) {
        if (errno == EINTR) continue;
        /* The client closed our stdout: nobody hears us any more. */
        o->dead = 1;
        char b = 'o';
        if (write(mcp_signal_pipe[1], &b, 1) < 0) {
        }
        break;
      }
      left -= (size_t)n;
      while (i < 2 && (size_t)n >= iov[i].iov_len) {
        n -= (ssize_t)iov[i].iov_len;
        iov[i].iov_len = 0;
        i++;
      }
      if (i < 2) {
        iov[i].iov_base = (char *)iov[i].iov_base + n;
        iov[i].iov_len -= (size_t)n;
      }
    }
  }
  pthread_mutex_unlock(&o->mu);
  free(msg);
}

static void stdout_destroy(mcp_sink *sk) {
  stdout_sink *o = (stdout_sink *)sk;
  pthread_mutex_destroy(&o->mu);
  free(o);
}

typedef struct reader {
  mcp_session *s;
  mcp_sink *out;
} reader;

static int on_line(void *ud, const char *line, size_t len) {
  reader *r = ud;
  if (!line)
    mcp_session_oversized(r->s, len, r->out);
  else
    mcp_session_handle(r->s, line, len, r->out);
  return 0;
}

int mcp_stdio_run(mcp_server *srv) {
  stdout_sink *o = calloc(1, sizeof *o);
  if (!o) return 1;
  atomic_init(&o->base.refs, 1);
  o->base.send = stdout_send;
  o->base.destroy = stdout_destroy;
  o->fd = 1;
  pthread_mutex_init(&o->mu, NULL);
  mcp_session *s = mcp_session_new(srv, &o->base, "stdio");
  if (!s) {
    mcp_sink_unref(&o->base);
    return 1;
  }
  reader rd = {s, &o->base};
  mcp_framer fr;
  mcp_framer_init(&fr, srv->cfg.max_message);
  static char buf[64 * 1024];
  int eof = 0;
  for (;;) {
    struct pollfd p[2] = {{0, POLLIN, 0}, {mcp_signal_pipe[0], POLLIN, 0}};
    int n = poll(p, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) break; /* a signal, or stdout is gone */
    if (!p[0].revents) continue;
    ssize_t got = read(0, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof = 1;
      break;
    }
    if (mcp_framer_feed(&fr, buf, (size_t)got, on_line, &rd) == -1) {
      fprintf(stderr, "agent-sandbox-mcp: out of memory reading stdin\n");
      break;
    }
  }
  if (eof) {
    mcp_framer_finish(&fr, on_line, &rd);
    /* A client that writes its requests and closes stdin still gets its
     * answers; one that went away mid-call has its calls cancelled. */
    if (!mcp_session_wait_idle(s, EOF_GRACE_MS))
      mcp_logf(srv, "stdin closed with calls in flight: cancelling them");
  }
  mcp_framer_free(&fr);
  mcp_session_close(s);
  mcp_sink_unref(&o->base);
  return 0;
}
