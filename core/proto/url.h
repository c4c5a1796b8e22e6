/* URL building for the E2B protocol: control plane, envd and sandbox ports.
 * Internal. See e2b-protocol.md §2 "envd URL" and §7.1.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_URL_H
#define ASB_PROTO_URL_H

#include <stddef.h>

#include "util/buf.h"

#define ASBI_ENGINE_PORT 49982 /* the local engine: control plane and router */
#define ASBI_ENVD_PORT 49983
#define ASBI_CODE_PORT 49999

/* Percent-encode s as a URL component (RFC 3986 unreserved kept; with
 * keep_slash '/' is kept too). */
int asbi_url_escape(asbi_buf *out, const char *s, int keep_slash);
/* Decode %XX and (if plus) '+' as space into a malloc'd string; -1 on a
 * malformed escape or an embedded NUL. */
int asbi_url_unescape(const char *s, size_t n, int plus, char **out);

/* Where traffic for (sandbox, port) goes. */
typedef struct asbi_route_cfg {
  const char *sandbox_url; /* configured single base URL, or NULL */
  int debug;               /* E2B debug mode: http://localhost:<port> */
  const char *domain;      /* sandbox domain ("e2b.app", "localhost:49982") */
  const char *sandbox_id;
} asbi_route_cfg;

typedef enum asbi_url_kind {
  ASBI_URL_API = 0,   /* SDK traffic: may use sandbox_url / sandbox.<domain> */
  ASBI_URL_PUBLIC = 1 /* URLs handed to users (file/signed URLs, get_url):
                         always the <port>-<id>.<domain> form */
} asbi_url_kind;

/* Base URL (no trailing slash) for port. Rules, in order:
 *  - ASBI_URL_API and sandbox_url set → sandbox_url;
 *  - debug → http://localhost:<port>;
 *  - ASBI_URL_API, port 49983 and domain one of E2B's own cloud domains
 *    (e2b.app, e2b.dev, e2b.pro, e2b-staging.dev) → https://sandbox.<domain>;
 *  - else <scheme>://<port>-<id>.<domain>, scheme http when the domain's host
 *    is loopback (localhost, *.localhost, 127.x, [::1]) else https.
 * Returns 0, or -1 if the id is not [a-z0-9_-]+ or the domain is empty. */
int asbi_url_sandbox_base(asbi_buf *out, const asbi_route_cfg *cfg, int port, asbi_url_kind kind);
/* "<port>-<id>.<domain>" ("localhost:<port>" in debug mode). */
int asbi_url_sandbox_host(asbi_buf *out, const asbi_route_cfg *cfg, int port);
/* 1 if a host (optionally with :port) is a loopback name or address. */
int asbi_url_host_is_loopback(const char *host);
/* Splits "<port>-<id>.<rest>" (as a router sees Host). Returns 0 and fills
 * port/id (id malloc'd), or -1 if host has another form. */
int asbi_url_parse_sandbox_host(const char *host, int *port, char **id);

#endif
