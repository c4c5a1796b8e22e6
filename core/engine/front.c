/* The engine's TCP front: one port for plain HTTP and TLS, told apart by
 * the connection's first byte (a TLS record starts with 22, a handshake;
 * no HTTP request line does), so https://<port>-<id>.localhost:49982 —
 * what a client builds from getHost — and http:// on the same host both
 * work, and so do the control plane's API URLs.
 *
 * libmicrohttpd (Debian's) does TLS with GnuTLS only and cannot pick a
 * certificate per SNI name from an OpenSSL CA, so TLS ends here: after
 * the handshake (OpenSSL, certificates from tlsca.c) the connection's
 * plaintext goes to libmicrohttpd over a socketpair (MHD_add_connection,
 * with the client's address for the per-address limit) and one thread per
 * TLS connection moves bytes both ways. A plain connection is handed to
 * libmicrohttpd as it is; one whose first byte has not come yet at accept
 * waits for it in the acceptor's poll set (up to 2 s; one silent for
 * longer is plain HTTP, under libmicrohttpd's slow-client rules), so the
 * acceptor never blocks on a client.
 * SPDX-License-Identifier: Apache-2.0 */
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "util/log.h"

#define RELAY_BUF (64u * 1024u)
#define TLS_HANDSHAKE 22
#define SNIFF_MS 2000L /* how long a new connection may stay silent before it is plain HTTP */

#define EXTRA_MAX 4096 /* loopback listeners (loopurl.c) */

struct front {
  int lfd;
  /* more listeners, plain HTTP only, added and dropped while running
   * (front_listen_add/drop); only the acceptor polls and closes them */
  int extra[EXTRA_MAX];
  size_t nextra;
  int drop[EXTRA_MAX]; /* dropped: the acceptor closes them */
  size_t ndrop;
  int wake_fd; /* eventfd: the listener set changed */
  int stop_fd; /* eventfd: readable once the front stops */
  struct MHD_Daemon *daemon;
  SSL_CTX *tls;
  unsigned head_ms, max_pending;
  pthread_t acceptor;
  int acceptor_running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned threads; /* TLS connection threads alive */
};

typedef struct job {
  front *f;
  int fd;
  struct sockaddr_storage addr;
  socklen_t alen;
} job;

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for events on fd (and the stop signal) until deadline_ms (-1 =
 * none). 1 when fd is ready, 0 on timeout or stop. */
static int wait_fd(front *f, int fd, short events, long deadline_ms) {
  for (;;) {
    struct pollfd p[2] = {{fd, events, 0}, {f->stop_fd, POLLIN, 0}};
    int ms = -1;
    if (deadline_ms >= 0) {
      long left = deadline_ms - now_ms();
      if (left <= 0) return 0;
      ms = (int)left;
    }
    int n = poll(p, 2, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || p[1].revents) return 0;
    return 1;
  }
}

static void hand_to_mhd(front *f, int fd, const job *j) {
  /* MHD closes fd itself when it cannot take it: over the connection or
   * per-address limit, which is how those limits refuse */
  MHD_add_connection(f->daemon, fd, (const struct sockaddr *)&j->addr, j->alen);
}

/* Both directions until either side ends: client TLS <-> plain socketpair
 * end `up` whose other end libmicrohttpd serves. */
static void relay(front *f, SSL *ssl, int fd, int up) {
  char *cbuf = malloc(RELAY_BUF), *sbuf = malloc(RELAY_BUF);
  size_t clen = 0, coff = 0, slen = 0, soff = 0;
  int cli_eof = 0, up_eof = 0, up_shut = 0, fd_hup = 0, up_hup = 0;
  if (!cbuf || !sbuf) goto done;
  for (;;) {
    short fdev = 0, upev = 0;
    int progress = 1;
    while (progress) {
      progress = 0;
      fdev = upev = 0;
      if (!cli_eof && clen == 0) { /* client -> libmicrohttpd */
        int n = SSL_read(ssl, cbuf, RELAY_BUF);
        if (n > 0) {
          clen = (size_t)n;
          coff = 0;
          progress = 1;
        } else {
          int e = SSL_get_error(ssl, n);
          if (e == SSL_ERROR_WANT_READ)
            fdev |= POLLIN;
          else if (e == SSL_ERROR_WANT_WRITE)
            fdev |= POLLOUT;
          else
            cli_eof = 1; /* close_notify, a reset or a bad record */
        }
      }
      if (clen) {
        ssize_t w = send(up, cbuf + coff, clen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
          coff += (size_t)w;
          clen -= (size_t)w;
          progress = 1;
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          goto done;
        } else {
          upev |= POLLOUT;
        }
      }
      if (cli_eof && clen == 0 && !up_shut) {
        shutdown(up, SHUT_WR); /* libmicrohttpd sees the client leave */
        up_shut = 1;
      }
      if (!up_eof && slen == 0) { /* libmicrohttpd -> client */
        ssize_t r = recv(up, sbuf, RELAY_BUF, MSG_DONTWAIT);
        if (r > 0) {
          slen = (size_t)r;
          soff = 0;
          progress = 1;
        } else if (r == 0) {
          up_eof = 1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          goto done;
        } else {
          upev |= POLLIN;
        }
      }
      if (slen) {
        int w = SSL_write(ssl, sbuf + soff, (int)slen);
        if (w > 0) {
          soff += (size_t)w;
          slen -= (size_t)w;
          progress = 1;
        } else {
          int e = SSL_get_error(ssl, w);
          if (e == SSL_ERROR_WANT_WRITE)
            fdev |= POLLOUT;
          else if (e == SSL_ERROR_WANT_READ)
            fdev |= POLLIN;
          else
            goto done;
        }
      }
      if (up_eof && slen == 0) {
        SSL_shutdown(ssl); /* one try at close_notify; the socket is non-blocking */
        goto done;
      }
    }
    /* A side that hung up is watched again only when there is something
     * to do on it (the call on it then reports the end), or poll would
     * return at once, over and over. */
    struct pollfd p[3] = {{fd_hup && !fdev ? -1 : fd, fdev, 0},
                          {up_hup && !upev ? -1 : up, upev, 0},
                          {f->stop_fd, POLLIN, 0}};
    int n = poll(p, 3, -1);
    if (n < 0 && errno != EINTR) goto done;
    if (p[2].revents) goto done;
    if ((p[0].revents | p[1].revents) & POLLNVAL) goto done;
    if (p[0].revents & (POLLHUP | POLLERR)) fd_hup = 1;
    if (p[1].revents & (POLLHUP | POLLERR)) up_hup = 1;
  }
done:
  free(cbuf);
  free(sbuf);
}

/* The handshake within the head timeout, then the relay. A client that
 * sends no TLS, a truncated handshake, an unknown SNI name or no
 * acceptable version just ends here (OpenSSL sends its alert). */
static void serve_tls(front *f, job *j, long deadline) {
  /* records go out as they are made: Nagle would hold a handshake flight
   * or a response's last record back for the peer's delayed ACK (40 ms) */
  int one = 1;
  setsockopt(j->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SSL *ssl = SSL_new(f->tls);
  int ok = ssl && SSL_set_fd(ssl, j->fd) == 1;
  while (ok) {
    int r = SSL_accept(ssl);
    if (r == 1) break;
    int e = SSL_get_error(ssl, r);
    short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (!ev || !wait_fd(f, j->fd, ev, deadline)) ok = 0;
  }
  ERR_clear_error();
  int sp[2];
  if (ok && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) == 0) {
    hand_to_mhd(f, sp[1], j);
    relay(f, ssl, j->fd, sp[0]);
    close(sp[0]);
  }
  SSL_free(ssl);
  ERR_clear_error();
  close(j->fd);
}

static void *tls_thread(void *arg) {
  job *j = arg;
  front *f = j->f;
  serve_tls(f, j, now_ms() + (long)f->head_ms);
  pthread_mutex_lock(&f->mu);
  f->threads--;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  free(j);
  return NULL;
}

/* A TLS connection: its handshake and relay on a thread of its own. */
static void start_tls(front *f, job *j) {
  if (!f->tls) { /* no CA: TLS is refused */
    close(j->fd);
    free(j);
    return;
  }
  pthread_mutex_lock(&f->mu);
  f->threads++;
  pthread_mutex_unlock(&f->mu);
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int started = pthread_create(&t, &at, tls_thread, j) == 0;
  pthread_attr_destroy(&at);
  if (!started) {
    pthread_mutex_lock(&f->mu);
    f->threads--;
    pthread_mutex_unlock(&f->mu);
    close(j->fd);
    free(j);
  }
}

/* What a connection's first byte says (peeked, left in the socket). */
static void decide(front *f, job *j) {
  unsigned char b;
  ssize_t n = recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 1 && b == TLS_HANDSHAKE) {
    start_tls(f, j);
    return;
  }
  if (n == 1) {
    hand_to_mhd(f, j->fd, j);
  } else {
    close(j->fd); /* closed or reset before a byte */
  }
  free(j);
}

/* Closes the listeners dropped since the last round: here, in the only
 * thread that polls them, so no fd number is closed under a poll. */
static void close_dropped(front *f) {
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->ndrop; i++) close(f->drop[i]);
  f->ndrop = 0;
  pthread_mutex_unlock(&f->mu);
}

/* The acceptor: one thread for every listener and for the connections
 * whose first byte has not come yet. Those wait in accept order (pq, the
 * oldest first); one silent for SNIFF_MS, or the oldest when max_pending
 * wait, goes to libmicrohttpd as plain HTTP — in the order they came, so
 * libmicrohttpd's per-address limit refuses the later ones, as it did
 * when it accepted them itself. */
static void *acceptor(void *arg) {
  front *f = arg;
  size_t maxp = f->max_pending;
  struct pollfd *p = calloc(EXTRA_MAX + 3 + maxp, sizeof *p);
  job **pq = calloc(maxp, sizeof *pq);
  long *due = calloc(maxp, sizeof *due);
  size_t npq = 0;
  if (!p || !pq || !due) goto out;
  for (;;) {
    close_dropped(f);
    p[0] = (struct pollfd){f->stop_fd, POLLIN, 0};
    p[1] = (struct pollfd){f->wake_fd, POLLIN, 0};
    p[2] = (struct pollfd){f->lfd, POLLIN, 0};
    size_t np = 3;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nextra; i++) p[np++] = (struct pollfd){f->extra[i], POLLIN, 0};
    pthread_mutex_unlock(&f->mu);
    size_t nl = np; /* listeners end here; the waiting connections follow */
    for (size_t i = 0; i < npq; i++) p[np++] = (struct pollfd){pq[i]->fd, POLLIN, 0};
    int ms = -1;
    if (npq) {
      long left = due[0] - now_ms();
      ms = left < 0 ? 0 : (int)left;
    }
    if (poll(p, (nfds_t)np, ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    if (p[1].revents) {
      uint64_t v;
      if (read(f->wake_fd, &v, sizeof v) < 0) { /* EAGAIN: another round took it */
      }
    }
    /* waiting connections that sent something (or hung up) */
    size_t keep = 0;
    for (size_t i = 0; i < npq; i++) {
      if (p[nl + i].revents) {
        decide(f, pq[i]);
      } else {
        pq[keep] = pq[i];
        due[keep++] = due[i];
      }
    }
    npq = keep;
    /* silent for SNIFF_MS: plain HTTP, the oldest first */
    long now = now_ms();
    size_t expired = 0;
    while (expired < npq && due[expired] <= now) {
      hand_to_mhd(f, pq[expired]->fd, pq[expired]);
      free(pq[expired]);
      expired++;
    }
    if (expired) {
      memmove(pq, pq + expired, (npq - expired) * sizeof *pq);
      memmove(due, due + expired, (npq - expired) * sizeof *due);
      npq -= expired;
    }
    /* new connections */
    for (size_t i = 2; i < nl; i++) {
      if (!p[i].revents) continue;
      job *j = calloc(1, sizeof *j);
      if (!j) continue;
      j->f = f;
      j->alen = sizeof j->addr;
      j->fd = accept4(p[i].fd, (struct sockaddr *)&j->addr, &j->alen, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (j->fd < 0) {
        free(j);
        if (errno == EMFILE || errno == ENFILE) wait_fd(f, -1, 0, now_ms() + 100); /* back off */
        continue;
      }
      if (i > 2) { /* a loopback URL's listener: HTTP as it comes */
        hand_to_mhd(f, j->fd, j);
        free(j);
        continue;
      }
      unsigned char b;
      if (recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1) { /* its first bytes are here */
        decide(f, j);
        continue;
      }
      if (npq == maxp) { /* as many wait as may: the oldest is plain HTTP now */
        hand_to_mhd(f, pq[0]->fd, pq[0]);
        free(pq[0]);
        memmove(pq, pq + 1, (npq - 1) * sizeof *pq);
        memmove(due, due + 1, (npq - 1) * sizeof *due);
        npq--;
      }
      long wait = SNIFF_MS < (long)f->head_ms ? SNIFF_MS : (long)f->head_ms;
      pq[npq] = j;
      due[npq++] = now_ms() + wait;
    }
  }
out:
  for (size_t i = 0; i < npq; i++) {
    close(pq[i]->fd);
    free(pq[i]);
  }
  free(p);
  free(pq);
  free(due);
  return NULL;
}

front *front_start(int listen_fd, struct MHD_Daemon *daemon, SSL_CTX *tls, unsigned head_timeout_ms,
                   unsigned max_pending) {
  front *f = calloc(1, sizeof *f);
  if (!f) {
    close(listen_fd);
    return NULL;
  }
  f->lfd = listen_fd;
  f->daemon = daemon;
  f->tls = tls;
  f->head_ms = head_timeout_ms ? head_timeout_ms : 30000u;
  f->max_pending = max_pending ? max_pending : 500u;
  f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  if (f->stop_fd < 0 || f->wake_fd < 0 || pthread_create(&f->acceptor, NULL, acceptor, f) != 0) {
    int en = errno;
    if (f->stop_fd >= 0) close(f->stop_fd);
    if (f->wake_fd >= 0) close(f->wake_fd);
    close(listen_fd);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
    errno = en;
    return NULL;
  }
  f->acceptor_running = 1;
  return f;
}

static void front_quiesce(front *f) {
  if (!f || f->lfd < 0) return;
  /* shutdown() ends the listening state at once; the stop signal wakes
   * the acceptor and every connection thread (they all poll it) */
  shutdown(f->lfd, SHUT_RDWR);
  if (f->acceptor_running) {
    uint64_t one = 1;
    if (write(f->stop_fd, &one, sizeof one) < 0) { /* cannot fail on a fresh eventfd */
    }
    pthread_join(f->acceptor, NULL);
    f->acceptor_running = 0;
  }
  close(f->lfd);
  f->lfd = -1;
}

void front_stop(front *f) {
  if (!f) return;
  front_quiesce(f); /* stop_fd is signalled from here on: every thread ends */
  pthread_mutex_lock(&f->mu);
  while (f->threads) pthread_cond_wait(&f->cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
  close_dropped(f);
  for (size_t i = 0; i < f->nextra; i++) close(f->extra[i]);
  close(f->stop_fd);
  close(f->wake_fd);
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  free(f);
}

static void wake(front *f) {
  uint64_t one = 1;
  if (write(f->wake_fd, &one, sizeof one) < 0) { /* the counter is far from full */
  }
}

int front_listen_add(front *f, int fd) {
  pthread_mutex_lock(&f->mu);
  int ok = f->nextra + f->ndrop < EXTRA_MAX && f->lfd >= 0;
  if (ok) f->extra[f->nextra++] = fd;
  pthread_mutex_unlock(&f->mu);
  if (!ok) {
    close(fd);
    return -ENOSPC;
  }
  wake(f);
  return 0;
}

void front_listen_drop(front *f, int fd) {
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->nextra; i++)
    if (f->extra[i] == fd) {
      f->extra[i] = f->extra[--f->nextra];
      /* no new connection from here on; the acceptor closes it */
      shutdown(fd, SHUT_RDWR);
      f->drop[f->ndrop++] = fd;
      break;
    }
  pthread_mutex_unlock(&f->mu);
  wake(f);
}
