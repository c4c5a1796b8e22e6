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
 * with the client's address) and one thread per
 * TLS connection moves bytes both ways. A plain connection is handed to
 * libmicrohttpd as it is; one whose first byte has not come yet at accept
 * waits for it in the acceptor's poll set (up to 2 s; one silent for
 * longer is plain HTTP, under libmicrohttpd's slow-client rules), so the
 * acceptor never blocks on a client.
 *
 * More listeners come and go while it runs: loopback URLs' (loopurl.c:
 * plain HTTP) and sandboxes' portals (portal.c: in a sandbox's network
 * namespace, sniffed like the engine's port; their connections reach
 * libmicrohttpd with an abstract AF_UNIX address naming the sandbox, which
 * no TCP client can have, and are counted per sandbox).
 *
 * Limits: the front accounts for every connection from its accept until it
 * is gone (its own phases, then libmicrohttpd's, told by the daemon's
 * connection-closed hook) and applies the engine's connection limits
 * itself: --max-connections at once (past it the front stops accepting
 * and new clients wait in the kernel's backlog, as they did when
 * libmicrohttpd listened), --max-connections-per-ip per address (past it
 * a new connection is closed at once, in whatever phase the others are),
 * and a quarter of --max-connections waiting for a first byte or in a
 * handshake (one more cuts the oldest; libmicrohttpd's own guard lets
 * another quarter wait for a head), so waiting connections never fill the
 * engine and a new client always gets in. libmicrohttpd 0.9.75 must not
 * meet its own connection limit with connections handed to it: on that
 * path it leaves a mutex locked and its thread, every connection thread
 * and the engine's stop hang (fixed upstream in 1.0.0, "process new
 * connection: fixed missing mutex unlock"), so its limit is twice the
 * front's, which it never reaches.
 * SPDX-License-Identifier: Apache-2.0 */
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "util/log.h"

#define RELAY_BUF (64u * 1024u)
#define TLS_HANDSHAKE 22
#define SNIFF_MS 2000L /* how long a new connection may stay silent before it is plain HTTP */

#define EXTRA_MAX \
  8192 /* loopback listeners (loopurl.c) and sandboxes' portals (portal.c: two a sandbox) */
#define KEY_MAX 72 /* an address's accounting key: family, then the address or tag */

/* What a waiting connection waits for. */
enum { W_SNIFF = 1, W_HANDSHAKE = 2 };

typedef struct job {
  struct front *f;
  int fd;
  struct sockaddr_storage addr;
  socklen_t alen;
  long t0;                 /* accepted at (ms) */
  int kind;                /* W_SNIFF: its first byte; W_HANDSHAKE: its TLS handshake */
  int waiting;             /* in the front's waiting list (under mu) */
  struct job *prev, *next; /* the waiting list, in the order they began waiting */
} job;

/* Live connections of one client address. */
typedef struct addr_count {
  unsigned char key[KEY_MAX]; /* family (4, 6; 'u': a portal's tag), then the address */
  unsigned char len;
  unsigned n;
} addr_count;

struct front {
  int lfd;
  /* more listeners, plain HTTP only, added and dropped while running
   * (front_listen_add/drop); only the acceptor polls and closes them */
  int extra[EXTRA_MAX];
  char *extra_tag[EXTRA_MAX]; /* a portal's tag (front_portal_add), NULL: a loopback URL's */
  size_t nextra;
  int drop[EXTRA_MAX]; /* dropped: the acceptor closes them */
  size_t ndrop;
  int wake_fd; /* eventfd: the listener set changed, or room came free */
  int stop_fd; /* eventfd: readable once the front stops */
  struct MHD_Daemon *daemon;
  SSL_CTX *tls;
  unsigned head_ms, max_conns, per_addr, max_waiting;
  pthread_t acceptor;
  int acceptor_running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned threads; /* TLS connection threads alive */
  /* under mu: */
  unsigned live; /* accepted and not gone (closed by the front, or by libmicrohttpd) */
  int paused;    /* the acceptor left the listeners alone: live reached max_conns */
  job *whead, *wtail;
  unsigned nwait;
  /* addresses with live connections: at most max_conns of them, searched
   * linearly (a few µs per connection at the default 1000, no hashing of
   * attacker-chosen keys) */
  addr_count *addrs;
  size_t naddrs, caddrs;
};

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

unsigned front_mhd_limit(unsigned max_conns) {
  return max_conns > 0x7fffffffu ? 0xffffffffu : 2u * max_conns;
}

/* ---- accounting (under mu) -------------------------------------------------- */

static unsigned char addr_key(const struct sockaddr *sa, unsigned char key[KEY_MAX]) {
  if (sa && sa->sa_family == AF_INET) {
    key[0] = 4;
    memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return 5;
  }
  if (sa && sa->sa_family == AF_INET6) {
    key[0] = 6;
    memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return 17;
  }
  if (sa && sa->sa_family == AF_UNIX) { /* a portal's connection: per sandbox */
    const struct sockaddr_un *u = (const struct sockaddr_un *)sa;
    size_t n = strnlen(u->sun_path + 1, sizeof u->sun_path - 1);
    if (n > KEY_MAX - 1) n = KEY_MAX - 1;
    key[0] = 'u';
    memcpy(key + 1, u->sun_path + 1, n);
    return (unsigned char)(n + 1);
  }
  return 0; /* not limited per address */
}

static addr_count *addr_find(front *f, const unsigned char *key, unsigned char len) {
  for (size_t i = 0; i < f->naddrs; i++)
    if (f->addrs[i].len == len && memcmp(f->addrs[i].key, key, len) == 0) return &f->addrs[i];
  return NULL;
}

/* Counts a new connection in; 0 if its address holds per_addr already. */
static int admit(front *f, const job *j) {
  unsigned char key[KEY_MAX], len = addr_key((const struct sockaddr *)&j->addr, key);
  int ok = 1;
  pthread_mutex_lock(&f->mu);
  addr_count *a = len ? addr_find(f, key, len) : NULL;
  if (a && f->per_addr && a->n >= f->per_addr) {
    ok = 0;
  } else if (a) {
    a->n++;
  } else if (len) {
    if (f->naddrs == f->caddrs) { /* only past max_conns (a loopback URL's listener) */
      size_t c = f->caddrs ? 2 * f->caddrs : 64;
      addr_count *v = realloc(f->addrs, c * sizeof *v);
      if (v) {
        f->addrs = v;
        f->caddrs = c;
      }
    }
    if (f->naddrs < f->caddrs) {
      a = &f->addrs[f->naddrs++];
      memcpy(a->key, key, len);
      a->len = len;
      a->n = 1;
    } else {
      ok = 0; /* out of memory */
    }
  }
  if (ok) f->live++;
  pthread_mutex_unlock(&f->mu);
  return ok;
}

static void wake(front *f) {
  uint64_t one = 1;
  if (write(f->wake_fd, &one, sizeof one) < 0) { /* the counter is far from full */
  }
}

/* A connection is gone: its slot and its address's are free. */
static void release(front *f, const struct sockaddr *sa) {
  unsigned char key[KEY_MAX], len = addr_key(sa, key);
  int room = 0;
  pthread_mutex_lock(&f->mu);
  addr_count *a = len ? addr_find(f, key, len) : NULL;
  if (a && --a->n == 0) *a = f->addrs[--f->naddrs];
  if (f->live) f->live--;
  if (f->paused && f->live < f->max_conns) {
    f->paused = 0;
    room = 1;
  }
  pthread_mutex_unlock(&f->mu);
  if (room) wake(f);
}

void front_conn_closed(void *cls, struct MHD_Connection *c) {
  front *f = cls;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  release(f, ci ? ci->client_addr : NULL);
}

static void wait_push(front *f, job *j, int kind) {
  j->kind = kind;
  j->waiting = 1;
  j->next = NULL;
  j->prev = f->wtail;
  if (f->wtail)
    f->wtail->next = j;
  else
    f->whead = j;
  f->wtail = j;
  f->nwait++;
}

static void wait_unlink(front *f, job *j) {
  if (!j->waiting) return;
  if (j->prev)
    j->prev->next = j->next;
  else
    f->whead = j->next;
  if (j->next)
    j->next->prev = j->prev;
  else
    f->wtail = j->prev;
  j->waiting = 0;
  f->nwait--;
}

/* ---- connections -------------------------------------------------------------- */

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

/* libmicrohttpd serves fd from here on (the client's own socket, or the
 * plain end of a TLS connection's socketpair); the connection's slot is
 * freed by its closed hook, or here when it cannot take it. */
static void hand_to_mhd(front *f, int fd, const job *j) {
  if (MHD_add_connection(f->daemon, fd, (const struct sockaddr *)&j->addr, j->alen) != MHD_YES)
    release(f, (const struct sockaddr *)&j->addr); /* it closed fd */
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
 * acceptable version just ends here (OpenSSL sends its alert); so does
 * one cut as the oldest waiting (its socket shut down). */
static void serve_tls(front *f, job *j) {
  /* records go out as they are made: Nagle would hold a handshake flight
   * or a response's last record back for the peer's delayed ACK (40 ms) */
  int one = 1;
  setsockopt(j->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  long deadline = j->t0 + (long)f->head_ms;
  SSL *ssl = SSL_new(f->tls);
  int ok = ssl && SSL_set_fd(ssl, j->fd) == 1, handed = 0;
  while (ok) {
    int r = SSL_accept(ssl);
    if (r == 1) break;
    int e = SSL_get_error(ssl, r);
    short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (!ev || !wait_fd(f, j->fd, ev, deadline)) ok = 0;
  }
  ERR_clear_error();
  /* no longer waiting, whatever the outcome (and only now may the fd,
   * which the acceptor shuts down to cut it, be closed) */
  pthread_mutex_lock(&f->mu);
  wait_unlink(f, j);
  pthread_mutex_unlock(&f->mu);
  int sp[2];
  if (ok && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) == 0) {
    hand_to_mhd(f, sp[1], j); /* the slot is libmicrohttpd's connection's now */
    handed = 1;
    relay(f, ssl, j->fd, sp[0]);
    close(sp[0]);
  }
  SSL_free(ssl);
  ERR_clear_error();
  close(j->fd);
  if (!handed) release(f, (const struct sockaddr *)&j->addr);
}

static void *tls_thread(void *arg) {
  job *j = arg;
  front *f = j->f;
  serve_tls(f, j);
  pthread_mutex_lock(&f->mu);
  f->threads--;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  free(j);
  return NULL;
}

/* Closes a connection the front still holds, and frees its job. */
static void drop_conn(front *f, job *j) {
  pthread_mutex_lock(&f->mu);
  wait_unlink(f, j);
  pthread_mutex_unlock(&f->mu);
  close(j->fd);
  release(f, (const struct sockaddr *)&j->addr);
  free(j);
}

/* One more is about to wait: past max_waiting, the one waiting longest is
 * cut — one waiting for its first byte is plain HTTP now (libmicrohttpd's
 * head deadline and its own cut of the oldest then apply), one in a
 * handshake has its socket shut down (its thread ends it). Acceptor only. */
static void make_room(front *f) {
  job *plain = NULL;
  pthread_mutex_lock(&f->mu);
  if (f->nwait >= f->max_waiting && f->whead) {
    job *old = f->whead;
    wait_unlink(f, old);
    if (old->kind == W_HANDSHAKE)
      shutdown(old->fd, SHUT_RDWR); /* its thread closes it, after it unlinked (done) */
    else
      plain = old;
  }
  pthread_mutex_unlock(&f->mu);
  if (plain) {
    hand_to_mhd(f, plain->fd, plain);
    free(plain);
  }
}

/* A TLS connection: its handshake and relay on a thread of its own. It
 * waits (W_HANDSHAKE) until its handshake ends; listed: it is in the
 * waiting list already (it waited for its first byte). */
static void start_tls(front *f, job *j, int listed) {
  if (!f->tls) { /* no CA: TLS is refused */
    drop_conn(f, j);
    return;
  }
  if (!listed) make_room(f);
  pthread_mutex_lock(&f->mu);
  if (listed)
    j->kind = W_HANDSHAKE;
  else
    wait_push(f, j, W_HANDSHAKE);
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
    drop_conn(f, j);
  }
}

/* What a connection's first byte says (peeked, left in the socket). */
static void decide(front *f, job *j, int listed) {
  unsigned char b;
  ssize_t n = recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 1 && b == TLS_HANDSHAKE) {
    start_tls(f, j, listed);
    return;
  }
  if (n != 1) { /* closed or reset before a byte */
    drop_conn(f, j);
    return;
  }
  pthread_mutex_lock(&f->mu);
  wait_unlink(f, j);
  pthread_mutex_unlock(&f->mu);
  hand_to_mhd(f, j->fd, j);
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

/* A new connection on listener number i (0: the engine's port). */
static void accepted(front *f, int lfd, size_t i) {
  job *j = calloc(1, sizeof *j);
  if (!j) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) close(fd); /* out of memory: refused, not left in the backlog */
    return;
  }
  j->f = f;
  j->alen = sizeof j->addr;
  j->fd = accept4(lfd, (struct sockaddr *)&j->addr, &j->alen, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (j->fd < 0) {
    free(j);
    if (errno == EMFILE || errno == ENFILE) wait_fd(f, -1, 0, now_ms() + 100); /* back off */
    return;
  }
  j->t0 = now_ms();
  int portal = 0;
  if (i > 0) { /* a sandbox's portal: its connections are known by its tag */
    pthread_mutex_lock(&f->mu);
    for (size_t k = 0; k < f->nextra; k++)
      if (f->extra[k] == lfd && f->extra_tag[k]) {
        struct sockaddr_un *u = (struct sockaddr_un *)&j->addr;
        memset(u, 0, sizeof *u);
        u->sun_family = AF_UNIX;
        size_t n = strnlen(f->extra_tag[k], sizeof u->sun_path - 2);
        memcpy(u->sun_path + 1, f->extra_tag[k], n); /* abstract: sun_path[0] is 0 */
        /* with its NUL: libmicrohttpd keeps alen bytes, and portal_source
         * reads the tag up to it */
        j->alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n + 1);
        portal = 1;
        break;
      }
    pthread_mutex_unlock(&f->mu);
  }
  if (!admit(f, j)) { /* its address (a portal: its sandbox) holds --max-connections-per-ip */
    close(j->fd);
    free(j);
    return;
  }
  if (i > 0 && !portal) { /* a loopback URL's listener: HTTP as it comes */
    hand_to_mhd(f, j->fd, j);
    free(j);
    return;
  }
  unsigned char b;
  if (recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1) { /* its first bytes are here */
    decide(f, j, 0);
    return;
  }
  make_room(f);
  pthread_mutex_lock(&f->mu);
  wait_push(f, j, W_SNIFF);
  pthread_mutex_unlock(&f->mu);
}

/* The acceptor: one thread for every listener and for the connections
 * whose first byte has not come yet (W_SNIFF in the waiting list, which
 * only this thread adds and removes). One silent for SNIFF_MS goes to
 * libmicrohttpd as plain HTTP. While max_conns are live it leaves the
 * listeners alone until one is gone. */
static void *acceptor(void *arg) {
  front *f = arg;
  size_t maxs = f->max_waiting;
  struct pollfd *p = calloc(EXTRA_MAX + 3 + maxs, sizeof *p);
  job **sj = calloc(maxs ? maxs : 1, sizeof *sj);
  if (!p || !sj) goto out;
  long sniff = SNIFF_MS < (long)f->head_ms ? SNIFF_MS : (long)f->head_ms;
  for (;;) {
    close_dropped(f);
    p[0] = (struct pollfd){f->stop_fd, POLLIN, 0};
    p[1] = (struct pollfd){f->wake_fd, POLLIN, 0};
    size_t np = 2, ns = 0;
    pthread_mutex_lock(&f->mu);
    f->paused = f->live >= f->max_conns;
    if (!f->paused) {
      p[np++] = (struct pollfd){f->lfd, POLLIN, 0};
      for (size_t i = 0; i < f->nextra; i++) p[np++] = (struct pollfd){f->extra[i], POLLIN, 0};
    }
    size_t nl = np; /* listeners end here; the connections waiting for a byte follow */
    for (job *j = f->whead; j && ns < maxs; j = j->next)
      if (j->kind == W_SNIFF) {
        sj[ns++] = j;
        p[np++] = (struct pollfd){j->fd, POLLIN, 0};
      }
    pthread_mutex_unlock(&f->mu);
    int ms = -1;
    if (ns) { /* the first is the oldest */
      long left = sj[0]->t0 + sniff - now_ms();
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
    /* silent for too long: plain HTTP, the oldest first (before anything
     * below changes the list; those that sent something are left) */
    long now = now_ms();
    for (size_t i = 0; i < ns && sj[i]->t0 + sniff <= now; i++) {
      if (p[nl + i].revents) continue;
      pthread_mutex_lock(&f->mu);
      wait_unlink(f, sj[i]);
      pthread_mutex_unlock(&f->mu);
      hand_to_mhd(f, sj[i]->fd, sj[i]);
      free(sj[i]);
      sj[i] = NULL;
    }
    /* those that sent something (or hung up); a TLS one keeps its place */
    for (size_t i = 0; i < ns; i++)
      if (sj[i] && p[nl + i].revents) decide(f, sj[i], 1);
    /* new connections: one per listener and round */
    if (nl > 2) {
      if (p[2].revents) accepted(f, f->lfd, 0);
      for (size_t i = 3; i < nl; i++)
        if (p[i].revents) accepted(f, p[i].fd, i - 2);
    }
  }
out:
  pthread_mutex_lock(&f->mu);
  for (job *j = f->whead, *n; j; j = n) {
    n = j->next;
    if (j->kind != W_SNIFF) continue; /* a TLS thread's, which ends on the stop signal */
    wait_unlink(f, j);
    close(j->fd);
    free(j);
  }
  pthread_mutex_unlock(&f->mu);
  free(p);
  free(sj);
  return NULL;
}

front *front_new(int listen_fd, SSL_CTX *tls, const front_limits *lim) {
  front *f = calloc(1, sizeof *f);
  if (!f) {
    close(listen_fd);
    return NULL;
  }
  f->lfd = listen_fd;
  f->tls = tls;
  f->head_ms = lim->head_timeout_ms ? lim->head_timeout_ms : 30000u;
  f->max_conns = lim->max_conns ? lim->max_conns : 1000u;
  f->per_addr = lim->per_addr;
  f->max_waiting = lim->max_waiting ? lim->max_waiting : f->max_conns / 4;
  if (!f->max_waiting) f->max_waiting = 1;
  f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  f->caddrs = f->max_conns < 4096 ? f->max_conns : 4096;
  f->addrs = calloc(f->caddrs, sizeof *f->addrs);
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  if (f->stop_fd < 0 || f->wake_fd < 0 || !f->addrs) {
    int en = errno ? errno : ENOMEM;
    front_free(f);
    errno = en;
    return NULL;
  }
  return f;
}

int front_start(front *f, struct MHD_Daemon *daemon) {
  f->daemon = daemon;
  if (pthread_create(&f->acceptor, NULL, acceptor, f) != 0) return -errno;
  f->acceptor_running = 1;
  return 0;
}

void front_stop(front *f) {
  if (!f || f->lfd < 0) return;
  /* shutdown() ends the listening state at once; the stop signal wakes
   * the acceptor and every connection thread (they all poll it) */
  shutdown(f->lfd, SHUT_RDWR);
  uint64_t one = 1;
  if (write(f->stop_fd, &one, sizeof one) < 0) { /* cannot fail on a fresh eventfd */
  }
  if (f->acceptor_running) {
    pthread_join(f->acceptor, NULL);
    f->acceptor_running = 0;
  }
  pthread_mutex_lock(&f->mu);
  while (f->threads) pthread_cond_wait(&f->cv, &f->mu);
  close(f->lfd);
  f->lfd = -1; /* front_listen_add refuses from here on */
  for (size_t i = 0; i < f->nextra; i++) {
    close(f->extra[i]);
    free(f->extra_tag[i]);
    f->extra_tag[i] = NULL;
  }
  f->nextra = 0;
  pthread_mutex_unlock(&f->mu);
  close_dropped(f);
}

void front_free(front *f) {
  if (!f) return;
  front_stop(f);
  if (f->lfd >= 0) close(f->lfd); /* never started */
  if (f->stop_fd >= 0) close(f->stop_fd);
  if (f->wake_fd >= 0) close(f->wake_fd);
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  free(f->addrs);
  free(f);
}

static int listen_add(front *f, int fd, const char *tag) {
  char *t = tag ? strdup(tag) : NULL;
  pthread_mutex_lock(&f->mu);
  int ok = f->nextra + f->ndrop < EXTRA_MAX && f->lfd >= 0 && (!tag || t);
  if (ok) {
    f->extra_tag[f->nextra] = t;
    f->extra[f->nextra++] = fd;
  }
  pthread_mutex_unlock(&f->mu);
  if (!ok) {
    free(t);
    close(fd);
    return -ENOSPC;
  }
  wake(f);
  return 0;
}

int front_listen_add(front *f, int fd) {
  return listen_add(f, fd, NULL);
}

int front_portal_add(front *f, int fd, const char *tag) {
  return listen_add(f, fd, tag);
}

void front_listen_drop(front *f, int fd) {
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->nextra; i++)
    if (f->extra[i] == fd) {
      free(f->extra_tag[i]);
      f->extra_tag[i] = f->extra_tag[--f->nextra];
      f->extra_tag[f->nextra] = NULL;
      f->extra[i] = f->extra[f->nextra];
      /* no new connection from here on; the acceptor closes it */
      shutdown(fd, SHUT_RDWR);
      f->drop[f->ndrop++] = fd;
      break;
    }
  pthread_mutex_unlock(&f->mu);
  wake(f);
}
