/* Sandboxes' networks in the engine (sbxnet.c), on core/net's datapath:
 * the engine's datapath (open at start, closed at stop) and, per sandbox,
 * three separate steps — attach (a veth into its netns, isolated, every
 * destination refused), apply (its policy; again at every live update),
 * detach (before it is killed, or at engine stop) — so that a sandbox made ahead of time can
 * be attached early and get its policy when it is handed out.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SBXNET_H
#define ASB_ENGINE_SBXNET_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"
#include "net/policy.h"
#include "registry.h"

/* Opens the datapath unless cfg->no_network (then sandboxes have loopback
 * only, e->dp stays NULL). 0, or -1 with err. */
int sbxnet_open(engine *e, const engine_config *cfg, eng_err *err);
void sbxnet_close(engine *e);

/* The CA certificates (PEM) every sandbox trusts: the engine's own (it
 * signs what the engine's port shows for https://<port>-<id>.localhost,
 * which sandboxes open through their portals, portal.c) and, with network,
 * the egress CA (the proxy signs the intercepted domains' certificates
 * with it); NULL if neither could be read. */
const char *sbxnet_ca_pem(engine *e);
/* Where a sandbox's programs find it: the CA bundle, for the programs that
 * read a bundle of their own unless told (Node, pip's certifi, Go, ...). */
#define SBXNET_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* Whether the sandbox has that bundle (a regular file: the CA went into
 * it at create, iso.h extra_ca_pem); a template without one gets no CA
 * variables, which would name a file it does not have. */
int sbxnet_ca_installed(engine *e, asbe_sandbox *iso);

/* 0 also when the engine has no network (nothing to do). -1 with why.
 * Opens the sandbox's portal (e->sandbox_netns) with or without network;
 * sbxnet_detach closes it. */
int sbxnet_attach(engine *e, sbx *s, char *why, size_t len);
/* Applies p (NULL: the sandbox's own s->net_policy) and keeps a copy in
 * s->net_policy. 0, or -1 with why (the sandbox keeps its old filter). */
int sbxnet_apply(engine *e, sbx *s, const asbn_policy *p, char *why, size_t len);
/* dying: the sandbox is about to be killed (its pair goes with its netns,
 * the kill does not wait for a deletion); else its pair is deleted now. */
void sbxnet_detach(engine *e, sbx *s, int dying);

/* The same for a sandbox without a record (template builds): its link in
 * *out (NULL when the engine has no network). */
int sbxnet_attach_iso(engine *e, asbe_sandbox *iso, struct asbn_dp_link **out, char *why,
                      size_t len);
int sbxnet_apply_link(engine *e, struct asbn_dp_link *l, const asbn_policy *p, char *why,
                      size_t len);
void sbxnet_detach_link(engine *e, struct asbn_dp_link **l, int dying);

/* E2B's allowInternetAccess and network of the sandbox, for GET. */
int sbxnet_allow_internet(engine *e, const sbx *s);
cJSON *sbxnet_json(const sbx *s);
/* Bytes out/in of the sandbox's forwarded traffic; 0 when none. */
void sbxnet_counters(engine *e, sbx *s, uint64_t *out, uint64_t *in);
/* The /etc/resolv.conf new sandboxes get, or NULL (no network). */
const char *sbxnet_resolv_conf(engine *e);

#endif
