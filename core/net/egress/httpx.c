/* The HTTP-aware relay (httpx.h). SPDX-License-Identifier: Apache-2.0 */
#include "httpx.h"

#include <errno.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "h1req.h"

#define REQBUF (H1REQ_HEAD_MAX + 16 * 1024)
#define IO_TIMEOUT_MS 30000

typedef struct xs {
  int fd;
  SSL *ssl;
} xs;

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int wait_ev(int fd, short ev, long end) {
  for (;;) {
    long left = end - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    return 0;
  }
}

/* SSL_ERROR_WANT_* to a poll event, or 0 for a hard error. */
static short want(SSL *ssl, int r) {
  switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
      return POLLIN;
    case SSL_ERROR_WANT_WRITE:
      return POLLOUT;
    default:
      return 0;
  }
}

static int handshake(xs *s, long end) {
  for (;;) {
    ERR_clear_error();
    int r = SSL_do_handshake(s->ssl);
    if (r == 1) return 0;
    short ev = want(s->ssl, r);
    if (!ev || wait_ev(s->fd, ev, end) < 0) return -1;
  }
}

/* >0 bytes, 0 EOF, -1 error, -2 nothing now. */
static long xs_read(xs *s, char *b, size_t n) {
  if (!s->ssl) {
    ssize_t k = recv(s->fd, b, n, 0);
    if (k < 0) return (errno == EAGAIN || errno == EINTR) ? -2 : -1;
    return (long)k;
  }
  size_t got = 0;
  ERR_clear_error();
  int r = SSL_read_ex(s->ssl, b, n, &got);
  if (r == 1) return (long)got;
  int e = SSL_get_error(s->ssl, r);
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -2;
  /* A peer closing TCP without close_notify: an EOF like any other here
   * (HTTP/1.1 framing, not TLS, tells where messages end). */
  if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_SSL) return ERR_peek_error() ? -1 : 0;
  return -1;
}

static int xs_write(xs *s, const char *b, size_t n, long end) {
  size_t at = 0;
  while (at < n) {
    if (!s->ssl) {
      ssize_t k = send(s->fd, b + at, n - at, MSG_NOSIGNAL);
      if (k > 0) {
        at += (size_t)k;
        continue;
      }
      if (k < 0 && errno != EAGAIN && errno != EINTR) return -1;
      if (wait_ev(s->fd, POLLOUT, end) < 0) return -1;
      continue;
    }
    size_t put = 0;
    ERR_clear_error();
    int r = SSL_write_ex(s->ssl, b + at, n - at, &put);
    if (r == 1) {
      at += put;
      continue;
    }
    short ev = want(s->ssl, r);
    if (!ev || wait_ev(s->fd, ev, end) < 0) return -1;
  }
  return 0;
}

static void xs_shut(xs *s) {
  if (s->ssl) SSL_shutdown(s->ssl); /* our close_notify; theirs is not awaited */
  shutdown(s->fd, SHUT_WR);
}

static void reply(xs *c, const char *status, const char *msg) {
  char b[512];
  int n = snprintf(b, sizeof b,
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n%s\n",
                   status, strlen(msg) + 1, msg);
  xs_write(c, b, (size_t)n, now_ms() + 5000);
}

enum { S_HEAD, S_BODY, S_CHUNKED, S_RAW };

typedef struct rq {
  char *buf;
  size_t n;
  int state;
  uint64_t left;
  h1req_chunks ch;
} rq;

static void consume(rq *r, size_t k) {
  memmove(r->buf, r->buf + k, r->n - k);
  r->n -= k;
}

/* Sends on what the buffered request bytes allow. -1: close. */
static int process(httpx_conn *x, xs *c, xs *u, rq *r) {
  while (r->n) {
    long end = now_ms() + IO_TIMEOUT_MS;
    if (r->state == S_HEAD) {
      h1req_head h;
      int pr = h1req_parse(r->buf, r->n, &h);
      if (pr == 0) {
        if (r->n >= REQBUF) {
          reply(c, "431 Request Header Fields Too Large", "egress: request head too large");
          return -1;
        }
        return 0;
      }
      if (pr < 0) {
        reply(c, "400 Bad Request", "egress: malformed or ambiguous request");
        return -1;
      }
      if (h.is_ip || strcmp(h.host, x->name) != 0) {
        reply(c, "421 Misdirected Request",
              "egress: Host is not the name this connection is allowed for");
        return -1;
      }
      char *vals[64];
      size_t nv = x->nh < 64 ? x->nh : 64, i;
      int bad = 0;
      for (i = 0; i < nv; i++)
        if (asbn_secrets_resolve(x->secrets, x->hvalues[i], &vals[i]) < 0) {
          bad = 1;
          break;
        }
      char *head = NULL;
      size_t hl = 0;
      if (!bad &&
          h1req_rewrite(r->buf, &h, x->hnames, (const char *const *)vals, nv, &head, &hl) < 0)
        bad = 2;
      for (size_t k = 0; k < i; k++) asbn_secrets_wipe(vals[k]);
      if (bad) {
        reply(c, "502 Bad Gateway",
              bad == 1 ? "egress: a header rule names a secret that does not exist"
                       : "egress: a header rule's value is not a valid header value");
        return -1;
      }
      int werr = xs_write(u, head, hl, end);
      memset(head, 0, hl);
      free(head);
      if (werr) return -1;
      __atomic_add_fetch(x->bytes_out, (uint64_t)hl, __ATOMIC_RELAXED);
      consume(r, h.head_len);
      if (h.upgrade)
        r->state = S_RAW;
      else if (h.chunked) {
        r->state = S_CHUNKED;
        h1req_chunks_init(&r->ch);
      } else if (h.body_len) {
        r->state = S_BODY;
        r->left = h.body_len;
      }
      continue;
    }
    size_t take = r->n;
    int done = 0;
    if (r->state == S_BODY) {
      if (take > r->left) take = (size_t)r->left;
      r->left -= take;
      done = r->left == 0;
    } else if (r->state == S_CHUNKED) {
      long k = h1req_chunks_feed(&r->ch, r->buf, r->n, &done);
      if (k < 0) {
        reply(c, "400 Bad Request", "egress: malformed chunked body");
        return -1;
      }
      take = (size_t)k;
    }
    if (take && xs_write(u, r->buf, take, end) < 0) return -1;
    __atomic_add_fetch(x->bytes_out, (uint64_t)take, __ATOMIC_RELAXED);
    consume(r, take);
    if (done) r->state = S_HEAD;
  }
  return 0;
}

void httpx_relay(httpx_conn *x) {
  xs c = {x->cfd, x->cssl}, u = {x->ufd, x->ussl};
  long end = now_ms() + IO_TIMEOUT_MS;
  if (c.ssl && handshake(&c, end) < 0) return;
  if (u.ssl && handshake(&u, end) < 0) {
    reply(&c, "502 Bad Gateway", "egress: the upstream's TLS certificate did not verify");
    return;
  }
  rq r = {malloc(REQBUF), 0, S_HEAD, 0, {0}};
  char *down = malloc(64 * 1024);
  int ceof = 0, ueof = 0;
  while (r.buf && down && !(ceof && ueof)) {
    struct pollfd p[2] = {{c.fd, 0, 0}, {u.fd, 0, 0}};
    int ready_c = !ceof && r.n < REQBUF && c.ssl && SSL_pending(c.ssl) > 0;
    int ready_u = !ueof && u.ssl && SSL_pending(u.ssl) > 0;
    if (!ceof && r.n < REQBUF) p[0].events = POLLIN;
    if (!ueof) p[1].events = POLLIN;
    if (!ready_c && !ready_u) {
      if (poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL)) break;
    }
    if (!ceof && (ready_c || (p[0].revents & (POLLIN | POLLHUP)))) {
      long k = xs_read(&c, r.buf + r.n, REQBUF - r.n);
      if (k > 0) {
        r.n += (size_t)k;
        if (process(x, &c, &u, &r) < 0) break;
      } else if (k == 0) {
        ceof = 1;
        if (r.state != S_RAW && r.n) break; /* a request cut short: not sent on */
        xs_shut(&u);
      } else if (k == -1)
        break;
    }
    if (!ueof && (ready_u || (p[1].revents & (POLLIN | POLLHUP)))) {
      long k = xs_read(&u, down, 64 * 1024);
      if (k > 0) {
        if (xs_write(&c, down, (size_t)k, now_ms() + IO_TIMEOUT_MS) < 0) break;
        __atomic_add_fetch(x->bytes_in, (uint64_t)k, __ATOMIC_RELAXED);
      } else if (k == 0) {
        ueof = 1;
        xs_shut(&c);
      } else if (k == -1)
        break;
    }
  }
  if (r.buf) {
    memset(r.buf, 0, REQBUF);
    free(r.buf);
  }
  free(down);
}
