/* Sandbox handles: identity, envd route and token, public hosts and URLs.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/url.h"
#include "util/util.h"
#include "envd.h"

/* The envd version whose behaviour the library assumes when none is known
 * (kept equal to what our own envd reports). */
#define NEWEST_KNOWN_ENVD "0.6.13"

ASBI_DEFINE_OPTIONS_INIT(asb_sandbox_attach_options, ASB_SANDBOX_ATTACH_OPTIONS_VERSION,
                         ASB_SANDBOX_ATTACH_OPTIONS_INIT)

static void parse_version(const char *v, int out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (v && *v == 'v') v++;
  if (v) sscanf(v, "%d.%d.%d", &out[0], &out[1], &out[2]);
}

/* Sandbox ids in E2B's form ([a-z0-9]); "_" and "-" are tolerated for ids
 * such as E2B's debug id "debug_sandbox_id". */
static int valid_id(const char *id) {
  if (!id || !*id || strlen(id) > 128) return 0;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) return 0;
  return 1;
}

static int no_ctl(const char *s) {
  for (; s && *s; s++)
    if ((unsigned char)*s < ' ' || *s == 0x7f) return 0;
  return 1;
}

void asbi_sandbox_ref(asb_sandbox *sb) {
  asbi_life_hold(&sb->life);
}

asb_sandbox *asbi_sandbox_hold(asb_sandbox *sb) {
  if (sb) asbi_life_hold(&sb->life);
  return sb;
}

static void sandbox_destroy(asb_sandbox *sb) {
  asbi_life_fini(&sb->life);
  asbi_client_unref(sb->client);
  free(sb->id);
  free(sb->envd_token);
  free(sb->envd_version);
  free(sb->domain);
  free(sb->traffic_token);
  free(sb->envd_base);
  free(sb->hdr_id);
  free(sb->hdr_token);
  free(sb->hdr_ua);
  free(sb->template_id);
  free(sb->alias);
  free(sb->fork_mode);
  free(sb->mcp_token);
  free(sb);
}

void asbi_sandbox_unref(asb_sandbox *sb) {
  if (sb && asbi_life_drop(&sb->life)) sandbox_destroy(sb);
}

/* Calls in flight on the handle end with ASB_ECANCELED; its processes and
 * watches go on (they hold it, and their calls carry their own stop). */
void asb_sandbox_free(asb_sandbox *sb) {
  if (!sb) return;
  asbi_life_stop(&sb->life);
  asbi_sandbox_unref(sb);
}

/* Shared by attach and by the control-plane constructors (sandbox_api.c). */
int asbi_sandbox_new(asb_sandbox **out, asb_client *client, const char *id, const char *token,
                     const char *envd_version, const char *domain, const char *traffic_token) {
  if (!client) return asbi_err(ASB_EINVAL, "sandbox: client is NULL");
  if (!valid_id(id))
    return asbi_err(ASB_EINVAL, "invalid sandbox id '%s': expected [a-z0-9]+", id ? id : "(null)");
  if (!no_ctl(token) || !no_ctl(traffic_token) || !no_ctl(envd_version))
    return asbi_err(ASB_EINVAL, "sandbox: control characters in a token");
  if (domain && (!*domain || strchr(domain, '/') || !no_ctl(domain)))
    return asbi_err(ASB_EINVAL, "invalid sandbox domain '%s'", domain);
  asb_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) return asbi_oom();
  if (asbi_life_init(&sb->life)) {
    free(sb);
    return asbi_oom();
  }
  asbi_client_ref(client);
  sb->client = client;
  sb->id = asbi_strdup(id);
  sb->envd_token = asbi_empty(token) ? NULL : asbi_strdup(token);
  sb->envd_version = asbi_strdup(envd_version ? envd_version : NEWEST_KNOWN_ENVD);
  sb->domain = asbi_strdup(domain ? domain : client->domain);
  sb->traffic_token = asbi_empty(traffic_token) ? NULL : asbi_strdup(traffic_token);
  parse_version(sb->envd_version, sb->ver);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_route_cfg cfg = {client->sandbox_url, client->debug, sb->domain, sb->id};
  int rc = asbi_url_sandbox_base(&b, &cfg, ASBI_ENVD_PORT, ASBI_URL_API);
  sb->envd_base = asbi_buf_detach(&b, NULL);
  asbi_buf_printf(&b, "E2b-Sandbox-Id: %s", id);
  sb->hdr_id = asbi_buf_detach(&b, NULL);
  if (sb->envd_token) {
    asbi_buf_printf(&b, "X-Access-Token: %s", sb->envd_token);
    sb->hdr_token = asbi_buf_detach(&b, NULL);
  }
  asbi_buf_printf(&b, "User-Agent: %s", client->user_agent);
  sb->hdr_ua = asbi_buf_detach(&b, NULL);
  if (rc != 0) {
    asbi_sandbox_unref(sb);
    return asbi_err(ASB_EINVAL, "sandbox %s: cannot route to domain '%s'", id,
                    domain ? domain : client->domain);
  }
  if (!sb->id || !sb->envd_version || !sb->domain || !sb->envd_base || !sb->hdr_id || !sb->hdr_ua ||
      (token && *token && !sb->hdr_token) || (token && *token && !sb->envd_token)) {
    asbi_sandbox_unref(sb);
    return asbi_oom();
  }
  *out = sb;
  return ASB_OK;
}

int asb_sandbox_attach(asb_sandbox **out, asb_client *client, const char *sandbox_id,
                       const asb_sandbox_attach_options *opts) {
  if (!out) return asbi_err(ASB_EINVAL, "asb_sandbox_attach: out is NULL");
  ASBI_CHECK_VERSION(opts, ASB_SANDBOX_ATTACH_OPTIONS_VERSION, "asb_sandbox_attach_options");
  return asbi_sandbox_new(out, client, sandbox_id, opts ? opts->envd_access_token : NULL,
                          opts ? opts->envd_version : NULL, opts ? opts->domain : NULL,
                          opts ? opts->traffic_access_token : NULL);
}

const char *asb_sandbox_id(const asb_sandbox *sb) {
  return sb ? sb->id : NULL;
}
const char *asb_sandbox_envd_version(const asb_sandbox *sb) {
  return sb ? sb->envd_version : NULL;
}
const char *asb_sandbox_domain(const asb_sandbox *sb) {
  return sb ? sb->domain : NULL;
}
const char *asb_sandbox_envd_access_token(const asb_sandbox *sb) {
  return sb ? sb->envd_token : NULL;
}
const char *asb_sandbox_traffic_access_token(const asb_sandbox *sb) {
  return sb ? sb->traffic_token : NULL;
}

static int copy_out(asbi_buf *b, char *buf, size_t buflen, const char *what) {
  int rc = ASB_OK;
  if (!b->data)
    rc = asbi_oom();
  else if (!buf || b->len + 1 > buflen)
    rc = asbi_err(ASB_EINVAL, "%s: buffer of %zu bytes too small (need %zu)", what, buflen,
                  b->len + 1);
  else
    memcpy(buf, b->data, b->len + 1);
  asbi_buf_free(b);
  return rc;
}

int asb_sandbox_get_host(char *buf, size_t buflen, const asb_sandbox *sb, int port) {
  if (!sb) return asbi_err(ASB_EINVAL, "get_host: sandbox is NULL");
  if (port < 1 || port > 65535) return asbi_err(ASB_EINVAL, "get_host: port %d out of range", port);
  asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_url_sandbox_host(&b, &cfg, port) != 0) {
    asbi_buf_free(&b);
    return asbi_err(ASB_EINVAL, "get_host: cannot form a host");
  }
  return copy_out(&b, buf, buflen, "get_host");
}

int asb_sandbox_get_url(char *buf, size_t buflen, const asb_sandbox *sb, int port) {
  if (!sb) return asbi_err(ASB_EINVAL, "get_url: sandbox is NULL");
  if (port < 1 || port > 65535) return asbi_err(ASB_EINVAL, "get_url: port %d out of range", port);
  asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_url_sandbox_base(&b, &cfg, port, ASBI_URL_PUBLIC) != 0) {
    asbi_buf_free(&b);
    return asbi_err(ASB_EINVAL, "get_url: cannot form a URL");
  }
  return copy_out(&b, buf, buflen, "get_url");
}

void asb_free(void *ptr) {
  free(ptr);
}
