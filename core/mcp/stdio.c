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
  (void) final;
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

/* Reading stdin passes from thread to thread: the thread that read a tool
 * call starts a new reader for what follows, then runs the call itself
 * (leader/follower), so a call costs no hand-off to a worker on its way
 * while the next message is read at once all the same. The main thread
 * only waits for reading to end. */
typedef struct reader {
  mcp_server *srv;
  mcp_session *s;
  mcp_sink *out;
  mcp_framer fr;
  char buf[64 * 1024];
  size_t have, off; /* read into buf, handled up to off */
  mcp_call *run;    /* set by on_line: a call for this thread */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, eof, failed;
} reader;

static int on_line(void *ud, const char *line, size_t len) {
  reader *r = ud;
  if (!line) {
    mcp_session_oversized(r->s, len, r->out);
    return 0;
  }
  mcp_session_handle(r->s, line, len, r->out, &r->run);
  return r->run != NULL; /* stop: this thread goes to run it */
}

static void finish(reader *r, int eof) {
  pthread_mutex_lock(&r->mu);
  r->done = 1;
  r->eof = eof;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void *reader_main(void *arg);

static int spawn_reader(reader *r) {
  return mcp_thread_start(r->srv, reader_main, r);
}

static void *reader_main(void *arg) {
  reader *r = arg;
  for (;;) {
    while (r->off < r->have) {
      size_t used = 0;
      if (mcp_framer_feed(&r->fr, r->buf + r->off, r->have - r->off, on_line, r, &used) == -1) {
        fprintf(stderr, "agent-sandbox-mcp: out of memory reading stdin\n");
        finish(r, 0);
        return NULL;
      }
      r->off += used;
      mcp_call *c = r->run;
      if (!c) continue;
      r->run = NULL;
      /* From here on this thread touches nothing of the reader's. */
      if (spawn_reader(r) != 0) {
        /* No thread for reading: run the call first, then read on. */
        mcp_call_run(c);
        continue;
      }
      mcp_call_run(c);
      return NULL;
    }
    struct pollfd p[2] = {{0, POLLIN, 0}, {mcp_signal_pipe[0], POLLIN, 0}};
    int n = poll(p, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      finish(r, 0);
      return NULL;
    }
    if (p[1].revents) { /* a signal, or stdout is gone */
      finish(r, 0);
      return NULL;
    }
    if (!p[0].revents) continue;
    ssize_t got = read(0, r->buf, sizeof r->buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      mcp_framer_finish(&r->fr, on_line, r);
      if (r->run) { /* a last line without its newline was a tool call */
        mcp_call *c = r->run;
        r->run = NULL;
        finish(r, 1);
        mcp_call_run(c);
        return NULL;
      }
      finish(r, 1);
      return NULL;
    }
    r->have = (size_t)got;
    r->off = 0;
  }
}

int mcp_stdio_run(mcp_server *srv) {
  stdout_sink *o = calloc(1, sizeof *o);
  reader *r = calloc(1, sizeof *r);
  if (!o || !r) {
    free(o);
    free(r);
    return 1;
  }
  atomic_init(&o->base.refs, 1);
  o->base.send = stdout_send;
  o->base.destroy = stdout_destroy;
  o->fd = 1;
  pthread_mutex_init(&o->mu, NULL);
  mcp_session *s = mcp_session_new(srv, &o->base, "stdio");
  if (!s) {
    mcp_sink_unref(&o->base);
    free(r);
    return 1;
  }
  r->srv = srv;
  r->s = s;
  r->out = &o->base;
  mcp_framer_init(&r->fr, srv->cfg.max_message);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  if (spawn_reader(r) != 0) {
    fprintf(stderr, "agent-sandbox-mcp: cannot start a thread\n");
    finish(r, 0);
  }
  pthread_mutex_lock(&r->mu);
  while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
  int eof = r->eof;
  pthread_mutex_unlock(&r->mu);
  if (eof) {
    /* A client that writes its requests and closes stdin still gets its
     * answers; one that went away mid-call has its calls cancelled. */
    if (!mcp_session_wait_idle(s, EOF_GRACE_MS))
      mcp_logf(srv, "stdin closed with calls in flight: cancelling them");
  }
  mcp_session_close(s);
  mcp_framer_free(&r->fr);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
  mcp_sink_unref(&o->base);
  return 0;
}
