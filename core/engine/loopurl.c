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
 *
 * The URLs outlive the engine with their sandboxes: every (sandbox, port,
 * loopback port) is kept in <state>/loopback, and the next engine opens
 * the same ports again for the sandboxes it adopted (loopurl_restore).
 * SPDX-License-Identifier: Apache-2.0 */
#include "loopurl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front.h"
#include "registry.h"
#include "util/log.h"

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
  char *path; /* <state>/loopback once restored (NULL: not kept) */
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
  free(lu->path);
  pthread_mutex_destroy(&lu->mu);
  free(lu);
}

static int find(loopurl *lu, const char *id, int port) {
  for (size_t i = 0; i < lu->n; i++)
    if (lu->v[i].port == port && strcmp(lu->v[i].id, id) == 0) return (int)i;
  return -1;
}

/* The listener: 127.0.0.1, a free port, bound without SO_REUSEADDR (see
 * above); or (*lport set) that port again for the sandbox that had it.
 * SO_REUSEADDR goes on after the bind: the connections it accepts inherit
 * it, so when an engine dies, its end of them (orphaned, FIN_WAIT2 then
 * TIME_WAIT for a minute) does not refuse the next engine's bind of the
 * same port with SO_REUSEADDR, while a new listener bound to any port
 * (without it) still conflicts with every socket on one in use. The
 * kernel needs SO_REUSEADDR on both sockets to let them share a port, and
 * never for a listening one: another listener there refuses it as ever. */
static int listen_loopback(int *lport) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)*lport);
  int one = 1;
  socklen_t al = sizeof a;
  if ((*lport && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) ||
      bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
    int en = errno;
    close(fd);
    return -en;
  }
  *lport = ntohs(a.sin_port);
  return fd;
}

/* Rewrites <state>/loopback from the table (under lu->mu): whole, through
 * a rename, so a crash leaves the old list or the new one. Best effort: a
 * URL not kept is only lost at the next restart. */
static void save_locked(loopurl *lu) {
  if (!lu->path) return;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", lu->path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return;
  }
  for (size_t i = 0; i < lu->n; i++)
    fprintf(f, "%s %d %d\n", lu->v[i].id, lu->v[i].port, lu->v[i].lport);
  if (fclose(f) == 0) rename(tmp, lu->path);
}

/* Adds an entry with its listener (under lu->mu; room made by the caller
 * or here). want: the loopback port to take again, or 0 for any. */
static int add_locked(loopurl *lu, const char *id, int port, int want, int *lport) {
  if (lu->n == lu->cap) {
    size_t cap = lu->cap ? lu->cap * 2 : 16;
    lu_entry *v = realloc(lu->v, cap * sizeof *v);
    if (!v) return -ENOMEM;
    lu->v = v;
    lu->cap = cap;
  }
  int lp = want, fd = listen_loopback(&lp);
  if (fd < 0 || (fd = front_listen_add(lu->f, fd) == 0 ? fd : -ENOSPC) < 0) return fd;
  lu_entry *en = &lu->v[lu->n++];
  snprintf(en->id, sizeof en->id, "%s", id);
  en->port = port;
  en->lport = lp;
  en->fd = fd;
  save_locked(lu);
  *lport = lp;
  return 0;
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
  int lp = 0, rc = add_locked(lu, id, port, 0, &lp);
  pthread_mutex_unlock(&lu->mu);
  if (rc) return rc;
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
  int dropped = 0;
  for (size_t i = 0; i < lu->n;) {
    if (strcmp(lu->v[i].id, id) == 0) {
      front_listen_drop(lu->f, lu->v[i].fd);
      lu->v[i] = lu->v[--lu->n];
      dropped = 1;
    } else {
      i++;
    }
  }
  if (dropped) save_locked(lu);
  pthread_mutex_unlock(&lu->mu);
}

void loopurl_restore(loopurl *lu, engine *e) {
  char path[4200];
  snprintf(path, sizeof path, "%s/loopback", e->state_dir);
  FILE *f = fopen(path, "re");
  char id[64];
  int port, lport;
  size_t opened = 0;
  pthread_mutex_lock(&lu->mu);
  lu->path = strdup(path);
  while (f && fscanf(f, "%63s %d %d", id, &port, &lport) == 3) {
    sbx *s = strlen(id) <= ENGINE_ID_LEN ? reg_get(e, id) : NULL;
    if (!s) continue; /* it ended while no engine ran */
    reg_put(e, s);
    if (find(lu, id, port) >= 0) continue; /* asked for since this engine listens */
    size_t mine = 0;
    for (size_t k = 0; k < lu->n; k++) mine += strcmp(lu->v[k].id, id) == 0;
    int got = 0, rc = -EINVAL;
    if (port >= 1 && port <= 65535 && lport >= 1 && lport <= 65535 && mine < PER_SANDBOX_MAX)
      rc = add_locked(lu, id, port, lport, &got);
    if (rc)
      asbi_log("sandbox %s: its loopback URL http://127.0.0.1:%d (port %d) is not back: %s", id,
               lport, port, strerror(-rc));
    else
      opened++;
  }
  save_locked(lu); /* without what did not come back */
  /* As in loopurl_open: a sandbox that ended since it was looked up (its
   * reg_remove found nothing to close) loses them now. */
  size_t n = lu->n;
  char(*ids)[sizeof lu->v[0].id] = n ? malloc(n * sizeof *ids) : NULL;
  for (size_t i = 0; ids && i < n; i++) memcpy(ids[i], lu->v[i].id, sizeof ids[i]);
  pthread_mutex_unlock(&lu->mu);
  if (f) fclose(f);
  if (opened) asbi_log("start-up: %zu loopback URL(s) open again", opened);
  for (size_t i = 0; ids && i < n; i++) {
    sbx *s = reg_get(e, ids[i]);
    if (!s) loopurl_sandbox_gone(lu, ids[i]);
    reg_put(e, s);
  }
  free(ids);
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
