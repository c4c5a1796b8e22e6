/* Sandboxes' networks in the engine (see sbxnet.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "sbxnet.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "net/datapath.h"
#include "net/egress/egress.h"
#include "tlsca.h"
#include "util/buf.h"
#include "util/log.h"

/* Appends the PEM file at path to *pem (the CAs sandboxes trust). */
static int add_pem(char **pem, const char *path) {
  asbi_buf b = ASBI_BUF_INIT;
  int rc = asbi_buf_read_file(&b, path, 8191);
  if (rc == 0 && *pem) {
    asbi_buf all = ASBI_BUF_INIT;
    asbi_buf_puts(&all, *pem);
    if (all.len && all.data[all.len - 1] != '\n') asbi_buf_putc(&all, '\n');
    asbi_buf_puts(&all, b.data ? b.data : "");
    asbi_buf_free(&b);
    b = all;
  }
  if (rc == 0) {
    free(*pem);
    *pem = asbi_buf_detach(&b, NULL);
  }
  asbi_buf_free(&b);
  return rc;
}

/* The engine's own CA (tls/ca.pem, made now if this is the state dir's
 * first start) joins every sandbox's trust store too: code in a sandbox
 * opens other sandboxes' https://<port>-<id>.localhost:<port> URLs
 * through its portal (portal.c), served with the engine's certificates. */
static void add_engine_ca(engine *e) {
  char why[256];
  tlsca *ca = tlsca_open(e->state_dir, why, sizeof why);
  if (!ca) {
    asbi_log("sandboxes will not trust the engine's https: %s", why);
    return;
  }
  int rc = add_pem(&e->egress_ca_pem, tlsca_path(ca));
  if (rc) asbi_log("cannot read the engine's CA %s: %s", tlsca_path(ca), strerror(-rc));
  tlsca_free(ca);
}

int sbxnet_open(engine *e, const engine_config *cfg, eng_err *err) {
  e->dp = NULL;
  e->egress = NULL;
  e->egress_ca_pem = NULL;
  if (cfg->no_network) {
    add_engine_ca(e);
    return 0;
  }
  char why[512];
  /* the resolver and the proxy first: the datapath redirects to their ports */
  asbn_egress_config ec;
  memset(&ec, 0, sizeof ec);
  ec.bind4 = "0.0.0.0"; /* every host end; the datapath closes them to everyone else */
  /* IPv6 host ends too, where the kernel has IPv6 (the datapath decides
   * whether sandboxes get it; the input rules close the ports either way) */
  int v6 = access("/proc/sys/net/ipv6", F_OK) == 0 &&
           !(cfg->net_cidr6 && strcmp(cfg->net_cidr6, "off") == 0);
  ec.bind6 = v6 ? "::" : NULL;
  for (size_t i = 0; i < cfg->ndns_upstream && i < ASBN_EGRESS_MAX_UPSTREAMS; i++)
    ec.dns_upstream[ec.ndns_upstream++] = cfg->dns_upstream[i];
  ec.state_dir = e->state_dir;
  ec.secrets = e->secrets;
  ec.upstream_ca_file = cfg->egress_upstream_ca;
  if (asbn_egress_start(&ec, &e->egress, why, sizeof why) != 0)
    return eng_err_set(err, ENG_EINTERNAL, NULL,
                       "cannot start the sandboxes' resolver and proxy: %s (--no-network: "
                       "loopback only)",
                       why);
  /* The egress CA goes into every sandbox's trust store (its CA bundle,
   * iso.h extra_ca_pem): read once, the same for all */
  const char *ca = asbn_egress_ca_path(e->egress);
  if (ca) {
    int rc = add_pem(&e->egress_ca_pem, ca);
    if (rc != 0) {
      asbn_egress_stop(e->egress);
      e->egress = NULL;
      return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot read the egress CA %s: %s", ca,
                         strerror(-rc));
    }
  }
  add_engine_ca(e);
  asbn_dp_config c;
  memset(&c, 0, sizeof c);
  c.name = cfg->cgroup_name ? cfg->cgroup_name : "agent-sandbox";
  c.cidr4 = cfg->net_cidr;
  c.cidr6 = v6 ? cfg->net_cidr6 : "off";
  c.state_dir = e->state_dir;
  c.dns_port = asbn_egress_dns_port(e->egress);
  c.proxy_port = asbn_egress_proxy_port(e->egress);
  if (asbn_dp_open(&c, &e->dp, why, sizeof why) != 0) {
    asbn_egress_stop(e->egress);
    e->egress = NULL;
    free(e->egress_ca_pem);
    e->egress_ca_pem = NULL;
    return eng_err_set(err, ENG_EINTERNAL, NULL,
                       "cannot set up the sandboxes' network: %s (--no-network: loopback only)",
                       why);
  }
  asbi_log("network: sandboxes get eth0 in %s%s, nftables table inet %s, DNS on :%u, proxy on :%u",
           cfg->net_cidr ? cfg->net_cidr : "10.88.0.0/16",
           asbn_dp_has_ipv6(e->dp) ? " and IPv6" : " (IPv4 only)", asbn_dp_table(e->dp),
           (unsigned)c.dns_port, (unsigned)c.proxy_port);
  return 0;
}

void sbxnet_close(engine *e) {
  asbn_dp_close(e->dp);
  e->dp = NULL;
  asbn_egress_stop(e->egress);
  e->egress = NULL;
  free(e->egress_ca_pem);
  e->egress_ca_pem = NULL;
}

const char *sbxnet_ca_pem(engine *e) {
  return e->egress_ca_pem; /* the egress CA (with network) and the engine's */
}

int sbxnet_ca_installed(engine *e, asbe_sandbox *iso) {
  if (!sbxnet_ca_pem(e) || !iso) return 0;
  /* the sandbox's bundle, resolved inside its root (its init's), never
   * following a symlink out of it; the pidfd says the pid is still its */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/root", (int)asbe_sandbox_pid(iso));
  int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return 0;
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = (int)syscall(SYS_openat2, root, &SBXNET_CA_BUNDLE[1], &how, sizeof how);
  struct stat st;
  int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && asbe_sandbox_alive(iso);
  if (fd >= 0) close(fd);
  close(root);
  return ok;
}

static struct sockaddr_in link_addr(const struct asbn_dp_link *l) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr = asbn_dp_sandbox_addr(l);
  return a;
}

const char *sbxnet_resolv_conf(engine *e) {
  return e->dp ? asbn_dp_resolv_conf(e->dp) : NULL;
}

int sbxnet_attach_iso(engine *e, asbe_sandbox *iso, struct asbn_dp_link **out, char *why,
                      size_t len) {
  *out = NULL;
  if (!e->dp) return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)asbe_sandbox_pid(iso));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  /* the pid could have been reused between its death and the open: the
   * pidfd says whether the netns is still the sandbox's */
  if (fd < 0 || !asbe_sandbox_alive(iso)) {
    if (fd >= 0) close(fd);
    snprintf(why, len, "the sandbox's netns: %s", fd < 0 ? strerror(errno) : "it died");
    return -1;
  }
  int rc = asbn_dp_attach(e->dp, fd, out, why, len);
  close(fd);
  return rc;
}

int sbxnet_apply_link(engine *e, struct asbn_dp_link *l, const asbn_policy *p, char *why,
                      size_t len) {
  if (!e->dp || !l) return 0;
  /* the egress services first: a proxied flow the new filter sends them
   * already finds the new policy */
  struct sockaddr_in a = link_addr(l);
  if (e->egress && asbn_egress_set_policy(e->egress, (struct sockaddr *)&a, p) != 0) {
    snprintf(why, len, "the egress services refused the policy: %s", strerror(errno));
    return -1;
  }
  /* its IPv6 address is the same sandbox to them (one policy, the AAAA
   * answers it got over IPv4, one set of counters) */
  struct sockaddr_in6 a6;
  memset(&a6, 0, sizeof a6);
  a6.sin6_family = AF_INET6;
  if (e->egress && asbn_dp_sandbox_addr6(e->dp, l, &a6.sin6_addr) == 0 &&
      asbn_egress_add_address(e->egress, (struct sockaddr *)&a, (struct sockaddr *)&a6) != 0) {
    snprintf(why, len, "the egress services refused the sandbox's IPv6 address");
    return -1;
  }
  return asbn_dp_apply(e->dp, l, p, why, len);
}

void sbxnet_detach_link(engine *e, struct asbn_dp_link **l, int dying) {
  if (e->dp && *l) {
    struct sockaddr_in a = link_addr(*l);
    if (e->egress) asbn_egress_forget(e->egress, (struct sockaddr *)&a);
    if (dying)
      asbn_dp_release(e->dp, *l); /* the kernel deletes the pair with the netns */
    else
      asbn_dp_detach(e->dp, *l);
  }
  *l = NULL;
}

int sbxnet_attach(engine *e, sbx *s, char *why, size_t len) {
  /* its portal to the engine's URLs (portal.c), with or without network */
  if (e->sandbox_netns) e->sandbox_netns(e, s, 1);
  if (!e->dp || s->net_link) return 0;
  return sbxnet_attach_iso(e, s->iso, &s->net_link, why, len);
}

int sbxnet_apply(engine *e, sbx *s, const asbn_policy *p, char *why, size_t len) {
  asbn_policy dflt;
  memset(&dflt, 0, sizeof dflt);
  dflt.allow_internet = dflt.allow_public_traffic = 1;
  asbn_policy *cp = NULL;
  /* under the record's lock: a kill (lifecycle_kill detaches under it)
   * cannot free the link while the policy goes onto it */
  pthread_mutex_lock(&s->mu);
  if (!p) p = s->net_policy ? s->net_policy : &dflt;
  int rc = -1;
  if (s->state == SBX_DEAD) {
    snprintf(why, len, "the sandbox is gone");
  } else if (sbxnet_apply_link(e, s->net_link, p, why, len) == 0) {
    rc = 0;
    if (p != s->net_policy) {
      cp = calloc(1, sizeof *cp);
      if (!cp || asbn_policy_copy(p, cp) != 0) {
        free(cp);
        cp = NULL;
        snprintf(why, len, "out of memory");
        rc = -1;
      } else {
        asbn_policy *old = s->net_policy;
        s->net_policy = cp;
        cp = old; /* freed below, outside the lock */
      }
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (cp) {
    asbn_policy_free(cp);
    free(cp);
  }
  return rc;
}

void sbxnet_detach(engine *e, sbx *s, int dying) {
  if (e->sandbox_netns) e->sandbox_netns(e, s, 0); /* the socket would keep the netns */
  sbxnet_detach_link(e, &s->net_link, dying);
}

int sbxnet_allow_internet(engine *e, const sbx *s) {
  return e->dp && (!s->net_policy || s->net_policy->allow_internet);
}

cJSON *sbxnet_json(const sbx *s) {
  if (s->net_policy) return asbn_policy_to_json(s->net_policy);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "allowPublicTraffic", 1);
  return o;
}

void sbxnet_counters(engine *e, sbx *s, uint64_t *out, uint64_t *in) {
  *out = *in = 0;
  if (!e->dp || !s->net_link) return;
  asbn_dp_counters(e->dp, s->net_link, out, in);
  /* what went through the proxy is not forwarded: its payload counts too */
  asbn_egress_counters c;
  struct sockaddr_in a = link_addr(s->net_link);
  if (e->egress && asbn_egress_counters_get(e->egress, (struct sockaddr *)&a, &c) == 0) {
    *out += c.bytes_out;
    *in += c.bytes_in;
  }
}
