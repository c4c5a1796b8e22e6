/* Portals: a sandbox reaching other sandboxes' public URLs.
 *
 * A sandbox's URL, https://<port>-<id>.<domain> with the engine's domain
 * "localhost:<engine port>", is what E2B's public proxy serves; code in
 * another sandbox (E2B's sidecar tests, a client sandbox calling a server
 * sandbox) opens it as any outside client would. Every resolver takes
 * *.localhost to loopback (RFC 6761; curl does it itself, systemd-resolved
 * and nss-myhostname too), and a sandbox's loopback is its own network
 * namespace's. So the engine listens there: a portal is a listening
 * socket on 127.0.0.1:<engine port> inside each sandbox's network
 * namespace, made by a short-lived thread that enters the namespace
 * (setns) for the socket() and bind() only, and served by the engine's
 * front (front_portal_add) like its own port, plain HTTP and TLS. Nothing
 * is routed through the host's loopback and no packet leaves the machine;
 * it works the same with --no-network (loopback only: no eth0, no
 * egress services) and with the network on.
 *
 * What comes in through a portal is sandbox traffic only: server.c sends
 * it to the router (router_match: <port>-<id>.<domain>, or E2B's routing
 * headers) and refuses everything else with 403 (the control plane, the
 * engine's loopback URLs, signed /files without a sandbox named). The
 * router then applies exactly what it applies to any client (envd's access
 * token, allowPublicTraffic's traffic token, maskRequestHost) and, because
 * the request is known to be the sending sandbox's (the front gives its
 * connections an abstract AF_UNIX address holding its tag, which no TCP
 * client can have), that sandbox's egress policy: internet off refuses it
 * unless an allowOut domain names the host, and network.rules for the host
 * set their headers (secrets resolved) as the egress proxy would.
 *
 * The socket holds the namespace, so it closes when the sandbox's
 * processes go (kill, pause without memory: sbxnet_detach) and is opened
 * again for the namespace a resume boots (sbxnet_attach). A sandbox that
 * listens on 127.0.0.1:<engine port> itself before its portal is opened
 * keeps its port and gets no portal (logged). With --no-network a portal
 * also answers DNS for localhost names on 127.0.0.1:53 (below).
 * SPDX-License-Identifier: Apache-2.0 */
#include "portal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/egress/dnsmsg.h"
#include "registry.h"
#include "util/log.h"

#define TAG_PREFIX "asb-portal "

typedef struct pt_entry {
  char id[64];
  ino_t ns;    /* the network namespace it listens in */
  int fd, fd6; /* 127.0.0.1 and [::1] (-1: none) */
  int dns;     /* UDP 127.0.0.1:53 (--no-network only; -1: none) */
} pt_entry;

struct portal {
  front *f;
  pthread_mutex_t mu;
  pt_entry *v;
  size_t n, cap;
  /* the loopback DNS (below): started with the first socket */
  int ep, stop_fd, dns_running;
  pthread_t dns_th;
};

portal *portal_new(front *f) {
  portal *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->f = f;
  p->ep = p->stop_fd = -1;
  pthread_mutex_init(&p->mu, NULL);
  return p;
}

void portal_free(portal *p) {
  if (!p) return;
  if (p->dns_running) {
    uint64_t one = 1;
    if (write(p->stop_fd, &one, sizeof one) < 0) { /* the thread also ends on its close */
    }
    pthread_join(p->dns_th, NULL);
  }
  for (size_t i = 0; i < p->n; i++)
    if (p->v[i].dns >= 0) close(p->v[i].dns);
  if (p->ep >= 0) close(p->ep);
  if (p->stop_fd >= 0) close(p->stop_fd);
  pthread_mutex_destroy(&p->mu);
  free(p->v);
  free(p);
}

/* ---- the loopback DNS (--no-network) -----------------------------------
 * With the network on, a sandbox's DNS is the engine's resolver, which
 * answers localhost names itself (core/net/egress/resolver.c). With
 * --no-network a sandbox has no DNS server at all, and a client that
 * resolves only through DNS (musl, an imported image's own libc without
 * nss-myhostname, the busybox template, Go's pure resolver) could not
 * resolve *.localhost, the names of other sandboxes' URLs. So each portal
 * then also has a UDP socket on 127.0.0.1:53 in the namespace (where the
 * templates' resolv.conf, and musl's and glibc's default, point), served
 * by one engine thread: localhost names get 127.0.0.1 / ::1 (RFC 6761),
 * every other query REFUSED (nothing is forwarded: no network). UDP only:
 * the answers are small, nothing is ever truncated. A sandbox that binds
 * 127.0.0.1:53 itself first keeps it. */

static void dns_answer(int fd) {
  for (int k = 0; k < 64; k++) { /* a burst, then the others' turn */
    uint8_t q[1500];
    struct sockaddr_storage src;
    socklen_t sl = sizeof src;
    ssize_t n = recvfrom(fd, q, sizeof q, MSG_DONTWAIT, (struct sockaddr *)&src, &sl);
    if (n < 0) return;
    dnsmsg_query pq;
    if (n < 12 || dnsmsg_parse_query(q, (size_t)n, &pq) < 0) continue; /* not a query: dropped */
    uint8_t *out = NULL;
    size_t ol = 0;
    if (!(pq.name_ok && dnsmsg_is_localhost(pq.name) &&
          dnsmsg_loopback_reply(q, (size_t)n, &out, &ol) == 0))
      dnsmsg_error_reply(q, (size_t)n, 5 /* REFUSED */, &out, &ol);
    if (out) sendto(fd, out, ol, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&src, sl);
    free(out);
  }
}

static void *dns_thread(void *arg) {
  portal *p = arg;
  for (;;) {
    struct epoll_event ev[32];
    int n = epoll_wait(p->ep, ev, 32, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return NULL;
    for (int i = 0; i < n; i++) {
      int fd = ev[i].data.fd;
      if (fd == p->stop_fd) return NULL;
      /* under mu, and only if the fd is still a portal's: portal_close
       * closes them under mu, and a number closed after epoll_wait saw it
       * may be another file by now */
      pthread_mutex_lock(&p->mu);
      for (size_t j = 0; j < p->n; j++)
        if (p->v[j].dns == fd) {
          dns_answer(fd);
          break;
        }
      pthread_mutex_unlock(&p->mu);
    }
  }
}

/* Under mu: fd joins the thread's set (the thread started if need be).
 * 0, or -1 (fd not taken: the caller closes it). */
static int dns_watch(portal *p, int fd) {
  if (p->ep < 0) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int sfd = eventfd(0, EFD_CLOEXEC);
    struct epoll_event se = {.events = EPOLLIN, .data.fd = sfd};
    if (ep < 0 || sfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &se) != 0) {
      if (ep >= 0) close(ep);
      if (sfd >= 0) close(sfd);
      return -1;
    }
    p->ep = ep;
    p->stop_fd = sfd;
  }
  if (!p->dns_running) {
    if (pthread_create(&p->dns_th, NULL, dns_thread, p) != 0) return -1;
    p->dns_running = 1;
  }
  struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
  return epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &e) == 0 ? 0 : -1;
}

typedef struct mk_job {
  int nsfd, port, want_dns;
  int fd, fd6, dns, err;
} mk_job;

static int listen_on(const struct sockaddr *a, socklen_t len) {
  int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  int one = 1;
  if (a->sa_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(fd, a, len) != 0 || listen(fd, 128) != 0) {
    int rc = -errno;
    close(fd);
    return rc;
  }
  return fd;
}

/* On a thread of its own: the namespace switch is this thread's only, and
 * the thread ends with it (no way back to restore, none needed).
 * 127.0.0.1 is the portal; [::1] is added where the namespace has it (a
 * client whose resolver gives ::1 first, as glibc's nss-myhostname and
 * the engine's DNS do for *.localhost, connects there first: Node's fetch
 * tries the addresses in order). A namespace without IPv6 (disabled, or a
 * kernel without it), or a sandbox's own listener on [::1]:<port>, leaves
 * the IPv4 one alone. */
static void *mk_thread(void *arg) {
  mk_job *j = arg;
  j->fd = j->fd6 = j->dns = -1;
  if (setns(j->nsfd, CLONE_NEWNET) != 0) {
    j->err = errno;
    return NULL;
  }
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)j->port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = listen_on((struct sockaddr *)&a, sizeof a);
  if (fd < 0) {
    j->err = -fd;
    return NULL;
  }
  struct sockaddr_in6 a6;
  memset(&a6, 0, sizeof a6);
  a6.sin6_family = AF_INET6;
  a6.sin6_port = htons((uint16_t)j->port);
  a6.sin6_addr = in6addr_loopback;
  int fd6 = listen_on((struct sockaddr *)&a6, sizeof a6);
  j->fd = fd;
  j->fd6 = fd6 >= 0 ? fd6 : -1;
  if (j->want_dns) {
    int d = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    a.sin_port = htons(53);
    if (d >= 0 && bind(d, (struct sockaddr *)&a, sizeof a) != 0) {
      close(d);
      d = -1;
    }
    j->dns = d;
  }
  return NULL;
}

int portal_open(portal *p, engine *e, sbx *s) {
  /* s->mu may be held by the caller (lifecycle's pause), as for
   * sbxnet_attach: s->iso changes only on the paths that call this */
  asbe_sandbox *iso = s->iso;
  if (!iso || !asbe_sandbox_alive(iso)) return -ESRCH;
  pid_t pid = asbe_sandbox_pid(iso);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
  int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  /* the pid could have been reused after its death: the pidfd says
   * whether the namespace is still the sandbox's */
  if (nsfd < 0 || fstat(nsfd, &st) != 0 || !asbe_sandbox_alive(iso)) {
    int rc = nsfd < 0 ? -errno : -ESRCH;
    if (nsfd >= 0) close(nsfd);
    return rc;
  }
  pthread_mutex_lock(&p->mu);
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].id, s->id) && p->v[i].ns == st.st_ino) { /* open already */
      pthread_mutex_unlock(&p->mu);
      close(nsfd);
      return 0;
    }
  pthread_mutex_unlock(&p->mu);
  portal_close(p, s->id); /* one of an earlier namespace of it */
  mk_job j = {nsfd, e->listen_port, e->dp == NULL /* no datapath: no DNS */, -1, -1, -1, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, mk_thread, &j) != 0) {
    close(nsfd);
    return -EAGAIN;
  }
  pthread_join(t, NULL);
  close(nsfd);
  if (j.fd < 0) return -j.err;
  char tag[100];
  snprintf(tag, sizeof tag, TAG_PREFIX "%s", s->id);
  pthread_mutex_lock(&p->mu);
  if (p->n == p->cap) {
    size_t c = p->cap ? 2 * p->cap : 16;
    pt_entry *v = realloc(p->v, c * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&p->mu);
      close(j.fd);
      if (j.fd6 >= 0) close(j.fd6);
      if (j.dns >= 0) close(j.dns);
      return -ENOMEM;
    }
    p->v = v;
    p->cap = c;
  }
  int rc = front_portal_add(p->f, j.fd, tag); /* takes the fd, also on failure */
  if (rc == 0 && j.fd6 >= 0 && front_portal_add(p->f, j.fd6, tag) != 0)
    j.fd6 = -1; /* closed by the front: the IPv4 one is the portal */
  else if (rc != 0 && j.fd6 >= 0)
    close(j.fd6);
  if (j.dns >= 0 && (rc != 0 || dns_watch(p, j.dns) != 0)) {
    close(j.dns);
    j.dns = -1;
  }
  if (rc == 0) {
    pt_entry *x = &p->v[p->n++];
    snprintf(x->id, sizeof x->id, "%s", s->id);
    x->ns = st.st_ino;
    x->fd = j.fd;
    x->fd6 = j.fd6;
    x->dns = j.dns;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void portal_close(portal *p, const char *id) {
  pthread_mutex_lock(&p->mu);
  for (size_t i = 0; i < p->n;)
    if (!strcmp(p->v[i].id, id)) {
      front_listen_drop(p->f, p->v[i].fd);
      if (p->v[i].fd6 >= 0) front_listen_drop(p->f, p->v[i].fd6);
      if (p->v[i].dns >= 0) close(p->v[i].dns); /* leaves the epoll set with it */
      p->v[i] = p->v[--p->n];
    } else {
      i++;
    }
  pthread_mutex_unlock(&p->mu);
}

int portal_source(engine *e, struct MHD_Connection *c, char *id, size_t idlen) {
  /* e->tcp_daemon, not e->server: server_stop clears that while requests
   * still end */
  struct MHD_Daemon *tcp = __atomic_load_n((struct MHD_Daemon **)&e->tcp_daemon, __ATOMIC_ACQUIRE);
  const union MHD_ConnectionInfo *di = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
  if (!tcp || !di || di->daemon != tcp) return 0; /* the unix socket's: its own clients */
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  if (!sa || sa->sa_family != AF_UNIX) return 0;
  /* The TCP daemon has AF_UNIX clients from portals only: one whose tag
   * does not parse is still a portal's (fails closed: an id of no
   * sandbox, which the router refuses), never a host client's. */
  id[0] = '\0';
  const struct sockaddr_un *u = (const struct sockaddr_un *)sa;
  const char *t = u->sun_path + 1; /* abstract, NUL-terminated by the front */
  size_t n = strnlen(t, sizeof u->sun_path - 1);
  size_t pl = sizeof TAG_PREFIX - 1;
  if (u->sun_path[0] == '\0' && n > pl && n - pl <= ENGINE_ID_LEN && memcmp(t, TAG_PREFIX, pl) == 0)
    snprintf(id, idlen, "%.*s", (int)(n - pl), t + pl);
  return 1;
}
