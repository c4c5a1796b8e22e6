/* Cancellation tokens: a flag plus the set of waits to interrupt.
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

typedef struct waiter {
  asbi_wake_fn fn;
  void *target;
  struct waiter *next;
} waiter;

struct asb_cancel {
  atomic_int requested;
  pthread_mutex_t mu;
  waiter *waiters;
};

int asb_cancel_new(asb_cancel **out) {
  if (!out) return asbi_err(ASB_EINVAL, "asb_cancel_new: out is NULL");
  asb_cancel *c = calloc(1, sizeof *c);
  if (!c) return asbi_oom();
  pthread_mutex_init(&c->mu, NULL);
  *out = c;
  return ASB_OK;
}

void asb_cancel_free(asb_cancel *c) {
  if (!c) return;
  while (c->waiters) {
    waiter *w = c->waiters;
    c->waiters = w->next;
    free(w);
  }
  pthread_mutex_destroy(&c->mu);
  free(c);
}

void asb_cancel_request(asb_cancel *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->requested, 1);
  for (waiter *w = c->waiters; w; w = w->next) w->fn(w->target);
  pthread_mutex_unlock(&c->mu);
}

int asb_cancel_is_requested(const asb_cancel *c) {
  return c ? atomic_load(&((asb_cancel *)c)->requested) : 0;
}

void asb_cancel_reset(asb_cancel *c) {
  if (c) atomic_store(&c->requested, 0);
}

int asbi_cancel_requested(const asb_cancel *c) {
  return asb_cancel_is_requested(c);
}

int asbi_cancel_register(asb_cancel *c, asbi_wake_fn fn, void *target) {
  if (!c) return ASB_OK;
  waiter *w = malloc(sizeof *w);
  if (!w) return asbi_oom();
  w->fn = fn;
  w->target = target;
  pthread_mutex_lock(&c->mu);
  w->next = c->waiters;
  c->waiters = w;
  int req = atomic_load(&c->requested);
  pthread_mutex_unlock(&c->mu);
  if (req) {
    asbi_cancel_unregister(c, target);
    return asbi_err(ASB_ECANCELED, "cancelled");
  }
  return ASB_OK;
}

void asbi_cancel_unregister(asb_cancel *c, void *target) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  for (waiter **pp = &c->waiters; *pp; pp = &(*pp)->next) {
    if ((*pp)->target == target) {
      waiter *w = *pp;
      *pp = w->next;
      free(w);
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
}

/* ---- handle lifecycle ---------------------------------------------------------- */

int asbi_life_init(asbi_life *l) {
  atomic_init(&l->refs, 1);
  return asb_cancel_new(&l->stop);
}

void asbi_life_hold(asbi_life *l) {
  atomic_fetch_add(&l->refs, 1);
}

int asbi_life_drop(asbi_life *l) {
  return atomic_fetch_sub(&l->refs, 1) == 1;
}

void asbi_life_fini(asbi_life *l) {
  asb_cancel_free(l->stop);
  l->stop = NULL;
}

void asbi_life_stop(asbi_life *l) {
  asb_cancel_request(l->stop);
}

int asbi_life_stopped(const asbi_life *l) {
  return asb_cancel_is_requested(l->stop);
}
