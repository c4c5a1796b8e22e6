/* Deep copy of a policy (polcopy.h). SPDX-License-Identifier: Apache-2.0 */
#include "polcopy.h"

#include <stdlib.h>
#include <string.h>

static int dup_s(const char *s, char **out) {
  *out = NULL;
  if (!s) return 0;
  *out = strdup(s);
  return *out ? 0 : -1;
}

static void entries_free(asbn_entry *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i].domain);
  free(v);
}

static int entries_dup(const asbn_entry *src, size_t n, asbn_entry **dst) {
  *dst = NULL;
  if (!n) return 0;
  *dst = calloc(n, sizeof **dst);
  if (!*dst) return -1;
  for (size_t i = 0; i < n; i++) {
    (*dst)[i] = src[i];
    (*dst)[i].domain = NULL;
    if (dup_s(src[i].domain, &(*dst)[i].domain)) {
      entries_free(*dst, i);
      *dst = NULL;
      return -1;
    }
  }
  return 0;
}

static void secret_free(char *s) {
  if (!s) return;
  memset(s, 0, strlen(s));
  free(s);
}

void polcopy_free(asbn_policy *p) {
  if (!p) return;
  entries_free(p->allow_out, p->nallow_out);
  entries_free(p->deny_out, p->ndeny_out);
  for (size_t i = 0; p->rules && i < p->nrules; i++) {
    free(p->rules[i].match.domain);
    for (size_t j = 0; j < p->rules[i].nheaders; j++) {
      free(p->rules[i].headers[j].name);
      secret_free(p->rules[i].headers[j].value);
    }
    free(p->rules[i].headers);
  }
  free(p->rules);
  free(p->egress_proxy_addr);
  free(p->egress_proxy_user);
  secret_free(p->egress_proxy_pass);
  free(p->mask_request_host);
  memset(p, 0, sizeof *p);
}

int polcopy_dup(const asbn_policy *src, asbn_policy *dst) {
  memset(dst, 0, sizeof *dst);
  dst->allow_internet = src->allow_internet;
  dst->allow_public_traffic = src->allow_public_traffic;
  dst->egress_bytes_per_s = src->egress_bytes_per_s;
  dst->max_connections = src->max_connections;
  if (entries_dup(src->allow_out, src->nallow_out, &dst->allow_out)) goto fail;
  dst->nallow_out = src->nallow_out;
  if (entries_dup(src->deny_out, src->ndeny_out, &dst->deny_out)) goto fail;
  dst->ndeny_out = src->ndeny_out;
  if (src->nrules) {
    dst->rules = calloc(src->nrules, sizeof *dst->rules);
    if (!dst->rules) goto fail;
    dst->nrules = src->nrules;
    for (size_t i = 0; i < src->nrules; i++) {
      const asbn_domain_rule *r = &src->rules[i];
      asbn_domain_rule *d = &dst->rules[i];
      d->match = r->match;
      d->match.domain = NULL;
      if (dup_s(r->match.domain, &d->match.domain)) goto fail;
      if (r->nheaders) {
        d->headers = calloc(r->nheaders, sizeof *d->headers);
        if (!d->headers) goto fail;
        d->nheaders = r->nheaders;
        for (size_t j = 0; j < r->nheaders; j++)
          if (dup_s(r->headers[j].name, &d->headers[j].name) ||
              dup_s(r->headers[j].value, &d->headers[j].value))
            goto fail;
      }
    }
  }
  if (dup_s(src->egress_proxy_addr, &dst->egress_proxy_addr) ||
      dup_s(src->egress_proxy_user, &dst->egress_proxy_user) ||
      dup_s(src->egress_proxy_pass, &dst->egress_proxy_pass) ||
      dup_s(src->mask_request_host, &dst->mask_request_host))
    goto fail;
  return 0;
fail:
  polcopy_free(dst);
  return -1;
}
