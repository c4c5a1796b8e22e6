/* The sandboxes' DNS resolver (resolver.h). SPDX-License-Identifier: Apache-2.0 */
#include "resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#define MAX_BINDS 2
#define MAX_UPS ASBN_EGRESS_MAX_UPSTREAMS
#define MAX_INFLIGHT 256 /* queries being forwarded at once (UDP + TCP) */
#define MAX_TCP_CLIENTS 128
#define UP_TIMEOUT_MS 2500 /* per upstream try */
#define TCP_CLIENT_IDLE_S 10

struct resolver {
  sbxtab *t;
  int udp[MAX_BINDS], tcp[MAX_BINDS];
  size_t nbinds;
  struct sockaddr_storage ups[MAX_UPS];
  size_t nups;
  uint16_t port;
  int stopfd;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned inflight;
  int tcpfds[MAX_TCP_CLIENTS]; /* open TCP clients, -1 free: shut down at stop */
  int stopping;
};

int resolver_parse_addr(const char *s, uint16_t def, struct sockaddr_storage *ss) {
  char host[INET6_ADDRSTRLEN + 2];
  unsigned long port = def;
  const char *p = NULL;
  memset(ss, 0, sizeof *ss);
  if (s[0] == '[') {
    const char *rb = strchr(s, ']');
    if (!rb || (size_t)(rb - s - 1) >= sizeof host) return -1;
    memcpy(host, s + 1, (size_t)(rb - s - 1));
    host[rb - s - 1] = 0;
    if (rb[1] == ':')
      p = rb + 2;
    else if (rb[1])
      return -1;
  } else {
    const char *c = strchr(s, ':');
    if (c && strchr(c + 1, ':')) c = NULL; /* a bare IPv6 address */
    size_t n = c ? (size_t)(c - s) : strlen(s);
    if (n >= sizeof host) return -1;
    memcpy(host, s, n);
    host[n] = 0;
    if (c) p = c + 1;
  }
  if (p) {
    char *end;
    errno = 0;
    port = strtoul(p, &end, 10);
    if (!*p || *end || errno || port == 0 || port > 65535) return -1;
  }
  struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    return 0;
  }
  return -1;
}

size_t resolver_read_conf(const char *path, struct sockaddr_storage *ups, size_t max) {
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  char line[512];
  size_t n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    char addr[128];
    if (sscanf(line, " nameserver %127s", addr) == 1) {
      char *pct = strchr(addr, '%'); /* fe80::1%eth0: scope ids are not kept */
      if (pct) continue;
      if (resolver_parse_addr(addr, 53, &ups[n]) == 0) n++;
    }
  }
  fclose(f);
  return n;
}

static socklen_t ss_len(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static const uint8_t *ss_addr(const struct sockaddr_storage *ss, int *family) {
  *family = ss->ss_family;
  if (ss->ss_family == AF_INET) return (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
  return (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
}

static long ms_left(const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

static int wait_fd(int fd, short ev, const struct timespec *deadline) {
  for (;;) {
    long ms = ms_left(deadline);
    if (ms <= 0) return -1;
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, (int)ms);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

static void deadline_in(struct timespec *d, long ms) {
  clock_gettime(CLOCK_MONOTONIC, d);
  d->tv_sec += ms / 1000;
  d->tv_nsec += (ms % 1000) * 1000000;
  if (d->tv_nsec >= 1000000000) {
    d->tv_sec++;
    d->tv_nsec -= 1000000000;
  }
}

static int full_io(int fd, void *buf, size_t n, int wr, const struct timespec *dl) {
  size_t at = 0;
  while (at < n) {
    if (wait_fd(fd, wr ? POLLOUT : POLLIN, dl) < 0) return -1;
    ssize_t r = wr ? send(fd, (char *)buf + at, n - at, MSG_NOSIGNAL)
                   : recv(fd, (char *)buf + at, n - at, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return -1;
    at += (size_t)r;
  }
  return 0;
}

/* One try of wire[0..n) over UDP or TCP to up; the reply (malloc'ed) must
 * carry id. */
static int ask(const struct sockaddr_storage *up, int tcp, const uint8_t *wire, size_t n,
               uint16_t id, uint8_t **out, size_t *outlen) {
  int fd =
      socket(up->ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  struct timespec dl;
  deadline_in(&dl, UP_TIMEOUT_MS);
  uint8_t *buf = NULL;
  int rc = -1;
  if (connect(fd, (const struct sockaddr *)up, ss_len(up)) < 0 && errno != EINPROGRESS) goto out;
  if (tcp) {
    if (wait_fd(fd, POLLOUT, &dl) < 0) goto out;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) goto out;
    uint8_t lp[2] = {(uint8_t)(n >> 8), (uint8_t)n};
    if (full_io(fd, lp, 2, 1, &dl) || full_io(fd, (void *)wire, n, 1, &dl)) goto out;
    if (full_io(fd, lp, 2, 0, &dl)) goto out;
    size_t len = (size_t)lp[0] << 8 | lp[1];
    if (len < 12 || !(buf = malloc(len)) || full_io(fd, buf, len, 0, &dl)) goto out;
    if (((uint16_t)buf[0] << 8 | buf[1]) != id) goto out;
    *outlen = len;
  } else {
    if (send(fd, wire, n, MSG_NOSIGNAL) != (ssize_t)n) goto out;
    if (!(buf = malloc(65535))) goto out;
    for (;;) {
      if (wait_fd(fd, POLLIN, &dl) < 0) goto out;
      ssize_t r = recv(fd, buf, 65535, 0);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r < 0) goto out;
      /* A connected UDP socket only hears the upstream; still, a reply
       * with another id is not ours: keep listening until the deadline. */
      if (r >= 12 && ((uint16_t)buf[0] << 8 | buf[1]) == id) {
        *outlen = (size_t)r;
        break;
      }
    }
  }
  *out = buf;
  buf = NULL;
  rc = 0;
out:
  free(buf);
  close(fd);
  return rc;
}

/* Forwards the query (its id replaced by a random one) and checks the
 * reply; *out carries the sandbox's id again. 0, or -1: SERVFAIL. */
static int forward(resolver *r, const uint8_t *q, size_t n, const dnsmsg_query *pq, int tcp,
                   uint8_t **out, size_t *outlen, dnsmsg_addr *addrs, size_t *naddrs) {
  uint8_t *w = malloc(n);
  if (!w) return -1;
  memcpy(w, q, n);
  uint16_t id;
  if (getrandom(&id, sizeof id, 0) != sizeof id) id = (uint16_t)rand();
  w[0] = (uint8_t)(id >> 8);
  w[1] = (uint8_t)id;
  dnsmsg_query fq = *pq;
  fq.id = id;
  int rc = -1;
  for (size_t i = 0; i < r->nups && rc < 0; i++) {
    int use_tcp = tcp;
    for (int attempt = 0; attempt < 2 && rc < 0; attempt++) {
      uint8_t *resp = NULL;
      size_t rl = 0;
      if (ask(&r->ups[i], use_tcp, w, n, id, &resp, &rl) < 0) continue;
      int tc = 0;
      if (dnsmsg_parse_reply(resp, rl, &fq, addrs, DNSMSG_MAX_ADDRS, naddrs, &tc) < 0) {
        free(resp);
        continue;
      }
      if (tc && !use_tcp && tcp) { /* never for UDP clients: they retry over TCP */
        free(resp);
        use_tcp = 1;
        continue;
      }
      resp[0] = q[0];
      resp[1] = q[1];
      *out = resp;
      *outlen = rl;
      rc = 0;
    }
  }
  free(w);
  return rc;
}

/* The reply to one query from src; malloc'ed, or NULL: say nothing. */
static uint8_t *handle(resolver *r, const struct sockaddr_storage *src, const uint8_t *q, size_t n,
                       int tcp, size_t *outlen) {
  dnsmsg_query pq;
  if (dnsmsg_parse_query(q, n, &pq) < 0) return NULL;
  int family;
  const uint8_t *sa = ss_addr(src, &family);
  int ok = sbxtab_dns_check(r->t, family, sa, pq.name, pq.name_ok);
  uint8_t *out = NULL;
  if (ok == 1 && pq.name_ok && dnsmsg_is_localhost(pq.name)) {
    /* RFC 6761 6.3: localhost names are loopback, answered here and never
     * asked upstream (nor recorded: no domain allowance for them). A
     * sandbox's loopback is its own, where its portal listens on
     * 127.0.0.1 and ::1 (core/engine/portal.c), so
     * https://<port>-<id>.localhost:<engine port> resolves for every
     * client, also those without nss-myhostname (musl, an imported
     * image's own libc, Go's resolver). */
    if (dnsmsg_loopback_reply(q, n, &out, outlen) == 0) return out;
    dnsmsg_error_reply(q, n, 2 /* SERVFAIL */, &out, outlen);
    return out;
  }
  if (ok == 1) {
    dnsmsg_addr addrs[DNSMSG_MAX_ADDRS];
    size_t na = 0;
    if (forward(r, q, n, &pq, tcp, &out, outlen, addrs, &na) == 0) {
      if (pq.name_ok) sbxtab_dns_record(r->t, family, sa, pq.name, addrs, na);
      return out;
    }
    dnsmsg_error_reply(q, n, 2 /* SERVFAIL */, &out, outlen);
    return out;
  }
  dnsmsg_error_reply(q, n, 5 /* REFUSED */, &out, outlen);
  return out;
}

static int enter(resolver *r) {
  pthread_mutex_lock(&r->mu);
  int ok = !r->stopping && r->inflight < MAX_INFLIGHT;
  if (ok) r->inflight++;
  pthread_mutex_unlock(&r->mu);
  return ok;
}

static void leave(resolver *r) {
  pthread_mutex_lock(&r->mu);
  r->inflight--;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

typedef struct udp_job {
  resolver *r;
  int fd;
  struct sockaddr_storage src;
  size_t n;
  uint8_t q[];
} udp_job;

static void *udp_worker(void *arg) {
  udp_job *j = arg;
  size_t ol = 0;
  uint8_t *out = handle(j->r, &j->src, j->q, j->n, 0, &ol);
  if (out) sendto(j->fd, out, ol, MSG_NOSIGNAL, (struct sockaddr *)&j->src, ss_len(&j->src));
  free(out);
  resolver *r = j->r;
  free(j);
  leave(r);
  return NULL;
}

typedef struct tcp_job {
  resolver *r;
  int fd, slot;
  struct sockaddr_storage src;
} tcp_job;

static void *tcp_worker(void *arg) {
  tcp_job *j = arg;
  resolver *r = j->r;
  uint8_t *q = malloc(65535);
  while (q) {
    struct timespec dl;
    deadline_in(&dl, TCP_CLIENT_IDLE_S * 1000L);
    uint8_t lp[2];
    if (full_io(j->fd, lp, 2, 0, &dl)) break;
    size_t n = (size_t)lp[0] << 8 | lp[1];
    if (n < 12 || full_io(j->fd, q, n, 0, &dl)) break;
    size_t ol = 0;
    uint8_t *out = handle(r, &j->src, q, n, 1, &ol);
    if (!out) break;
    uint8_t ol2[2] = {(uint8_t)(ol >> 8), (uint8_t)ol};
    deadline_in(&dl, TCP_CLIENT_IDLE_S * 1000L);
    int bad = full_io(j->fd, ol2, 2, 1, &dl) || full_io(j->fd, out, ol, 1, &dl);
    free(out);
    if (bad) break;
  }
  free(q);
  pthread_mutex_lock(&r->mu);
  r->tcpfds[j->slot] = -1;
  pthread_mutex_unlock(&r->mu);
  close(j->fd);
  free(j);
  leave(r);
  return NULL;
}

static int spawn(void *(*fn)(void *), void *arg) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 256 * 1024);
  pthread_t th;
  int rc = pthread_create(&th, &a, fn, arg);
  pthread_attr_destroy(&a);
  return rc;
}

static void on_udp(resolver *r, int fd) {
  uint8_t buf[65535];
  struct sockaddr_storage src;
  socklen_t sl = sizeof src;
  ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&src, &sl);
  if (n < 12) return;
  if (!enter(r)) return; /* too many at once: the client retries */
  udp_job *j = malloc(sizeof *j + (size_t)n);
  if (!j) {
    leave(r);
    return;
  }
  j->r = r;
  j->fd = fd;
  j->src = src;
  j->n = (size_t)n;
  memcpy(j->q, buf, (size_t)n);
  if (spawn(udp_worker, j) != 0) {
    free(j);
    leave(r);
  }
}

static void on_tcp(resolver *r, int lfd) {
  struct sockaddr_storage src;
  socklen_t sl = sizeof src;
  int fd = accept4(lfd, (struct sockaddr *)&src, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  int slot = -1;
  pthread_mutex_lock(&r->mu);
  if (!r->stopping && r->inflight < MAX_INFLIGHT)
    for (int i = 0; i < MAX_TCP_CLIENTS; i++)
      if (r->tcpfds[i] < 0) {
        slot = i;
        r->tcpfds[i] = fd;
        r->inflight++;
        break;
      }
  pthread_mutex_unlock(&r->mu);
  if (slot < 0) {
    close(fd);
    return;
  }
  tcp_job *j = malloc(sizeof *j);
  if (j) {
    j->r = r;
    j->fd = fd;
    j->slot = slot;
    j->src = src;
  }
  if (!j || spawn(tcp_worker, j) != 0) {
    free(j);
    pthread_mutex_lock(&r->mu);
    r->tcpfds[slot] = -1;
    pthread_mutex_unlock(&r->mu);
    close(fd);
    leave(r);
  }
}

static void *loop(void *arg) {
  resolver *r = arg;
  struct pollfd p[1 + 2 * MAX_BINDS];
  size_t np = 0;
  p[np++] = (struct pollfd){r->stopfd, POLLIN, 0};
  for (size_t i = 0; i < r->nbinds; i++) {
    p[np++] = (struct pollfd){r->udp[i], POLLIN, 0};
    p[np++] = (struct pollfd){r->tcp[i], POLLIN, 0};
  }
  for (;;) {
    if (poll(p, np, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    for (size_t i = 1; i < np; i++) {
      if (!(p[i].revents & POLLIN)) continue;
      if (i % 2)
        on_udp(r, p[i].fd);
      else
        on_tcp(r, p[i].fd);
    }
  }
  return NULL;
}

static int bind_one(const struct sockaddr_storage *b, uint16_t port, int type, int *fd) {
  struct sockaddr_storage a = *b;
  if (a.ss_family == AF_INET)
    ((struct sockaddr_in *)&a)->sin_port = htons(port);
  else
    ((struct sockaddr_in6 *)&a)->sin6_port = htons(port);
  *fd = socket(a.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (*fd < 0) return -1;
  int one = 1;
  if (type == SOCK_STREAM) setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (a.ss_family == AF_INET6) setsockopt(*fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(*fd, (struct sockaddr *)&a, ss_len(&a)) < 0 ||
      (type == SOCK_STREAM && listen(*fd, 128) < 0)) {
    close(*fd);
    *fd = -1;
    return -1;
  }
  return 0;
}

static uint16_t bound_port(int fd) {
  struct sockaddr_storage a;
  socklen_t l = sizeof a;
  if (getsockname(fd, (struct sockaddr *)&a, &l) < 0) return 0;
  return ntohs(a.ss_family == AF_INET ? ((struct sockaddr_in *)&a)->sin_port
                                      : ((struct sockaddr_in6 *)&a)->sin6_port);
}

static void close_all(resolver *r) {
  for (size_t i = 0; i < MAX_BINDS; i++) {
    if (r->udp[i] >= 0) close(r->udp[i]);
    if (r->tcp[i] >= 0) close(r->tcp[i]);
    r->udp[i] = r->tcp[i] = -1;
  }
}

int resolver_start(sbxtab *t, const struct sockaddr_storage *binds, size_t nbinds,
                   const struct sockaddr_storage *ups, size_t nups, resolver **out, char *err,
                   size_t errlen) {
  *out = NULL;
  if (nbinds == 0 || nbinds > MAX_BINDS || nups == 0 || nups > MAX_UPS) {
    snprintf(err, errlen, "resolver: %s", nups ? "bad listen addresses" : "no upstream DNS server");
    return -1;
  }
  resolver *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errlen, "resolver: out of memory");
    return -1;
  }
  r->t = t;
  for (size_t i = 0; i < MAX_BINDS; i++) r->udp[i] = r->tcp[i] = -1;
  for (size_t i = 0; i < MAX_TCP_CLIENTS; i++) r->tcpfds[i] = -1;
  memcpy(r->ups, ups, nups * sizeof *ups);
  r->nups = nups;
  r->nbinds = nbinds;
  uint16_t want =
      ntohs(binds[0].ss_family == AF_INET ? ((const struct sockaddr_in *)&binds[0])->sin_port
                                          : ((const struct sockaddr_in6 *)&binds[0])->sin6_port);
  /* One port for UDP and TCP on every address: with port 0, try a few
   * picks of the kernel's until TCP gets the same one. */
  int ok = 0;
  for (int attempt = 0; attempt < 32 && !ok; attempt++) {
    close_all(r);
    uint16_t port = want;
    ok = 1;
    for (size_t i = 0; i < nbinds && ok; i++) {
      if (bind_one(&binds[i], port, SOCK_DGRAM, &r->udp[i]) < 0)
        ok = 0;
      else if (!port)
        port = bound_port(r->udp[i]);
      if (ok && bind_one(&binds[i], port, SOCK_STREAM, &r->tcp[i]) < 0) ok = 0;
    }
    r->port = port;
    if (!ok && want) break;
  }
  if (!ok) {
    snprintf(err, errlen, "resolver: cannot bind port %u: %s", want, strerror(errno));
    goto fail;
  }
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->stopfd = eventfd(0, EFD_CLOEXEC);
  if (r->stopfd < 0 || pthread_create(&r->th, NULL, loop, r) != 0) {
    snprintf(err, errlen, "resolver: cannot start: %s", strerror(errno));
    if (r->stopfd >= 0) close(r->stopfd);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    goto fail;
  }
  *out = r;
  return 0;
fail:
  close_all(r);
  free(r);
  return -1;
}

uint16_t resolver_port(const resolver *r) {
  return r->port;
}

void resolver_stop(resolver *r) {
  if (!r) return;
  uint64_t one = 1;
  if (write(r->stopfd, &one, sizeof one) < 0) { /* the loop also ends on close below */
  }
  pthread_join(r->th, NULL);
  pthread_mutex_lock(&r->mu);
  r->stopping = 1;
  for (int i = 0; i < MAX_TCP_CLIENTS; i++)
    if (r->tcpfds[i] >= 0) shutdown(r->tcpfds[i], SHUT_RDWR);
  while (r->inflight) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  close_all(r);
  close(r->stopfd);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}
