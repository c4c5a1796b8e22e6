/* Request-head deadlines (see connguard.h). Hand-written: libmicrohttpd
 * 0.9.75 has no header or keep-alive deadline, and no Debian library adds
 * one to it. SPDX-License-Identifier: Apache-2.0 */
#include "connguard.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct asbi_guarded {
  asbi_connguard *g;
  int fd;
  uint64_t deadline;                         /* ms on the monotonic clock; 0 = none */
  int waiting;                               /* in g's waiting list */
  int cut;                                   /* shut down by the guard */
  int served;                                /* a request of it ended */
  int in_head;                               /* its request line came, its head has not ended */
  unsigned char key[ASBI_CONNGUARD_KEY_MAX]; /* its client (open_key) */
  unsigned klen;                             /* 0: not reclaimable */
  asbi_guarded *prev, *next;
};

struct asbi_connguard {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  unsigned idle_ms, head_ms, max_waiting;
  asbi_guarded *head, *tail; /* waiting connections, oldest first */
  unsigned nwaiting;
  uint64_t wake_at; /* the watchdog's next wake-up (0 = none planned) */
  unsigned long cut;
  int stop;
};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* All below with g->mu held. */
static void unlink_waiting(asbi_guarded *c) {
  asbi_connguard *g = c->g;
  if (!c->waiting) return;
  if (c->prev)
    c->prev->next = c->next;
  else
    g->head = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    g->tail = c->prev;
  c->prev = c->next = NULL;
  c->waiting = 0;
  c->deadline = 0;
  g->nwaiting--;
}

static void cut(asbi_guarded *c) {
  unlink_waiting(c);
  c->cut = 1;
  c->g->cut++;
  /* The server closes the fd itself once it sees the connection end; it
   * cannot have closed it yet (asbi_connguard_close comes first). */
  shutdown(c->fd, SHUT_RDWR);
}

static void set_deadline(asbi_guarded *c, uint64_t d) {
  asbi_connguard *g = c->g;
  c->deadline = d;
  if (d && (!g->wake_at || d < g->wake_at)) pthread_cond_signal(&g->cv);
}

static void start_waiting(asbi_guarded *c) {
  asbi_connguard *g = c->g;
  if (c->cut || c->waiting) return;
  c->prev = g->tail;
  c->next = NULL;
  if (g->tail)
    g->tail->next = c;
  else
    g->head = c;
  g->tail = c;
  c->waiting = 1;
  g->nwaiting++;
  set_deadline(c, g->idle_ms ? now_ms() + g->idle_ms : 0);
  if (g->max_waiting && g->nwaiting > g->max_waiting && g->head != c) cut(g->head);
}

static void *watchdog(void *arg) {
  asbi_connguard *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->stop) {
    uint64_t now = now_ms(), next = 0;
    for (asbi_guarded *c = g->head, *n; c; c = n) {
      n = c->next;
      if (!c->deadline) continue;
      if (c->deadline <= now)
        cut(c);
      else if (!next || c->deadline < next)
        next = c->deadline;
    }
    g->wake_at = next;
    if (!next) {
      pthread_cond_wait(&g->cv, &g->mu);
    } else {
      struct timespec ts = {(time_t)(next / 1000u), (long)(next % 1000u) * 1000000L};
      pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

asbi_connguard *asbi_connguard_new(unsigned idle_ms, unsigned head_ms, unsigned max_waiting) {
  asbi_connguard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->idle_ms = idle_ms;
  g->head_ms = head_ms;
  g->max_waiting = max_waiting;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&g->thread, NULL, watchdog, g);
  if (rc) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
    errno = rc;
    return NULL;
  }
  return g;
}

void asbi_connguard_free(asbi_connguard *g) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->stop = 1;
  pthread_cond_signal(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->thread, NULL);
  /* The server has closed every connection, so nothing is left; free what
   * a misbehaving caller left anyway. */
  while (g->head) {
    asbi_guarded *c = g->head;
    unlink_waiting(c);
    free(c);
  }
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

asbi_guarded *asbi_connguard_open(asbi_connguard *g, int fd) {
  return asbi_connguard_open_key(g, fd, NULL, 0);
}

asbi_guarded *asbi_connguard_open_key(asbi_connguard *g, int fd, const void *key, unsigned len) {
  if (!g || fd < 0) return NULL;
  asbi_guarded *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->g = g;
  c->fd = fd;
  if (key && len && len <= sizeof c->key) {
    memcpy(c->key, key, len);
    c->klen = len;
  }
  pthread_mutex_lock(&g->mu);
  start_waiting(c);
  pthread_mutex_unlock(&g->mu);
  return c;
}

void asbi_connguard_request_line(asbi_guarded *c) {
  if (!c) return;
  asbi_connguard *g = c->g;
  pthread_mutex_lock(&g->mu);
  c->in_head = c->waiting;
  if (c->waiting && g->head_ms) {
    uint64_t d = now_ms() + g->head_ms;
    if (!c->deadline || d < c->deadline) set_deadline(c, d);
  }
  pthread_mutex_unlock(&g->mu);
}

void asbi_connguard_head_done(asbi_guarded *c) {
  if (!c) return;
  pthread_mutex_lock(&c->g->mu);
  c->in_head = 0;
  unlink_waiting(c);
  pthread_mutex_unlock(&c->g->mu);
}

void asbi_connguard_request_done(asbi_guarded *c) {
  if (!c) return;
  pthread_mutex_lock(&c->g->mu);
  c->served = 1;
  c->in_head = 0;
  start_waiting(c);
  pthread_mutex_unlock(&c->g->mu);
}

void asbi_connguard_close(asbi_guarded *c) {
  if (!c) return;
  asbi_connguard *g = c->g;
  pthread_mutex_lock(&g->mu);
  unlink_waiting(c);
  pthread_mutex_unlock(&g->mu);
  free(c);
}

unsigned long asbi_connguard_cut(asbi_connguard *g) {
  if (!g) return 0;
  pthread_mutex_lock(&g->mu);
  unsigned long n = g->cut;
  pthread_mutex_unlock(&g->mu);
  return n;
}

int asbi_connguard_reclaim(asbi_connguard *g, const void *key, unsigned len) {
  if (!g || !key || !len) return 0;
  int done = 0;
  pthread_mutex_lock(&g->mu);
  /* the waiting list is in the order they began waiting: the first idle
   * one of key is the one idle longest (a client's pool reuses its most
   * recent connections, so this one is the least likely to be in use) */
  for (asbi_guarded *c = g->head; c && !done; c = c->next)
    if (c->served && !c->in_head && c->klen == len && memcmp(c->key, key, len) == 0) {
      cut(c);
      g->cut--; /* not a late head */
      done = 1;
    }
  pthread_mutex_unlock(&g->mu);
  return done;
}
