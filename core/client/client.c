/* The client handle: configuration resolution and the connection pool.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/url.h"
#include "util/util.h"
#include "http.h"
#include "internal.h"

#define DEFAULT_TIMEOUT_MS 60000L
#define DEFAULT_RETRIES 3
#define LOCAL_ENGINE_URL "http://127.0.0.1:" ASBI_STRINGIFY(ASBI_ENGINE_PORT)
#define LOCAL_ENGINE_DOMAIN "localhost:" ASBI_STRINGIFY(ASBI_ENGINE_PORT)
#define E2B_CLOUD_DOMAIN "e2b.app"
#define LOCAL_STATE_DIR "/var/lib/agent-sandbox"

/* An engine started on another port records its URL in <state>/engine.url.
 * Returns a malloc'd URL, or NULL. */
static char *read_engine_url(const char *state_dir) {
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/engine.url", state_dir);
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  char *u = NULL;
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (asbi_startswith(line, "http://127.0.0.1:")) u = asbi_strdup(line);
  }
  fclose(f);
  return u;
}

void asbi_client_follow_engine_url(asb_client *c) {
  char *u = c->local ? read_engine_url(c->state_dir) : NULL;
  if (!u) return;
  pthread_mutex_lock(&c->mu);
  if (strcmp(u, c->api_url) != 0 && c->nretired + 2 <= 8) {
    int same = c->sandbox_url && strcmp(c->sandbox_url, c->api_url) == 0;
    c->retired[c->nretired++] = c->api_url;
    c->api_url = u;
    u = NULL;
    if (same) {
      char *s2 = asbi_strdup(c->api_url);
      if (s2) {
        c->retired[c->nretired++] = c->sandbox_url;
        c->sandbox_url = s2;
      }
    }
  }
  pthread_mutex_unlock(&c->mu);
  free(u);
}

ASBI_DEFINE_OPTIONS_INIT(asb_client_options, ASB_CLIENT_OPTIONS_VERSION, ASB_CLIENT_OPTIONS_INIT)

ASBI_DEFINE_OPTIONS_INIT(asb_call_options, ASB_CALL_OPTIONS_VERSION, ASB_CALL_OPTIONS_INIT)

/* explicit option > ASB_<name> > E2B_<name>; NULL if none. */
static const char *pick(const char *explicit_value, const char *name) {
  if (!asbi_empty(explicit_value)) return explicit_value;
  char var[64];
  snprintf(var, sizeof var, "ASB_%s", name);
  const char *v = asbi_getenv(var);
  if (v) return v;
  snprintf(var, sizeof var, "E2B_%s", name);
  return asbi_getenv(var);
}

static int valid_url(const char *u) {
  if (!asbi_startswith(u, "http://") && !asbi_startswith(u, "https://")) return 0;
  for (const char *p = u; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f) return 0;
  const char *host = strstr(u, "://") + 3;
  return *host && *host != '/';
}

static char *dup_url(const char *u) {
  /* Drop trailing slashes so paths can be appended with "/". */
  size_t n = strlen(u);
  while (n > 0 && u[n - 1] == '/') n--;
  return asbi_strndup(u, n);
}

static int valid_header(const char *h) {
  const char *colon = strchr(h, ':');
  if (!colon || colon == h) return 0;
  for (const char *p = h; p < colon; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f) return 0;
  for (const char *p = colon; *p; p++)
    if (*p == '\r' || *p == '\n') return 0;
  return 1;
}

static void client_destroy(asb_client *c) {
  asbi_http_free(c->http);
  asbi_life_fini(&c->life);
  for (int i = 0; i < c->nretired; i++) free(c->retired[i]);
  free(c->state_dir);
  pthread_mutex_destroy(&c->mu);
  free(c->api_key);
  free(c->api_url);
  free(c->domain);
  free(c->sandbox_url);
  free(c->user_agent);
  if (c->headers)
    for (char **h = c->headers; *h; h++) free(*h);
  free(c->headers);
  free(c);
}

int asb_client_new(asb_client **out, const asb_client_options *opts) {
  if (!out) return asbi_err(ASB_EINVAL, "asb_client_new: out is NULL");
  ASBI_CHECK_VERSION(opts, ASB_CLIENT_OPTIONS_VERSION, "asb_client_options");
  asb_client_options dflt = ASB_CLIENT_OPTIONS_INIT;
  if (!opts) opts = &dflt;

  asb_client *c = calloc(1, sizeof *c);
  if (!c) return asbi_oom();
  if (asbi_life_init(&c->life)) {
    free(c);
    return asbi_oom();
  }
  pthread_mutex_init(&c->mu, NULL);
  int rc = ASB_OK;

  if (opts->debug)
    c->debug = opts->debug > 0;
  else
    c->debug = asbi_parse_bool(pick(NULL, "DEBUG"), 0);

  const char *key = pick(opts->api_key, "API_KEY");
  const char *api_url = pick(opts->api_url, "API_URL");
  const char *domain = pick(opts->domain, "DOMAIN");
  const char *sandbox_url = pick(opts->sandbox_url, "SANDBOX_URL");

  char buf[512];
  if (!api_url && !c->debug && !domain && !key) c->local = 1;
  if (!api_url) {
    if (c->debug) {
      api_url = "http://localhost:3000";
    } else if (domain) {
      snprintf(buf, sizeof buf, "https://api.%s", domain);
      api_url = buf;
    } else if (key) {
      api_url = "https://api." E2B_CLOUD_DOMAIN;
    } else {
      api_url = LOCAL_ENGINE_URL; /* nothing configured: the local engine */
    }
  }
  if (!domain)
    domain = strcmp(api_url, LOCAL_ENGINE_URL) == 0 ? LOCAL_ENGINE_DOMAIN : E2B_CLOUD_DOMAIN;
  if (!valid_url(api_url)) {
    rc = asbi_err(ASB_EINVAL, "invalid API URL '%s': expected http(s)://host", api_url);
    goto fail;
  }
  if (sandbox_url && !valid_url(sandbox_url)) {
    rc = asbi_err(ASB_EINVAL, "invalid sandbox URL '%s': expected http(s)://host", sandbox_url);
    goto fail;
  }
  for (const char *p = domain; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == '/' || *p == 0x7f) {
      rc = asbi_err(ASB_EINVAL, "invalid domain '%s'", domain);
      goto fail;
    }
  if (key)
    for (const char *p = key; *p; p++)
      if ((unsigned char)*p < ' ' || *p == 0x7f) {
        rc = asbi_err(ASB_EINVAL, "invalid API key: control characters");
        goto fail;
      }

  c->api_key = asbi_strdup(key);
  c->api_url = dup_url(api_url);
  c->domain = asbi_strdup(domain);
  c->sandbox_url = sandbox_url ? dup_url(sandbox_url) : NULL;
  if (c->local) {
    c->autostart =
        opts->autostart ? opts->autostart > 0 : asbi_parse_bool(asbi_getenv("ASB_AUTOSTART"), 1);
    const char *sd = asbi_getenv("ASB_STATE_DIR");
    c->state_dir = asbi_strdup(sd ? sd : LOCAL_STATE_DIR);
    if (!c->state_dir) {
      rc = asbi_oom();
      goto fail;
    }
    char *u = read_engine_url(c->state_dir);
    if (u) {
      free(c->api_url);
      c->api_url = u;
    }
    /* Sandbox traffic goes through the engine's router by headers, so no
     * name resolution of <port>-<id>.localhost is needed. */
    if (!c->sandbox_url) c->sandbox_url = asbi_strdup(c->api_url);
  }
  if (opts->user_agent) {
    c->user_agent = asbi_strdup(opts->user_agent);
  } else {
    snprintf(buf, sizeof buf, "agent-sandbox-c/%s", ASB_VERSION_STRING);
    c->user_agent = asbi_strdup(buf);
  }
  if ((key && !c->api_key) || !c->api_url || !c->domain || !c->user_agent ||
      (sandbox_url && !c->sandbox_url)) {
    rc = asbi_oom();
    goto fail;
  }
  size_t nh = 0;
  while (opts->headers && opts->headers[nh]) nh++;
  c->headers = calloc(nh + 1, sizeof *c->headers);
  if (!c->headers) {
    rc = asbi_oom();
    goto fail;
  }
  for (size_t i = 0; i < nh; i++) {
    if (!valid_header(opts->headers[i])) {
      rc = asbi_err(ASB_EINVAL, "invalid header '%s': expected 'Name: value'", opts->headers[i]);
      goto fail;
    }
    if (!(c->headers[i] = asbi_strdup(opts->headers[i]))) {
      rc = asbi_oom();
      goto fail;
    }
  }
  c->request_timeout_ms = opts->request_timeout_ms ? opts->request_timeout_ms : DEFAULT_TIMEOUT_MS;
  c->max_retries = opts->max_retries > 0   ? opts->max_retries
                   : opts->max_retries < 0 ? 0
                                           : DEFAULT_RETRIES;
  if ((rc = asbi_http_new(&c->http)) != ASB_OK) goto fail;
  *out = c;
  return ASB_OK;
fail:
  client_destroy(c);
  return rc;
}

void asbi_client_ref(asb_client *c) {
  asbi_life_hold(&c->life);
}

asb_client *asbi_client_hold(asb_client *c) {
  if (c) asbi_life_hold(&c->life);
  return c;
}

void asbi_client_unref(asb_client *c) {
  if (c && asbi_life_drop(&c->life)) client_destroy(c);
}

/* Calls in flight on the client (creating a sandbox, building a template)
 * end with ASB_ECANCELED; its sandboxes go on, holding it. */
void asb_client_free(asb_client *c) {
  if (!c) return;
  asbi_life_stop(&c->life);
  asbi_client_unref(c);
}

long asbi_client_timeout(const asb_client *c, long call_timeout_ms) {
  if (call_timeout_ms > 0) return call_timeout_ms;
  if (call_timeout_ms < 0) return 0;
  return c->request_timeout_ms > 0 ? c->request_timeout_ms : 0;
}

const char *asb_client_api_url(const asb_client *c) {
  return c ? c->api_url : NULL;
}
const char *asb_client_domain(const asb_client *c) {
  return c ? c->domain : NULL;
}
const char *asb_client_sandbox_url(const asb_client *c) {
  return c ? c->sandbox_url : NULL;
}
int asb_client_is_debug(const asb_client *c) {
  return c ? c->debug : 0;
}
long asb_client_request_timeout_ms(const asb_client *c) {
  return c ? c->request_timeout_ms : 0;
}
int asb_client_has_api_key(const asb_client *c) {
  return c && c->api_key;
}
