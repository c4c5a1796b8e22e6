/* net.egress.*'s driver of the egress services: starts asbn_egress in the
 * netns it runs in (the test's "engine" netns), prints its ports, then
 * takes commands on stdin, one a line, answering one line each:
 *   set ADDR [internet=0|1] [allow=ENTRY]... [deny=CIDR]... [socks=HOST:PORT]
 *            [user=U] [pass=P] [maxconn=N] [rule=DOMAIN|HEADER|VALUE]...
 *   secret NAME VALUE      (creates it in the store: --state-dir)
 *   alias ADDR ADDR2       (ADDR2 is the same sandbox: its IPv6 address)
 *   forget ADDR
 *   counters ADDR
 * ENTRY is a CIDR, an IP, a domain or *.domain; in a rule, %XX is a byte
 * (%20 a space) and DOMAIN may be *.domain. The policy is filled by
 * hand (policy.c's parser is the datapath's, tested on its own). EOF on
 * stdin stops the services and exits 0. SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/egress/egress.h"

static int parse_entry(const char *s, asbn_entry *e) {
  memset(e, 0, sizeof *e);
  char buf[300];
  snprintf(buf, sizeof buf, "%s", s);
  char *slash = strchr(buf, '/');
  int pfx = -1;
  if (slash) {
    *slash = 0;
    pfx = atoi(slash + 1);
  }
  if (inet_pton(AF_INET, buf, e->addr) == 1) {
    e->kind = ASBN_CIDR4;
    e->prefix = (uint8_t)(pfx < 0 ? 32 : pfx);
    return 0;
  }
  if (inet_pton(AF_INET6, buf, e->addr) == 1) {
    e->kind = ASBN_CIDR6;
    e->prefix = (uint8_t)(pfx < 0 ? 128 : pfx);
    return 0;
  }
  if (slash) return -1;
  if (strncmp(buf, "*.", 2) == 0) {
    e->kind = ASBN_WILDCARD;
    e->domain = strdup(buf + 2);
  } else {
    e->kind = ASBN_DOMAIN;
    e->domain = strdup(buf);
  }
  return e->domain ? 0 : -1;
}

static void unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    unsigned v;
    if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
      *o++ = (char)v;
      s += 2;
    } else
      *o++ = *s;
  }
  *o = 0;
}

/* DOMAIN|HEADER|VALUE: one header of a rule (a rule for the same domain
 * gets the header added). */
static int add_rule(asbn_policy *p, char *v) {
  char *bar1 = strchr(v, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
  if (!bar2) return -1;
  *bar1 = *bar2 = 0;
  unescape(bar2 + 1);
  asbn_domain_rule *r = NULL;
  const char *d = v[0] == '*' && v[1] == '.' ? v + 2 : v;
  for (size_t i = 0; i < p->nrules; i++)
    if (!strcmp(p->rules[i].match.domain, d)) r = &p->rules[i];
  if (!r) {
    asbn_domain_rule *g = realloc(p->rules, (p->nrules + 1) * sizeof *g);
    if (!g) return -1;
    p->rules = g;
    r = &g[p->nrules++];
    memset(r, 0, sizeof *r);
    r->match.kind = d == v ? ASBN_DOMAIN : ASBN_WILDCARD;
    r->match.domain = strdup(d);
  }
  asbn_header_rule *h = realloc(r->headers, (r->nheaders + 1) * sizeof *h);
  if (!h) return -1;
  r->headers = h;
  h[r->nheaders].name = strdup(bar1 + 1);
  h[r->nheaders].value = strdup(bar2 + 1);
  r->nheaders++;
  return 0;
}

static void policy_free(asbn_policy *p) {
  for (size_t i = 0; i < p->nrules; i++) {
    for (size_t j = 0; j < p->rules[i].nheaders; j++) {
      free(p->rules[i].headers[j].name);
      free(p->rules[i].headers[j].value);
    }
    free(p->rules[i].headers);
    free(p->rules[i].match.domain);
  }
  free(p->rules);
  for (size_t i = 0; i < p->nallow_out; i++) free(p->allow_out[i].domain);
  for (size_t i = 0; i < p->ndeny_out; i++) free(p->deny_out[i].domain);
  free(p->allow_out);
  free(p->deny_out);
  free(p->egress_proxy_addr);
  free(p->egress_proxy_user);
  free(p->egress_proxy_pass);
}

static int parse_addr(const char *s, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    return 0;
  }
  if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    return 0;
  }
  return -1;
}

static void cmd_set(asbn_egress *eg, char *args) {
  asbn_policy p;
  memset(&p, 0, sizeof p);
  p.allow_internet = 1;
  p.allow_public_traffic = 1;
  char *save = NULL, *tok = strtok_r(args, " \t\n", &save);
  struct sockaddr_storage ss;
  if (!tok || parse_addr(tok, &ss) < 0) {
    printf("err bad address\n");
    return;
  }
  int bad = 0;
  while (!bad && (tok = strtok_r(NULL, " \t\n", &save))) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      bad = 1;
      break;
    }
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    if (!strcmp(k, "internet"))
      p.allow_internet = atoi(v);
    else if (!strcmp(k, "allow") || !strcmp(k, "deny")) {
      int allow = !strcmp(k, "allow");
      asbn_entry **arr = allow ? &p.allow_out : &p.deny_out;
      size_t *n = allow ? &p.nallow_out : &p.ndeny_out;
      asbn_entry *g = realloc(*arr, (*n + 1) * sizeof **arr);
      if (!g) {
        bad = 1;
        break;
      }
      *arr = g;
      if (parse_entry(v, &g[*n]) < 0)
        bad = 1;
      else
        (*n)++;
    } else if (!strcmp(k, "socks"))
      p.egress_proxy_addr = strdup(v);
    else if (!strcmp(k, "user"))
      p.egress_proxy_user = strdup(v);
    else if (!strcmp(k, "pass"))
      p.egress_proxy_pass = strdup(v);
    else if (!strcmp(k, "maxconn"))
      p.max_connections = (unsigned)atoi(v);
    else if (!strcmp(k, "rule"))
      bad = add_rule(&p, eq + 1) < 0;
    else
      bad = 1;
  }
  if (bad)
    printf("err bad argument\n");
  else if (asbn_egress_set_policy(eg, (struct sockaddr *)&ss, &p) < 0)
    printf("err set_policy\n");
  else
    printf("ok\n");
  policy_free(&p);
}

int main(int argc, char **argv) {
  asbn_egress_config cfg;
  memset(&cfg, 0, sizeof cfg);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dns-upstream") && cfg.ndns_upstream < ASBN_EGRESS_MAX_UPSTREAMS)
      cfg.dns_upstream[cfg.ndns_upstream++] = argv[i + 1];
    else if (!strcmp(argv[i], "--bind6"))
      cfg.bind6 = argv[i + 1];
    else if (!strcmp(argv[i], "--bind"))
      cfg.bind4 = argv[i + 1];
    else if (!strcmp(argv[i], "--state-dir"))
      cfg.state_dir = argv[i + 1];
    else if (!strcmp(argv[i], "--upstream-ca"))
      cfg.upstream_ca_file = argv[i + 1];
    else if (!strcmp(argv[i], "--peek-timeout"))
      cfg.peek_timeout_s = (unsigned)atoi(argv[i + 1]);
    else {
      fprintf(stderr, "egress_run: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN); /* as the engine does (egress.h) */
  char err[256];
  asbn_secrets *secrets = NULL;
  if (cfg.state_dir && asbn_secrets_open(cfg.state_dir, &secrets, err, sizeof err) < 0) {
    fprintf(stderr, "egress_run: %s\n", err);
    return 1;
  }
  cfg.secrets = secrets;
  asbn_egress *eg;
  if (asbn_egress_start(&cfg, &eg, err, sizeof err) < 0) {
    fprintf(stderr, "egress_run: %s\n", err);
    return 1;
  }
  printf("ready dns=%u proxy=%u ca=%s\n", asbn_egress_dns_port(eg), asbn_egress_proxy_port(eg),
         asbn_egress_ca_path(eg) ? asbn_egress_ca_path(eg) : "-");
  fflush(stdout);
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    struct sockaddr_storage ss;
    char addr[128], name[200], value[2048];
    if (!strncmp(line, "set ", 4))
      cmd_set(eg, line + 4);
    else if (sscanf(line, "secret %199s %2047s", name, value) == 2) {
      int st = secrets ? asbn_secrets_create(secrets, name, value, NULL, NULL, err, sizeof err) : 0;
      printf(st == 201 ? "ok\n" : "err %d\n", st);
    } else if (sscanf(line, "alias %127s %199s", addr, name) == 2) {
      struct sockaddr_storage s2;
      int ok = parse_addr(addr, &ss) == 0 && parse_addr(name, &s2) == 0 &&
               asbn_egress_add_address(eg, (struct sockaddr *)&ss, (struct sockaddr *)&s2) == 0;
      printf(ok ? "ok\n" : "err alias\n");
    } else if (sscanf(line, "forget %127s", addr) == 1 && parse_addr(addr, &ss) == 0)
      printf(asbn_egress_forget(eg, (struct sockaddr *)&ss) == 0 ? "ok\n" : "err unknown\n");
    else if (sscanf(line, "counters %127s", addr) == 1 && parse_addr(addr, &ss) == 0) {
      asbn_egress_counters c;
      if (asbn_egress_counters_get(eg, (struct sockaddr *)&ss, &c) < 0)
        printf("err unknown\n");
      else
        printf(
            "counters allowed=%llu refused=%llu open=%llu dns_answered=%llu dns_refused=%llu "
            "out=%llu in=%llu\n",
            (unsigned long long)c.conns_allowed, (unsigned long long)c.conns_refused,
            (unsigned long long)c.conns_open, (unsigned long long)c.dns_answered,
            (unsigned long long)c.dns_refused, (unsigned long long)c.bytes_out,
            (unsigned long long)c.bytes_in);
    } else
      printf("err unknown command\n");
    fflush(stdout);
  }
  asbn_egress_stop(eg);
  asbn_secrets_close(secrets);
  return 0;
}
