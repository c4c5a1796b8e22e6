/* The egress services' API (egress.h): the sandbox table, the resolver
 * and the proxy started together. SPDX-License-Identifier: Apache-2.0 */
#include "egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "resolver.h"
#include "sbx.h"
#include "tlsmitm.h"

struct asbn_egress {
  sbx_table *t;
  resolver *dns;
  proxy *px;
  tlsmitm *mitm;
};

static int bind_addrs(const asbn_egress_config *cfg, uint16_t port, struct sockaddr_storage *b,
                      size_t *n) {
  *n = 0;
  const char *b4 = cfg->bind4 ? cfg->bind4 : "0.0.0.0";
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", b4);
  if (resolver_parse_addr(tmp, 1, &b[*n]) < 0) return -1;
  ((struct sockaddr_in *)&b[*n])->sin_port = htons(port);
  if (b[*n].ss_family == AF_INET6) ((struct sockaddr_in6 *)&b[*n])->sin6_port = htons(port);
  (*n)++;
  if (cfg->bind6) {
    snprintf(tmp, sizeof tmp, "[%s]", cfg->bind6);
    if (resolver_parse_addr(tmp, 1, &b[*n]) < 0 || b[*n].ss_family != AF_INET6) return -1;
    ((struct sockaddr_in6 *)&b[*n])->sin6_port = htons(port);
    (*n)++;
  }
  return 0;
}

int asbn_egress_start(const asbn_egress_config *cfg, asbn_egress **out, char *err, size_t errlen) {
  *out = NULL;
  struct sockaddr_storage ups[ASBN_EGRESS_MAX_UPSTREAMS], binds[2];
  size_t nups = 0, nb = 0;
  if (cfg->ndns_upstream > ASBN_EGRESS_MAX_UPSTREAMS) {
    snprintf(err, errlen, "egress: at most %d upstream DNS servers", ASBN_EGRESS_MAX_UPSTREAMS);
    return -1;
  }
  for (size_t i = 0; i < cfg->ndns_upstream; i++) {
    if (!cfg->dns_upstream[i] || resolver_parse_addr(cfg->dns_upstream[i], 53, &ups[nups]) < 0) {
      snprintf(err, errlen, "egress: bad upstream DNS server '%s' (ADDR, ADDR:PORT or [V6]:PORT)",
               cfg->dns_upstream[i] ? cfg->dns_upstream[i] : "");
      return -1;
    }
    nups++;
  }
  if (!nups) nups = resolver_read_conf("/etc/resolv.conf", ups, ASBN_EGRESS_MAX_UPSTREAMS);
  if (!nups) {
    snprintf(err, errlen, "egress: no upstream DNS server (none given, none in /etc/resolv.conf)");
    return -1;
  }
  asbn_egress *eg = calloc(1, sizeof *eg);
  if (!eg ||
      !(eg->t = sbx_table_new(cfg->max_connections_per_sandbox, cfg->max_connections_total))) {
    free(eg);
    snprintf(err, errlen, "egress: out of memory");
    return -1;
  }
  if (bind_addrs(cfg, cfg->dns_port, binds, &nb) < 0) {
    snprintf(err, errlen, "egress: bad listen address");
    goto fail;
  }
  if (cfg->state_dir &&
      tlsmitm_open(cfg->state_dir, cfg->upstream_ca_file, &eg->mitm, err, errlen) < 0)
    goto fail;
  if (resolver_start(eg->t, binds, nb, ups, nups, &eg->dns, err, errlen) < 0) goto fail;
  bind_addrs(cfg, cfg->proxy_port, binds, &nb);
  if (proxy_start(eg->t, binds, nb, cfg->peek_timeout_s, cfg->secrets, eg->mitm, &eg->px, err,
                  errlen) < 0)
    goto fail;
  *out = eg;
  return 0;
fail:
  resolver_stop(eg->dns);
  tlsmitm_close(eg->mitm);
  sbx_table_free(eg->t);
  free(eg);
  return -1;
}

static int addr_of(const struct sockaddr *sa, int *family, const uint8_t **a) {
  if (!sa) return -1;
  *family = sa->sa_family;
  if (sa->sa_family == AF_INET)
    *a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
  else if (sa->sa_family == AF_INET6)
    *a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
  else {
    errno = EAFNOSUPPORT;
    return -1;
  }
  return 0;
}

int asbn_egress_set_policy(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                           const asbn_policy *p) {
  int family;
  const uint8_t *a;
  if (addr_of(sandbox_addr, &family, &a) < 0) return -1;
  return sbx_set_policy(eg->t, family, a, p);
}

int asbn_egress_add_address(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                            const struct sockaddr *also) {
  int f1, f2;
  const uint8_t *a1, *a2;
  if (addr_of(sandbox_addr, &f1, &a1) < 0 || addr_of(also, &f2, &a2) < 0) return -1;
  return sbx_add_address(eg->t, f1, a1, f2, a2);
}

int asbn_egress_forget(asbn_egress *eg, const struct sockaddr *sandbox_addr) {
  int family;
  const uint8_t *a;
  if (addr_of(sandbox_addr, &family, &a) < 0) return -1;
  return sbx_forget(eg->t, family, a);
}

int asbn_egress_counters_get(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                             asbn_egress_counters *out) {
  int family;
  const uint8_t *a;
  memset(out, 0, sizeof *out);
  if (addr_of(sandbox_addr, &family, &a) < 0) return -1;
  return sbx_counters(eg->t, family, a, out);
}

uint16_t asbn_egress_dns_port(const asbn_egress *eg) {
  return resolver_port(eg->dns);
}
uint16_t asbn_egress_proxy_port(const asbn_egress *eg) {
  return proxy_port(eg->px);
}
const char *asbn_egress_ca_path(const asbn_egress *eg) {
  return eg->mitm ? tlsmitm_ca_path(eg->mitm) : NULL;
}

void asbn_egress_stop(asbn_egress *eg) {
  if (!eg) return;
  proxy_stop(eg->px);
  resolver_stop(eg->dns);
  tlsmitm_close(eg->mitm);
  sbx_table_free(eg->t);
  free(eg);
}
