/* Loopback URLs: http://127.0.0.1:<port> for one port of one sandbox.
 *
 * http://<port>-<id>.localhost:49982 needs a resolver that knows
 * *.localhost; glibc without nss-myhostname (stock Debian) has none, so
 * Node's fetch and Python's urllib fail with ENOTFOUND. A loopback URL
 * names no host at all: the engine opens a listener on 127.0.0.1 with a
 * port of the kernel's choosing for the (sandbox, port) pair on demand
 * (POST /sandboxes/{id}/ports/{port}/loopback), serves it through the
 * front like its own port (front_listen_add), and routes every request on
 * it to that sandbox port through the router, whatever its Host header —
 * with the router's access rules (a sandbox with allowPublicTraffic false
 * still needs its traffic token). The listener closes when the sandbox
 * ends (reg_remove → loopurl_sandbox_gone).
 *
 * A request on such a connection is told by the connection's local port
 * (getsockname). Its listener has no SO_REUSEADDR, so while any
 * connection accepted on it is open the kernel never gives that port to a
 * new listener: a local port names one listener for the life of its
 * connections, never a later sandbox's.
 * SPDX-License-Identifier: Apache-2.0 */
#include "loopurl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front.h"
#include "registry.h"

#define PER_SANDBOX_MAX 64

typedef struct lu_entry {
  char id[64];
  int port;  /* in the sandbox */
  int lport; /* on 127.0.0.1 */
  int fd;
} lu_entry;

struct loopurl {
  front *f;
  pthread_mutex_t mu;
  lu_entry *v;
  size_t n, cap;
};

loopurl *loopurl_new(front *f) {
  loopurl *lu = calloc(1, sizeof *lu);
  if (!lu) return NULL;
  lu->f = f;
  pthread_mutex_init(&lu->mu, NULL);
  return lu;
}

void loopurl_free(loopurl *lu) {
  if (!lu) return;
  free(lu->v); /* the front closes the listeners it holds */
  pthread_mutex_destroy(&lu->mu);
  free(lu);
}

static int find(loopurl *lu, const char *id, int port) {
  for (size_t i = 0; i < lu->n; i++)
    if (lu->v[i].port == port && strcmp(lu->v[i].id, id) == 0) return (int)i;
  return -1;
}

/* The listener: 127.0.0.1, a free port, no SO_REUSEADDR (see above). */
static int listen_loopback(int *lport) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
    int en = errno;
    close(fd);
    return -en;
  }
  *lport = ntohs(a.sin_port);
  return fd;
}

int loopurl_open(loopurl *lu, engine *e, const char *id, int port, int *lport) {
  if (port < 1 || port > 65535 || strlen(id) >= sizeof lu->v[0].id) return -EINVAL;
  pthread_mutex_lock(&lu->mu);
  int i = find(lu, id, port);
  if (i >= 0) {
    *lport = lu->v[i].lport;
    pthread_mutex_unlock(&lu->mu);
    return 0;
  }
  size_t mine = 0;
  for (size_t k = 0; k < lu->n; k++) mine += strcmp(lu->v[k].id, id) == 0;
  if (mine >= PER_SANDBOX_MAX) {
    pthread_mutex_unlock(&lu->mu);
    return -ENOSPC;
  }
  if (lu->n == lu->cap) {
    size_t cap = lu->cap ? lu->cap * 2 : 16;
    lu_entry *v = realloc(lu->v, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&lu->mu);
      return -ENOMEM;
    }
    lu->v = v;
    lu->cap = cap;
  }
  int lp = 0, fd = listen_loopback(&lp);
  if (fd < 0 || (fd = front_listen_add(lu->f, fd) == 0 ? fd : -ENOSPC) < 0) {
    pthread_mutex_unlock(&lu->mu);
    return fd;
  }
  lu_entry *en = &lu->v[lu->n++];
  snprintf(en->id, sizeof en->id, "%s", id);
  en->port = port;
  en->lport = lp;
  en->fd = fd;
  pthread_mutex_unlock(&lu->mu);
  /* The sandbox may have ended since the caller looked it up: its
   * reg_remove ran before this entry was there, or runs after and drops
   * it. Look again, after adding. */
  sbx *s = reg_get(e, id);
  if (!s) {
    loopurl_sandbox_gone(lu, id);
    return -ESRCH;
  }
  reg_put(e, s);
  *lport = lp;
  return 0;
}

void loopurl_sandbox_gone(loopurl *lu, const char *id) {
  if (!lu) return;
  pthread_mutex_lock(&lu->mu);
  for (size_t i = 0; i < lu->n;) {
    if (strcmp(lu->v[i].id, id) == 0) {
      front_listen_drop(lu->f, lu->v[i].fd);
      lu->v[i] = lu->v[--lu->n];
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&lu->mu);
}

int loopurl_match(loopurl *lu, int engine_port, int conn_fd, char *id, size_t idlen, int *port) {
  if (!lu || conn_fd < 0) return 0;
  pthread_mutex_lock(&lu->mu);
  size_t n = lu->n;
  pthread_mutex_unlock(&lu->mu);
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  /* nothing ever opened: no syscall on the engine's own requests */
  if (n == 0 && !lu->cap) return 0;
  if (getsockname(conn_fd, (struct sockaddr *)&a, &al) != 0 || a.sin_family != AF_INET ||
      ntohs(a.sin_port) == engine_port)
    return 0;
  int lp = ntohs(a.sin_port), found = 0;
  pthread_mutex_lock(&lu->mu);
  for (size_t i = 0; i < lu->n && !found; i++)
    if (lu->v[i].lport == lp) {
      snprintf(id, idlen, "%s", lu->v[i].id);
      *port = lu->v[i].port;
      found = 1;
    }
  pthread_mutex_unlock(&lu->mu);
  if (!found) { /* its sandbox ended (the listener is closed): the router's 502 */
    snprintf(id, idlen, "%s", "");
    *port = 1;
  }
  return 1;
}
