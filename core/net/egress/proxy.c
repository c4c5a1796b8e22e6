/* The transparent proxy (proxy.h). SPDX-License-Identifier: Apache-2.0 */
#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "httpx.h"
#include "peek.h"
#include "socks.h"

#define MAX_BINDS 2
#define PEEK_MAX (16 * 1024 + 5 + 2048) /* one TLS record, or an HTTP head we read at most */
#define CONNECT_TIMEOUT_MS 10000
#define PIPE_SIZE (256 * 1024)

struct proxy {
  sbxtab *t;
  int lfd[MAX_BINDS];
  size_t nbinds;
  uint16_t port;
  unsigned peek_ms;
  int stopfd;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned active;
  int stopping;
  asbn_secrets *secrets; /* may be NULL */
  tlsmitm *mitm;         /* may be NULL: no interception */
};

typedef struct job {
  proxy *p;
  int fd;
  sbxtab_conn c;
} job;

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Close with RST: the sandbox sees a refusal at once, not a timeout. */
static void rst_close(int fd) {
  struct linger l = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

/* 1 if addr is one of this netns's own addresses (the host's, in the
 * engine's netns): never reached through the proxy. */
static int is_local(int family, const uint8_t *addr) {
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) < 0) return 1; /* cannot tell: refuse */
  int hit = 0;
  for (struct ifaddrs *i = ifa; i && !hit; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != family) continue;
    if (family == AF_INET)
      hit = memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr, 4) == 0;
    else
      hit = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, addr, 16) == 0;
  }
  freeifaddrs(ifa);
  return hit;
}

static int original_dst(int fd, int family, sbxtab_conn *c) {
  struct sockaddr_storage ss;
  socklen_t l = sizeof ss;
  if (family == AF_INET) {
    if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &ss, &l) < 0 || ss.ss_family != AF_INET) return -1;
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    memcpy(c->dst, &a->sin_addr, 4);
    c->dst_port = ntohs(a->sin_port);
  } else {
    if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &l) < 0 || ss.ss_family != AF_INET6)
      return -1;
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    memcpy(c->dst, &a->sin6_addr, 16);
    c->dst_port = ntohs(a->sin6_port);
  }
  return 0;
}

/* Looks at the first bytes without taking them (MSG_PEEK) until
 * peek_classify decides, PEEK_MAX bytes are there, the client stops
 * sending, or the deadline passes: the relay then carries them on
 * unchanged (spliced, or read by TLS/HTTP code). SO_RCVLOWAT makes poll
 * wait for one byte more than already peeked, so waiting costs nothing. */
static size_t read_head(int fd, unsigned char *buf, long end, peek_result *pr) {
  size_t n = 0;
  memset(pr, 0, sizeof *pr);
  pr->kind = PEEK_MORE;
  while (n < PEEK_MAX) {
    long left = end - now_ms();
    if (left <= 0) break;
    int lowat = (int)n + 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t k = recv(fd, buf, PEEK_MAX, MSG_PEEK);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0 || (size_t)k <= n) break; /* EOF, or nothing new (half-closed) */
    n = (size_t)k;
    if (peek_classify(buf, n, pr) != PEEK_MORE) break;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
  return n;
}

static int connect_wait(int fd, const struct sockaddr *a, socklen_t al, long end) {
  if (connect(fd, a, al) < 0 && errno != EINPROGRESS) return -1;
  for (;;) {
    long left = end - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {fd, POLLOUT, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) return -1;
    return 0;
  }
}

/* The upstream connection: to dst directly, or through the SOCKS5 server. */
static int open_upstream(proxy *p, sbxtab_conn *c) {
  long end = now_ms() + CONNECT_TIMEOUT_MS;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  struct addrinfo *ai = NULL;
  if (c->socks_addr) {
    char host[256];
    const char *colon = strrchr(c->socks_addr, ':');
    const char *h = c->socks_addr;
    size_t hl = colon ? (size_t)(colon - h) : 0;
    if (hl && h[0] == '[' && h[hl - 1] == ']') {
      h++;
      hl -= 2;
    }
    if (!colon || hl == 0 || hl >= sizeof host) return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai) return -1;
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    sl = ai->ai_addrlen;
    freeaddrinfo(ai);
  } else if (c->family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    memcpy(&a->sin_addr, c->dst, 4);
    a->sin_port = htons(c->dst_port);
    sl = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    memcpy(&a->sin6_addr, c->dst, 16);
    a->sin6_port = htons(c->dst_port);
    sl = sizeof *a;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (sbxtab_conn_set_upstream(p->t, c, fd) < 0 ||
      connect_wait(fd, (struct sockaddr *)&ss, sl, end) < 0)
    goto fail;
  if (c->socks_addr) {
    /* A domain-matched flow goes by name (ATYP domain): the upstream
     * proxy resolves it, as the sandbox's resolver did. */
    const char *name = c->why == DECIDE_DOMAIN ? c->name : NULL;
    if (socks_connect(fd, c->socks_user, c->socks_pass, name, c->family, c->dst, c->dst_port,
                      (int)(end - now_ms())) < 0)
      goto fail;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
fail:
  sbxtab_conn_set_upstream(p->t, c, -1);
  close(fd);
  return -1;
}

/* One direction of the relay: src -> pipe -> dst. */
typedef struct dir {
  int src, dst, pipe[2];
  size_t pending; /* bytes in the pipe */
  size_t cap;     /* the pipe's size (F_GETPIPE_SZ: what the kernel gave) */
  int eof, done;
  uint64_t *counter;
} dir;

/* Moves what it can without blocking. -1 on a hard error. */
static int pump(dir *d, short src_ev, short dst_ev) {
  if (!d->eof && (src_ev & (POLLIN | POLLHUP | POLLERR)) && d->pending < d->cap) {
    ssize_t k = splice(d->src, NULL, d->pipe[1], NULL, d->cap - d->pending,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (k > 0)
      d->pending += (size_t)k;
    else if (k == 0)
      d->eof = 1;
    else if (errno != EAGAIN && errno != EINTR) {
      if (errno == ECONNRESET || errno == ENOTCONN) return -1;
      return -1;
    }
  }
  if (d->pending && (dst_ev & (POLLOUT | POLLERR | POLLHUP))) {
    ssize_t k =
        splice(d->pipe[0], NULL, d->dst, NULL, d->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (k > 0) {
      d->pending -= (size_t)k;
      __atomic_add_fetch(d->counter, (uint64_t)k, __ATOMIC_RELAXED);
    } else if (k < 0 && errno != EAGAIN && errno != EINTR)
      return -1;
  }
  if (d->eof && !d->pending && !d->done) {
    shutdown(d->dst, SHUT_WR); /* half-close passes through */
    d->done = 1;
  }
  return 0;
}

static void relay(int cfd, int ufd, sbxtab_conn *c) {
  dir d[2] = {{.src = cfd, .dst = ufd, .pipe = {-1, -1}, .counter = &c->bytes_out},
              {.src = ufd, .dst = cfd, .pipe = {-1, -1}, .counter = &c->bytes_in}};
  for (int i = 0; i < 2; i++) {
    if (pipe2(d[i].pipe, O_CLOEXEC | O_NONBLOCK) < 0) goto out;
    fcntl(d[i].pipe[1], F_SETPIPE_SZ, PIPE_SIZE); /* may be refused: the size stays */
    int sz = fcntl(d[i].pipe[1], F_GETPIPE_SZ);
    d[i].cap = sz > 0 ? (size_t)sz : 4096;
  }
  while (!(d[0].done && d[1].done)) {
    struct pollfd p[2] = {{cfd, 0, 0}, {ufd, 0, 0}};
    /* p[0] is client: d[0] reads it, d[1] writes it. */
    if (!d[0].eof && d[0].pending < d[0].cap) p[0].events |= POLLIN;
    if (d[1].pending) p[0].events |= POLLOUT;
    if (!d[1].eof && d[1].pending < d[1].cap) p[1].events |= POLLIN;
    if (d[0].pending) p[1].events |= POLLOUT;
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (((p[0].revents | p[1].revents) & POLLNVAL)) break;
    if (pump(&d[0], p[0].revents, p[1].revents) < 0) break;
    if (pump(&d[1], p[1].revents, p[0].revents) < 0) break;
    /* A peer gone both ways (RST, or our cut) with nothing to read. */
    if ((p[0].revents & POLLERR) || (p[1].revents & POLLERR)) break;
    /* Hung up both ways while the other side still owes it bytes: nobody
     * can receive them (a RST, or a cut), and poll would not wait again. */
    if ((p[0].revents & POLLHUP) && d[0].eof && !d[1].done) break;
    if ((p[1].revents & POLLHUP) && d[1].eof && !d[0].done) break;
  }
out:
  for (int i = 0; i < 2; i++) {
    if (d[i].pipe[0] >= 0) close(d[i].pipe[0]);
    if (d[i].pipe[1] >= 0) close(d[i].pipe[1]);
  }
}

static void *conn_main(void *arg) {
  job *j = arg;
  proxy *p = j->p;
  sbxtab_conn *c = &j->c;
  int needs_name = 0, ufd = -1;
  unsigned char *head = NULL;
  peek_result pr;
  memset(&pr, 0, sizeof pr);
  int listed = sbxtab_conn_begin(p->t, c, &needs_name);
  if (!listed) goto refuse;
  if (needs_name) {
    head = malloc(PEEK_MAX);
    if (!head) goto refuse;
    read_head(j->fd, head, now_ms() + p->peek_ms, &pr);
    if ((pr.kind == PEEK_TLS || pr.kind == PEEK_HTTP) && pr.name[0])
      snprintf(c->name, sizeof c->name, "%s", pr.name);
  }
  if (sbxtab_conn_decide(p->t, c) < 0) goto refuse;
  ufd = open_upstream(p, c);
  if (ufd < 0) goto refuse;
  free(head);
  head = NULL;
  /* the request-by-request relay of the two cases below (TLS: cssl/ussl) */
  httpx_conn x = {.cfd = j->fd,
                  .ufd = ufd,
                  .name = c->name,
                  .hnames = (const char *const *)c->hnames,
                  .hvalues = (const char *const *)c->hvalues,
                  .nh = c->nh,
                  .secrets = p->secrets,
                  .bytes_out = &c->bytes_out,
                  .bytes_in = &c->bytes_in};
  if (pr.kind == PEEK_HTTP && (c->why == DECIDE_DOMAIN || c->nh)) {
    /* Plain HTTP named by a domain, or with header rules: every request
     * is looked at (its Host, the rule's headers). */
    httpx_relay(&x);
  } else if (pr.kind == PEEK_TLS && c->nh && p->mitm) {
    /* HTTPS to a domain with header rules: intercepted, and only then. */
    x.cssl = tlsmitm_server(p->mitm, c->name, j->fd);
    x.ussl = tlsmitm_client(p->mitm, c->name, ufd);
    if (x.cssl && x.ussl) httpx_relay(&x);
    SSL_free(x.cssl);
    SSL_free(x.ussl);
  } else {
    relay(j->fd, ufd, c);
  }
  sbxtab_conn_end(p->t, c);
  sbxtab_conn_set_upstream(p->t, c, -1);
  if (ufd >= 0) close(ufd);
  close(j->fd);
  goto out;
refuse:
  if (listed) sbxtab_conn_end(p->t, c);
  rst_close(j->fd);
out:
  free(head);
  free(j);
  pthread_mutex_lock(&p->mu);
  p->active--;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void on_accept(proxy *p, int lfd) {
  struct sockaddr_storage src;
  socklen_t sl = sizeof src;
  int fd = accept4(lfd, (struct sockaddr *)&src, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  job *j = calloc(1, sizeof *j);
  if (!j) {
    rst_close(fd);
    return;
  }
  j->p = p;
  j->fd = fd;
  sbxtab_conn *c = &j->c;
  c->family = src.ss_family;
  c->fd_client = fd;
  c->fd_upstream = -1;
  if (src.ss_family == AF_INET)
    memcpy(c->src, &((struct sockaddr_in *)&src)->sin_addr, 4);
  else
    memcpy(c->src, &((struct sockaddr_in6 *)&src)->sin6_addr, 16);
  /* Not redirected (a direct connection to the proxy's port), or the
   * original destination is the engine's own: refused outright. */
  if (original_dst(fd, c->family, c) < 0 || is_local(c->family, c->dst)) {
    free(j);
    rst_close(fd);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  pthread_mutex_lock(&p->mu);
  int ok = !p->stopping;
  if (ok) p->active++;
  pthread_mutex_unlock(&p->mu);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 256 * 1024);
  pthread_t th;
  if (!ok || pthread_create(&th, &a, conn_main, j) != 0) {
    if (ok) {
      pthread_mutex_lock(&p->mu);
      p->active--;
      pthread_cond_broadcast(&p->cv);
      pthread_mutex_unlock(&p->mu);
    }
    free(j);
    rst_close(fd);
  }
  pthread_attr_destroy(&a);
}

static void *loop(void *arg) {
  proxy *p = arg;
  struct pollfd pf[1 + MAX_BINDS];
  size_t np = 0;
  pf[np++] = (struct pollfd){p->stopfd, POLLIN, 0};
  for (size_t i = 0; i < p->nbinds; i++) pf[np++] = (struct pollfd){p->lfd[i], POLLIN, 0};
  for (;;) {
    if (poll(pf, np, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pf[0].revents) break;
    for (size_t i = 1; i < np; i++)
      if (pf[i].revents & POLLIN) on_accept(p, pf[i].fd);
  }
  return NULL;
}

int proxy_start(sbxtab *t, const struct sockaddr_storage *binds, size_t nbinds,
                unsigned peek_timeout_s, asbn_secrets *secrets, tlsmitm *mitm, proxy **out,
                char *err, size_t errlen) {
  *out = NULL;
  if (nbinds == 0 || nbinds > MAX_BINDS) {
    snprintf(err, errlen, "proxy: bad listen addresses");
    return -1;
  }
  proxy *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "proxy: out of memory");
    return -1;
  }
  p->t = t;
  p->secrets = secrets;
  p->mitm = mitm;
  p->nbinds = nbinds;
  p->peek_ms = (peek_timeout_s ? peek_timeout_s : 10) * 1000u;
  for (size_t i = 0; i < MAX_BINDS; i++) p->lfd[i] = -1;
  uint16_t port =
      ntohs(binds[0].ss_family == AF_INET ? ((const struct sockaddr_in *)&binds[0])->sin_port
                                          : ((const struct sockaddr_in6 *)&binds[0])->sin6_port);
  for (size_t i = 0; i < nbinds; i++) {
    struct sockaddr_storage a = binds[i];
    socklen_t al;
    if (a.ss_family == AF_INET) {
      ((struct sockaddr_in *)&a)->sin_port = htons(port);
      al = sizeof(struct sockaddr_in);
    } else {
      ((struct sockaddr_in6 *)&a)->sin6_port = htons(port);
      al = sizeof(struct sockaddr_in6);
    }
    int fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0) {
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (a.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, al) < 0 || listen(fd, 512) < 0) {
      snprintf(err, errlen, "proxy: cannot listen on port %u: %s", port, strerror(errno));
      if (fd >= 0) close(fd);
      goto fail;
    }
    p->lfd[i] = fd;
    if (!port) {
      struct sockaddr_storage b;
      socklen_t bl = sizeof b;
      getsockname(fd, (struct sockaddr *)&b, &bl);
      port = ntohs(b.ss_family == AF_INET ? ((struct sockaddr_in *)&b)->sin_port
                                          : ((struct sockaddr_in6 *)&b)->sin6_port);
    }
  }
  p->port = port;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->stopfd = eventfd(0, EFD_CLOEXEC);
  if (p->stopfd < 0 || pthread_create(&p->th, NULL, loop, p) != 0) {
    snprintf(err, errlen, "proxy: cannot start: %s", strerror(errno));
    if (p->stopfd >= 0) close(p->stopfd);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    goto fail;
  }
  *out = p;
  return 0;
fail:
  for (size_t i = 0; i < MAX_BINDS; i++)
    if (p->lfd[i] >= 0) close(p->lfd[i]);
  free(p);
  return -1;
}

uint16_t proxy_port(const proxy *p) {
  return p->port;
}

void proxy_stop(proxy *p) {
  if (!p) return;
  uint64_t one = 1;
  if (write(p->stopfd, &one, sizeof one) < 0) {
  }
  pthread_join(p->th, NULL);
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  while (p->active) {
    pthread_mutex_unlock(&p->mu);
    sbxtab_cut_all(p->t); /* again and again: a connection may list itself late */
    pthread_mutex_lock(&p->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    if (p->active) pthread_cond_timedwait(&p->cv, &p->mu, &ts);
  }
  pthread_mutex_unlock(&p->mu);
  for (size_t i = 0; i < p->nbinds; i++) close(p->lfd[i]);
  close(p->stopfd);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
