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
 * libmicrohttpd listened), --max-connections-per-ip per address (below),
 * and a quarter of --max-connections waiting for a first byte or in a
 * handshake (one more cuts the oldest; libmicrohttpd's own guard lets
 * another quarter wait for a head), so waiting connections never fill the
 * engine and a new client always gets in. libmicrohttpd 0.9.75 must not
 * meet its own connection limit with connections handed to it: on that
 * path it leaves a mutex locked and its thread, every connection thread
 * and the engine's stop hang (fixed upstream in 1.0.0, "process new
 * connection: fixed missing mutex unlock"), so its limit is twice the
 * front's, which it never reaches.
 *
 * Per address, --max-connections-per-ip counts the connections that are
 * not idle keep-alive ones: a client's pool (our library's, the e2b
 * SDKs', Node's agent) keeps connections open between calls, and one
 * whose client closed is counted until libmicrohttpd has seen it go. So
 * an address at its limit first has its connection idle longest since a
 * request reclaimed (shut down: the client sees the server close an idle
 * connection, which every HTTP client expects and retries on a new one;
 * asbi_httpd_reclaim_idle). When all its connections are busy or have
 * not sent their first request yet, a new one is parked: accepted but
 * held by the front (an fd, no thread, nothing read), first in first out,
 * until one of that address's connections ends or turns idle, so a burst
 * of a few hundred calls from one process is served, not reset (up to
 * twice --max-connections-per-ip at once whatever the engine's speed;
 * more as far as its first ones turn idle in time). Parked
 * are at most --max-connections-per-ip per address and --max-connections
 * in all, each for at most --header-timeout; past that a connection gets
 * 503 with Retry-After and is closed (the reply is sent at once, then the
 * front reads and drops what the client still sends for up to 2 s, so
 * the close is not a reset that would discard the reply; TLS clients,
 * told by their first byte, are just closed). So many busy connections
 * from one address still cannot take more than their share, and never
 * starve another address: parked ones hold no slot of --max-connections.
 *
 * Loopback gets no larger budget: sandboxes never reach the engine from
 * the host's loopback (a sandbox's own loopback is its network namespace's,
 * where its portal counts its connections by its tag; the datapath refuses
 * the engine's port from a sandbox; the egress proxy refuses loopback
 * unless a sandbox's allowOut names it, and then its connections come from
 * 127.0.0.1 like the host's clients'), and with reclaiming and parking the
 * limit only bounds connections that are busy or waiting for a request at
 * once, which no SDK needs hundreds of; a larger loopback budget would only
 * give such a proxied sandbox more of the engine.
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

#include "httpd/httpd.h"
#include "util/log.h"

#define RELAY_BUF (64u * 1024u)
#define TLS_HANDSHAKE 22
#define SNIFF_MS 2000L /* how long a new connection may stay silent before it is plain HTTP */

#define EXTRA_MAX \
  8192 /* loopback listeners (loopurl.c) and sandboxes' portals (portal.c: two a sandbox) */
#define KEY_MAX ASBI_HTTPD_KEY_MAX /* an address's key: family, then the address or tag */
#define REJECT_MAX 64              /* 503s being sent at once; past it, closed at once */
#define REJECT_MS 2000L            /* how long a refused client's bytes are read and dropped */

/* What a waiting connection waits for. */
enum { W_SNIFF = 1, W_HANDSHAKE = 2 };
/* Where a job is held by the acceptor (job.list). */
enum { L_NONE, L_PARK, L_REJECT };

typedef struct job {
  struct front *f;
  int fd;
  struct sockaddr_storage addr;
  socklen_t alen;
  long t0;                 /* accepted (parked: admitted) at (ms) */
  int kind;                /* W_SNIFF: its first byte; W_HANDSHAKE: its TLS handshake */
  int waiting;             /* in the front's waiting list (under mu) */
  int plain;               /* a loopback URL's: plain HTTP as it comes */
  struct job *prev, *next; /* the waiting list, in the order they began waiting */
  /* parked or refused (acceptor only): */
  int list;          /* L_PARK, L_REJECT */
  long deadline;     /* parked: 503 then; refused: closed then */
  struct job *rnext; /* the next parked (in arrival order) or refused */
} job;

/* Connections of one client address. */
typedef struct addr_count {
  unsigned char key[KEY_MAX]; /* family (4, 6; 'u': a portal's tag), then the address */
  unsigned char len;
  unsigned n;       /* live (admitted, not gone) */
  unsigned pending; /* of them reclaimed (shut down) and not counted out yet */
  unsigned parked;  /* waiting in the front for room */
  unsigned round;   /* the acceptor's round in which it found no room */
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
  asbi_httpd *httpd; /* reclaims idle connections */
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
  /* addresses with live or parked connections: at most 2 * max_conns of
   * them, searched linearly (a few µs per connection at the default 1000,
   * no hashing of attacker-chosen keys) */
  addr_count *addrs;
  size_t naddrs, caddrs;
  unsigned nparked, park_max, round;
  /* acceptor only: parked in arrival order, refused (being sent a 503) */
  job *phead, *ptail, *rhead;
  unsigned nreject;
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
  return (unsigned char)asbi_httpd_addr_key(sa, key);
}

static addr_count *addr_find(front *f, const unsigned char *key, unsigned char len) {
  for (size_t i = 0; i < f->naddrs; i++)
    if (f->addrs[i].len == len && memcmp(f->addrs[i].key, key, len) == 0) return &f->addrs[i];
  return NULL;
}

/* key's entry, made (zeroed) if it has none; NULL when out of memory. */
static addr_count *addr_get(front *f, const unsigned char *key, unsigned char len) {
  addr_count *a = addr_find(f, key, len);
  if (a) return a;
  if (f->naddrs == f->caddrs) { /* only past max_conns (a loopback URL's listener) */
    size_t c = f->caddrs ? 2 * f->caddrs : 64;
    addr_count *v = realloc(f->addrs, c * sizeof *v);
    if (!v) return NULL;
    f->addrs = v;
    f->caddrs = c;
  }
  a = &f->addrs[f->naddrs++];
  memset(a, 0, sizeof *a);
  memcpy(a->key, key, len);
  a->len = len;
  return a;
}

static void addr_put(front *f, addr_count *a) {
  if (a->n == 0 && a->parked == 0) *a = f->addrs[--f->naddrs];
}

/* Whether a holds its limit (the reclaimed are as good as gone). */
static int addr_full(const front *f, const addr_count *a) {
  return f->per_addr && a->n - (a->pending < a->n ? a->pending : a->n) >= f->per_addr;
}

enum { ADMIT_NO, ADMIT_OK, ADMIT_FULL };

/* Counts a connection in: ADMIT_OK, or ADMIT_FULL when its address holds
 * per_addr and none of them is idle to reclaim, ADMIT_NO when out of
 * memory. Acceptor only (the reclaim runs without mu). */
static int admit(front *f, const job *j) {
  const struct sockaddr *sa = (const struct sockaddr *)&j->addr;
  unsigned char key[KEY_MAX], len = addr_key(sa, key);
  int rc = ADMIT_OK;
  for (int tried = 0;; tried = 1) {
    pthread_mutex_lock(&f->mu);
    addr_count *a = len ? addr_get(f, key, len) : NULL;
    if (len && !a) {
      rc = ADMIT_NO;
    } else if (a && addr_full(f, a)) {
      if (!tried && f->httpd) {
        /* counted as reclaimed before it is (its close, on another thread,
         * counts it out) */
        a->pending++;
        pthread_mutex_unlock(&f->mu);
        int got = asbi_httpd_reclaim_idle(f->httpd, sa);
        pthread_mutex_lock(&f->mu);
        a = addr_find(f, key, len);
        if (!got && a && a->pending) a->pending--;
        pthread_mutex_unlock(&f->mu);
        if (got) continue;
        pthread_mutex_lock(&f->mu);
        a = addr_find(f, key, len);
        if (!a || !addr_full(f, a)) { /* one went meanwhile */
          pthread_mutex_unlock(&f->mu);
          continue;
        }
      }
      rc = ADMIT_FULL;
    } else if (a) {
      a->n++;
    }
    if (rc == ADMIT_OK) f->live++;
    if (rc != ADMIT_OK && a) addr_put(f, a);
    pthread_mutex_unlock(&f->mu);
    return rc;
  }
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
  if (a) {
    if (a->n) a->n--;
    if (a->pending) a->pending--;
    if (a->parked) room = 1; /* one of them may go in now */
    addr_put(f, a);
  }
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

void front_conn_idle(void *cls, struct MHD_Connection *c) {
  front *f = cls;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  unsigned char key[KEY_MAX], len = addr_key(ci ? ci->client_addr : NULL, key);
  pthread_mutex_lock(&f->mu);
  addr_count *a = len ? addr_find(f, key, len) : NULL;
  int parked = a && a->parked;
  pthread_mutex_unlock(&f->mu);
  if (parked) wake(f); /* the acceptor reclaims it for the first parked one */
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

/* ---- parked and refused connections (acceptor only) ------------------------ */

/* An admitted connection goes on: a loopback URL's to libmicrohttpd as it
 * is, any other by its first byte (now, or once it comes). */
static void proceed(front *f, job *j) {
  j->t0 = now_ms(); /* its head and handshake deadlines count from here */
  if (j->plain) {
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

/* Reads and drops what the client sent so far; 0 once it has hung up. */
static int drain(int fd) {
  char buf[4096];
  for (int k = 0; k < 64; k++) {
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return 1;
}

/* The connection is refused: a 503 with Retry-After, then what the client
 * still sends is read and dropped for REJECT_MS (a close with unread bytes
 * would be a reset, which discards the reply on the client's side) and it
 * is closed. A TLS client (its first byte) and any past REJECT_MAX
 * refused at once are closed after what they sent was read. Not counted
 * in live: refused ones are at most REJECT_MAX. */
static void refuse(front *f, job *j) {
  static const char body[] =
      "{\"code\":503,\"message\":\"too many connections from this client "
      "address at once (--max-connections-per-ip); retry later\"}\n";
  char resp[512];
  unsigned char b;
  int tls = recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && b == TLS_HANDSHAKE;
  if (tls || f->nreject >= REJECT_MAX) {
    drain(j->fd);
    close(j->fd);
    free(j);
    return;
  }
  int n = snprintf(resp, sizeof resp,
                   "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                   "Retry-After: 1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                   sizeof body - 1, body);
  /* a new socket's buffer takes it whole */
  if (send(j->fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) != n || !drain(j->fd)) {
    close(j->fd);
    free(j);
    return;
  }
  shutdown(j->fd, SHUT_WR);
  j->list = L_REJECT;
  j->deadline = now_ms() + REJECT_MS;
  j->rnext = f->rhead;
  f->rhead = j;
  f->nreject++;
}

/* Its address holds its limit and none of its connections is idle: it
 * waits in the front (first in, first out) while its address parks fewer
 * than per_addr and the front fewer than park_max; else refused. */
static void park(front *f, job *j) {
  unsigned char key[KEY_MAX], len = addr_key((const struct sockaddr *)&j->addr, key);
  int ok = 0;
  pthread_mutex_lock(&f->mu);
  addr_count *a = len ? addr_find(f, key, len) : NULL;
  if (a && a->parked < f->per_addr && f->nparked < f->park_max) {
    a->parked++;
    f->nparked++;
    ok = 1;
  }
  pthread_mutex_unlock(&f->mu);
  if (!ok) {
    refuse(f, j);
    return;
  }
  j->list = L_PARK;
  j->deadline = now_ms() + (long)f->head_ms;
  j->rnext = NULL;
  if (f->ptail)
    f->ptail->rnext = j;
  else
    f->phead = j;
  f->ptail = j;
}

/* A parked one leaves the list (prev: the one before it, or NULL). */
static void unpark(front *f, job *j, job *prev) {
  unsigned char key[KEY_MAX], len = addr_key((const struct sockaddr *)&j->addr, key);
  if (prev)
    prev->rnext = j->rnext;
  else
    f->phead = j->rnext;
  if (f->ptail == j) f->ptail = prev;
  j->rnext = NULL;
  j->list = L_NONE;
  pthread_mutex_lock(&f->mu);
  addr_count *a = len ? addr_find(f, key, len) : NULL;
  if (a && a->parked) {
    a->parked--;
    addr_put(f, a);
  }
  if (f->nparked) f->nparked--;
  pthread_mutex_unlock(&f->mu);
}

/* A connection that passed accept: in, parked or refused. */
static void enter(front *f, job *j) {
  int rc = admit(f, j);
  if (rc == ADMIT_OK)
    proceed(f, j);
  else if (rc == ADMIT_FULL)
    park(f, j);
  else
    refuse(f, j);
}

/* Lets parked ones in, oldest first, while there is room: in their
 * address (one of its connections ended, or turned idle and is reclaimed
 * for it) and in the front. Those parked past their deadline are refused.
 * An address without room is not asked again this round. */
static void serve_parked(front *f) {
  long now = now_ms();
  unsigned round = ++f->round;
  for (job *j = f->phead, *prev = NULL, *next; j; j = next) {
    next = j->rnext;
    pthread_mutex_lock(&f->mu);
    int full = f->live >= f->max_conns;
    unsigned char key[KEY_MAX], len = addr_key((const struct sockaddr *)&j->addr, key);
    addr_count *a = len ? addr_find(f, key, len) : NULL;
    int skip = a && a->round == round;
    pthread_mutex_unlock(&f->mu);
    if (j->deadline <= now) {
      unpark(f, j, prev);
      refuse(f, j);
      continue;
    }
    if (full || skip) {
      prev = j;
      continue;
    }
    int rc = admit(f, j);
    if (rc == ADMIT_FULL) {
      pthread_mutex_lock(&f->mu);
      a = addr_find(f, key, len);
      if (a) a->round = round;
      pthread_mutex_unlock(&f->mu);
      prev = j;
      continue;
    }
    unpark(f, j, prev);
    if (rc == ADMIT_OK)
      proceed(f, j);
    else
      refuse(f, j);
  }
}

/* Refused ones: what they send is dropped; closed once they hang up or at
 * their deadline. p holds the poll results for the first n of them, in
 * list order. */
static void serve_refused(front *f, const struct pollfd *p, size_t n) {
  long now = now_ms();
  size_t i = 0;
  for (job **pp = &f->rhead, *j; (j = *pp); i++) {
    int gone = j->deadline <= now || (i < n && p[i].revents && !drain(j->fd));
    if (!gone) {
      pp = &j->rnext;
      continue;
    }
    *pp = j->rnext;
    close(j->fd);
    free(j);
    f->nreject--;
  }
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
  j->plain = i > 0 && !portal;
  enter(f, j);
}

/* The acceptor: one thread for every listener and for the connections
 * whose first byte has not come yet (W_SNIFF in the waiting list, which
 * only this thread adds and removes). One silent for SNIFF_MS goes to
 * libmicrohttpd as plain HTTP. While max_conns are live it leaves the
 * listeners alone until one is gone. */
static void *acceptor(void *arg) {
  front *f = arg;
  size_t maxs = f->max_waiting;
  struct pollfd *p = calloc(EXTRA_MAX + 3 + maxs + REJECT_MAX, sizeof *p);
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
    size_t nw = np, nr = 0;                  /* the refused follow */
    long next = ns ? sj[0]->t0 + sniff : -1; /* the first is the oldest */
    for (job *j = f->rhead; j && nr < REJECT_MAX; j = j->rnext, nr++) {
      p[np++] = (struct pollfd){j->fd, POLLIN, 0};
      if (next < 0 || j->deadline < next) next = j->deadline;
    }
    if (f->phead && (next < 0 || f->phead->deadline < next)) next = f->phead->deadline;
    int ms = -1;
    if (next >= 0) {
      long left = next - now_ms();
      ms = left < 0 ? 0 : left > 0x7fffffffL ? 0x7fffffff : (int)left;
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
    serve_refused(f, p + nw, nr); /* first: what follows refuses more */
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
    serve_parked(f);
  }
out:
  while (f->phead) {
    job *j = f->phead;
    unpark(f, j, NULL);
    close(j->fd);
    free(j);
  }
  while (f->rhead) {
    job *j = f->rhead;
    f->rhead = j->rnext;
    close(j->fd);
    free(j);
  }
  f->nreject = 0;
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
  f->park_max = f->max_conns;
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

int front_start(front *f, asbi_httpd *h) {
  f->httpd = h;
  f->daemon = asbi_httpd_daemon(h);
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
