/* The egress services' sandbox table (sbxtab.h). SPDX-License-Identifier: Apache-2.0 */
#include "sbxtab.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

typedef struct record {
  char name[254];
  int family;
  uint8_t addr[16];
  time_t expires; /* CLOCK_MONOTONIC seconds */
} record;

#define SBX_ADDRS 2 /* an IPv4 and an IPv6 address */

typedef struct sbx {
  struct sbx *next;
  int fam[SBX_ADDRS];
  uint8_t addr[SBX_ADDRS][16];
  int naddr;
  asbn_policy pol;
  record *recs;
  size_t nrecs;
  sbxtab_conn *conns;
  unsigned nconns;
  asbn_egress_counters ctr; /* bytes of ended connections; conns_open derived */
} sbx;

struct sbxtab {
  pthread_mutex_t mu;
  sbx *list;
  unsigned max_per, max_total, total;
};

static time_t now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

static size_t alen(int family) {
  return family == AF_INET ? 4 : 16;
}

static sbx *find(sbxtab *t, int family, const uint8_t *addr, sbx ***link) {
  for (sbx **l = &t->list; *l; l = &(*l)->next)
    for (int i = 0; i < (*l)->naddr; i++)
      if ((*l)->fam[i] == family && memcmp((*l)->addr[i], addr, alen(family)) == 0) {
        if (link) *link = l;
        return *l;
      }
  return NULL;
}

sbxtab *sbxtab_new(unsigned max_per, unsigned max_total) {
  sbxtab *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  pthread_mutex_init(&t->mu, NULL);
  t->max_per = max_per ? max_per : 256;
  t->max_total = max_total ? max_total : 4096;
  return t;
}

static void cut(sbxtab_conn *c) {
  if (c->fd_client >= 0) shutdown(c->fd_client, SHUT_RDWR);
  if (c->fd_upstream >= 0) shutdown(c->fd_upstream, SHUT_RDWR);
}

static void unlist_all(sbxtab *t, sbx *s) {
  for (sbxtab_conn *c = s->conns, *n; c; c = n) {
    n = c->next;
    cut(c);
    c->listed = 0;
    c->next = c->prev = NULL;
    t->total--;
  }
  s->conns = NULL;
  s->nconns = 0;
}

static void entry_free(sbxtab *t, sbx *s) {
  unlist_all(t, s);
  asbn_policy_free(&s->pol);
  free(s->recs);
  free(s);
}

void sbxtab_free(sbxtab *t) {
  if (!t) return;
  while (t->list) {
    sbx *s = t->list;
    t->list = s->next;
    entry_free(t, s);
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static int rec_has(const sbx *s, const char *name, int family, const uint8_t *addr, time_t now) {
  for (size_t i = 0; i < s->nrecs; i++) {
    const record *r = &s->recs[i];
    if (r->expires >= now && r->family == family && memcmp(r->addr, addr, alen(family)) == 0 &&
        strcmp(r->name, name) == 0)
      return 1;
  }
  return 0;
}

static decide_why decide_locked(const sbx *s, const sbxtab_conn *c) {
  decide_conn_in in = {.family = c->family, .dst = c->dst, .name = c->name[0] ? c->name : NULL};
  in.name_has_dst = in.name && rec_has(s, c->name, c->family, c->dst, now_s());
  return decide_conn(&s->pol, &in);
}

int sbxtab_set_policy(sbxtab *t, int family, const uint8_t *addr, const asbn_policy *p) {
  asbn_policy copy;
  if (asbn_policy_copy(p, &copy) != 0) return -1;
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, family, addr, NULL);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s) {
      pthread_mutex_unlock(&t->mu);
      asbn_policy_free(&copy);
      errno = ENOMEM;
      return -1;
    }
    s->fam[0] = family;
    memcpy(s->addr[0], addr, alen(family));
    s->naddr = 1;
    s->next = t->list;
    t->list = s;
  } else {
    asbn_policy_free(&s->pol);
  }
  s->pol = copy;
  /* Live update: cut what the new policy refuses. */
  for (sbxtab_conn *c = s->conns; c; c = c->next)
    if (c->decided && decide_locked(s, c) < 0) cut(c);
  pthread_mutex_unlock(&t->mu);
  return 0;
}

int sbxtab_add_address(sbxtab *t, int family, const uint8_t *known, int family2,
                       const uint8_t *also) {
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, family, known, NULL), *other = find(t, family2, also, NULL);
  int r = -1;
  if (s && other == s)
    r = 0;
  else if (s && !other && s->naddr < SBX_ADDRS) {
    s->fam[s->naddr] = family2;
    memcpy(s->addr[s->naddr], also, alen(family2));
    s->naddr++;
    r = 0;
  }
  pthread_mutex_unlock(&t->mu);
  return r;
}

int sbxtab_forget(sbxtab *t, int family, const uint8_t *addr) {
  pthread_mutex_lock(&t->mu);
  sbx **link;
  sbx *s = find(t, family, addr, &link);
  if (s) {
    *link = s->next;
    entry_free(t, s);
  }
  pthread_mutex_unlock(&t->mu);
  return s ? 0 : -1;
}

int sbxtab_counters(sbxtab *t, int family, const uint8_t *addr, asbn_egress_counters *out) {
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, family, addr, NULL);
  if (s) {
    *out = s->ctr;
    out->conns_open = s->nconns;
    for (sbxtab_conn *c = s->conns; c; c = c->next) {
      out->bytes_out += __atomic_load_n(&c->bytes_out, __ATOMIC_RELAXED);
      out->bytes_in += __atomic_load_n(&c->bytes_in, __ATOMIC_RELAXED);
    }
  }
  pthread_mutex_unlock(&t->mu);
  return s ? 0 : -1;
}

int sbxtab_dns_check(sbxtab *t, int family, const uint8_t *src, const char *name, int name_ok) {
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, family, src, NULL);
  int r = -1;
  if (s) {
    r = decide_dns(&s->pol, name, name_ok);
    if (r)
      s->ctr.dns_answered++;
    else
      s->ctr.dns_refused++;
  }
  pthread_mutex_unlock(&t->mu);
  return r;
}

void sbxtab_dns_record(sbxtab *t, int family, const uint8_t *src, const char *name,
                       const dnsmsg_addr *a, size_t n) {
  if (!name[0] || strlen(name) >= sizeof(((record *)0)->name)) return;
  time_t now = now_s();
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, family, src, NULL);
  for (size_t i = 0; s && i < n; i++) {
    uint32_t ttl = a[i].ttl < ASBN_EGRESS_MIN_TTL ? ASBN_EGRESS_MIN_TTL : a[i].ttl;
    if (ttl > 86400) ttl = 86400;
    time_t exp = now + (time_t)ttl;
    record *slot = NULL, *oldest = NULL;
    for (size_t j = 0; j < s->nrecs; j++) {
      record *r = &s->recs[j];
      if (r->family == a[i].family && memcmp(r->addr, a[i].addr, alen(r->family)) == 0 &&
          strcmp(r->name, name) == 0) {
        slot = r;
        break;
      }
      if (!oldest || r->expires < oldest->expires) oldest = r;
    }
    if (!slot) {
      if (!s->recs) {
        s->recs = calloc(SBX_MAX_RECORDS, sizeof *s->recs);
        if (!s->recs) break;
      }
      if (s->nrecs < SBX_MAX_RECORDS)
        slot = &s->recs[s->nrecs++];
      else
        slot = oldest;
      memset(slot, 0, sizeof *slot);
      strcpy(slot->name, name);
      slot->family = a[i].family;
      memcpy(slot->addr, a[i].addr, alen(a[i].family));
    }
    if (exp > slot->expires) slot->expires = exp;
  }
  pthread_mutex_unlock(&t->mu);
}

int sbxtab_conn_begin(sbxtab *t, sbxtab_conn *c, int *needs_name) {
  pthread_mutex_lock(&t->mu);
  sbx *s = find(t, c->family, c->src, NULL);
  int r = 0;
  if (s) {
    unsigned cap = s->pol.max_connections ? s->pol.max_connections : t->max_per;
    if (s->nconns >= cap || t->total >= t->max_total) {
      s->ctr.conns_refused++;
    } else {
      c->next = s->conns;
      c->prev = NULL;
      if (s->conns) s->conns->prev = c;
      s->conns = c;
      c->listed = 1;
      s->nconns++;
      t->total++;
      *needs_name = decide_needs_name(&s->pol, c->family, c->dst);
      r = 1;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return r;
}

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

int sbxtab_conn_decide(sbxtab *t, sbxtab_conn *c) {
  pthread_mutex_lock(&t->mu);
  sbx *s = c->listed ? find(t, c->family, c->src, NULL) : NULL;
  c->why = DECIDE_BLOCKED;
  if (s) {
    c->why = decide_locked(s, c);
    c->decided = 1;
    if (c->why > 0) {
      s->ctr.conns_allowed++;
      if (s->pol.egress_proxy_addr) {
        c->socks_addr = dup_or_null(s->pol.egress_proxy_addr);
        c->socks_user = dup_or_null(s->pol.egress_proxy_user);
        c->socks_pass = dup_or_null(s->pol.egress_proxy_pass);
        if (!c->socks_addr) c->why = DECIDE_BLOCKED; /* no memory: never bypass the proxy */
      }
      const asbn_domain_rule *rule = NULL;
      if (c->name[0] && decide_rule_for(&s->pol, c->name, &rule) && rule->nheaders) {
        c->hnames = calloc(rule->nheaders, sizeof *c->hnames);
        c->hvalues = calloc(rule->nheaders, sizeof *c->hvalues);
        c->nh = rule->nheaders;
        for (size_t i = 0; c->hnames && c->hvalues && i < rule->nheaders; i++) {
          c->hnames[i] = dup_or_null(rule->headers[i].name);
          c->hvalues[i] = dup_or_null(rule->headers[i].value ? rule->headers[i].value : "");
          if (!c->hnames[i] || !c->hvalues[i]) c->why = DECIDE_BLOCKED;
        }
        if (!c->hnames || !c->hvalues) c->why = DECIDE_BLOCKED; /* never send without the rule */
      }
    } else {
      s->ctr.conns_refused++;
    }
  }
  int r = c->why;
  pthread_mutex_unlock(&t->mu);
  return r;
}

int sbxtab_conn_set_upstream(sbxtab *t, sbxtab_conn *c, int fd) {
  pthread_mutex_lock(&t->mu);
  c->fd_upstream = fd;
  int r = c->listed ? 0 : -1;
  pthread_mutex_unlock(&t->mu);
  return r;
}

void sbxtab_cut_all(sbxtab *t) {
  pthread_mutex_lock(&t->mu);
  for (sbx *s = t->list; s; s = s->next)
    for (sbxtab_conn *c = s->conns; c; c = c->next) cut(c);
  pthread_mutex_unlock(&t->mu);
}

void sbxtab_conn_end(sbxtab *t, sbxtab_conn *c) {
  pthread_mutex_lock(&t->mu);
  if (c->listed) {
    sbx *s = find(t, c->family, c->src, NULL);
    if (s) {
      if (c->prev)
        c->prev->next = c->next;
      else
        s->conns = c->next;
      if (c->next) c->next->prev = c->prev;
      s->nconns--;
      s->ctr.bytes_out += c->bytes_out;
      s->ctr.bytes_in += c->bytes_in;
    }
    t->total--;
    c->listed = 0;
  }
  pthread_mutex_unlock(&t->mu);
  if (c->socks_pass) memset(c->socks_pass, 0, strlen(c->socks_pass));
  free(c->socks_addr);
  free(c->socks_user);
  free(c->socks_pass);
  c->socks_addr = c->socks_user = c->socks_pass = NULL;
  for (size_t i = 0; i < c->nh; i++) {
    if (c->hnames) free(c->hnames[i]);
    if (c->hvalues) free(c->hvalues[i]);
  }
  free(c->hnames);
  free(c->hvalues);
  c->hnames = c->hvalues = NULL;
  c->nh = 0;
}
