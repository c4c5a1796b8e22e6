/* Which sandbox a tool acts on: a cache of handles by id (shared by every
 * session; handles are thread-safe), and each session's default sandbox,
 * created on first use, kept alive while it is used, killed when the
 * session ends (unless --keep).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "util/util.h"

/* Connect's guarantee: a resumed or connected sandbox lives at least this
 * long from then (sandbox.h). */
#define CONNECT_LIFETIME_MS 300000u
#define KNOWN_MAX 64

/* ---- the cache (callers hold srv->mu) ----------------------------------------------- */

static void ref_drop_locked(sbx_ref *e) {
  if (--e->refs == 0) {
    asb_sandbox_free(e->h);
    free(e->id);
    free(e);
  }
}

static sbx_ref *find_locked(mcp_server *srv, const char *id) {
  for (sbx_ref *e = srv->cache; e; e = e->next)
    if (!strcmp(e->id, id)) return e;
  return NULL;
}

/* Unlink e and drop the cache's reference. */
static void kill_locked(mcp_server *srv, sbx_ref *e) {
  for (sbx_ref **p = &srv->cache; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  e->dead = 1;
  ref_drop_locked(e);
}

static sbx_ref *insert_locked(mcp_server *srv, asb_sandbox *h, int connected) {
  sbx_ref *e = calloc(1, sizeof *e);
  if (!e || !(e->id = asbi_strdup(asb_sandbox_id(h)))) {
    free(e);
    asb_sandbox_free(h);
    return NULL;
  }
  sbx_ref *old = find_locked(srv, e->id);
  if (old) kill_locked(srv, old);
  e->h = h;
  e->connected = connected;
  e->refs = 2; /* the cache's and the caller's */
  e->next = srv->cache;
  srv->cache = e;
  return e;
}

void mcp_sandbox_put(mcp_server *srv, sbx_ref *ref) {
  if (!ref) return;
  pthread_mutex_lock(&srv->mu);
  ref_drop_locked(ref);
  pthread_mutex_unlock(&srv->mu);
}

sbx_ref *mcp_sandbox_adopt(mcp_server *srv, asb_sandbox *h) {
  pthread_mutex_lock(&srv->mu);
  sbx_ref *e = insert_locked(srv, h, 1);
  pthread_mutex_unlock(&srv->mu);
  return e;
}

sbx_ref *mcp_sandbox_get(mcp_server *srv, const char *id, int need_envd, asb_cancel *cancel,
                         int *rc, int *connected) {
  if (connected) *connected = 0;
  pthread_mutex_lock(&srv->mu);
  sbx_ref *e = find_locked(srv, id);
  if (e && (e->connected || !need_envd)) {
    e->refs++;
    pthread_mutex_unlock(&srv->mu);
    *rc = ASB_OK;
    return e;
  }
  pthread_mutex_unlock(&srv->mu);
  asb_sandbox *h = NULL;
  if (need_envd) {
    /* connect asks the control plane for envd's token (and resumes a
     * paused sandbox, as E2B's connect does). */
    asb_call_options co = ASB_CALL_OPTIONS_INIT;
    co.cancel = cancel;
    *rc = asb_sandbox_connect(&h, srv->client, id, 0, &co);
    if (connected && *rc == ASB_OK) *connected = 1;
  } else {
    /* Control-plane calls need no token: no network call to make one. */
    *rc = asb_sandbox_attach(&h, srv->client, id, NULL);
  }
  if (*rc != ASB_OK) return NULL;
  pthread_mutex_lock(&srv->mu);
  e = find_locked(srv, id);
  if (e && (e->connected || !need_envd)) { /* another thread was quicker */
    e->refs++;
    pthread_mutex_unlock(&srv->mu);
    asb_sandbox_free(h);
    return e;
  }
  e = insert_locked(srv, h, need_envd);
  pthread_mutex_unlock(&srv->mu);
  if (!e) *rc = ASB_ENOMEM;
  return e;
}

void mcp_sandbox_disconnected(mcp_server *srv, const char *id) {
  pthread_mutex_lock(&srv->mu);
  sbx_ref *e = find_locked(srv, id);
  if (e) e->connected = 0;
  pthread_mutex_unlock(&srv->mu);
}

void mcp_sandbox_cache_free(mcp_server *srv) {
  pthread_mutex_lock(&srv->mu);
  while (srv->cache) kill_locked(srv, srv->cache);
  pthread_mutex_unlock(&srv->mu);
}

/* ---- a session's sandboxes ---------------------------------------------------------- */

void mcp_sandbox_note(mcp_session *s, const char *id) {
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nknown; i++)
    if (!strcmp(s->known[i], id)) {
      pthread_mutex_unlock(&s->mu);
      return;
    }
  if (s->nknown == KNOWN_MAX) { /* forget the oldest */
    free(s->known[0]);
    memmove(s->known, s->known + 1, (KNOWN_MAX - 1) * sizeof *s->known);
    s->nknown--;
  }
  char **k = realloc(s->known, (s->nknown + 1) * sizeof *k);
  char *d = asbi_strdup(id);
  if (k && d) {
    s->known = k;
    s->known[s->nknown++] = d;
  } else {
    if (k) s->known = k;
    free(d);
  }
  pthread_mutex_unlock(&s->mu);
}

static void unnote(mcp_session *s, const char *id) {
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nknown; i++)
    if (!strcmp(s->known[i], id)) {
      free(s->known[i]);
      memmove(s->known + i, s->known + i + 1, (s->nknown - i - 1) * sizeof *s->known);
      s->nknown--;
      break;
    }
  pthread_mutex_unlock(&s->mu);
}

void mcp_sandbox_forget(mcp_session *s, const char *id) {
  mcp_server *srv = s->srv;
  pthread_mutex_lock(&srv->mu);
  sbx_ref *e = find_locked(srv, id);
  if (e) kill_locked(srv, e);
  pthread_mutex_unlock(&srv->mu);
  pthread_mutex_lock(&s->default_mu);
  if (s->default_id && !strcmp(s->default_id, id)) {
    free(s->default_id);
    s->default_id = NULL;
  }
  pthread_mutex_unlock(&s->default_mu);
  unnote(s, id);
}

void mcp_sandbox_lifetime(mcp_session *s, const char *id, uint64_t end_ms) {
  pthread_mutex_lock(&s->default_mu);
  if (s->default_id && !strcmp(s->default_id, id)) s->default_end_ms = end_ms;
  pthread_mutex_unlock(&s->default_mu);
}

static int is_gone(int rc) {
  return rc == ASB_ESANDBOXGONE || rc == ASB_ESANDBOXNOTFOUND;
}

/* The session's default sandbox; creates it on first use. Caller holds
 * s->default_mu. */
static sbx_ref *default_locked(mcp_call *c, int need_envd, mcp_result *r) {
  mcp_session *s = c->s;
  mcp_server *srv = s->srv;
  uint64_t life = (uint64_t)srv->cfg.sandbox_timeout_s * 1000u;
  uint64_t now = asbi_now_ms();
  if (s->default_id && s->default_end_ms != UINT64_MAX && now >= s->default_end_ms) {
    /* Unused for its whole lifetime: it has timed out. Start afresh. */
    mcp_logf(srv, "default sandbox %s timed out", s->default_id);
    char *old = s->default_id;
    s->default_id = NULL;
    pthread_mutex_lock(&srv->mu);
    sbx_ref *e = find_locked(srv, old);
    if (e) kill_locked(srv, e);
    pthread_mutex_unlock(&srv->mu);
    unnote(s, old);
    free(old);
  }
  if (!s->default_id) {
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    o.template_id = srv->cfg.template_id;
    o.timeout_ms = (long)life;
    const char *md[] = {"created_by=agent-sandbox-mcp", NULL};
    o.metadata = md;
    o.cancel = c->cancel;
    asb_sandbox *h = NULL;
    int rc = asb_sandbox_create(&h, srv->client, &o);
    if (rc != ASB_OK) {
      mcp_result_lib_error(r, rc, "creating the default sandbox");
      return NULL;
    }
    sbx_ref *e = mcp_sandbox_adopt(srv, h);
    if (!e) {
      mcp_result_fail(r, "out of memory");
      return NULL;
    }
    s->default_id = asbi_strdup(e->id);
    s->default_end_ms = asbi_now_ms() + life;
    mcp_sandbox_note(s, e->id);
    mcp_logf(srv, "created default sandbox %s (template %s)", e->id,
             srv->cfg.template_id ? srv->cfg.template_id : "base");
    char note[200];
    snprintf(note, sizeof note, "created the default sandbox %s (template %s)", e->id,
             srv->cfg.template_id ? srv->cfg.template_id : "base");
    mcp_call_log(c, MCP_LOG_NOTICE, "agent-sandbox-mcp", cJSON_CreateString(note));
    return e;
  }
  int rc, connected = 0;
  sbx_ref *e = mcp_sandbox_get(srv, s->default_id, need_envd, c->cancel, &rc, &connected);
  if (!e) {
    mcp_result_lib_error(r, rc, "the default sandbox");
    if (is_gone(rc)) {
      free(s->default_id);
      s->default_id = NULL;
      mcp_result_text(r,
                      "The default sandbox is gone; the next call without a sandbox_id "
                      "creates a new one.");
    }
    return NULL;
  }
  if (connected &&
      (s->default_end_ms == UINT64_MAX || s->default_end_ms < now + CONNECT_LIFETIME_MS))
    s->default_end_ms = now + CONNECT_LIFETIME_MS; /* a connect resumes it */
  /* Keep it alive while it is used: extend it once two thirds of its
   * lifetime are left or less (never shortens what a tool set). */
  if (s->default_end_ms != UINT64_MAX && s->default_end_ms - now < life * 2 / 3) {
    asb_call_options co = ASB_CALL_OPTIONS_INIT;
    co.cancel = c->cancel;
    int trc = asb_sandbox_set_timeout(e->h, (long)life, &co);
    if (trc == ASB_OK)
      s->default_end_ms = now + life;
    else
      mcp_logf(srv, "extending the default sandbox: %s", asb_error_last()->message);
  }
  return e;
}

sbx_ref *mcp_sandbox_for(mcp_call *c, const cJSON *args, int need_envd, mcp_result *r,
                         int *is_default) {
  mcp_session *s = c->s;
  const cJSON *sid = cJSON_GetObjectItemCaseSensitive(args, "sandbox_id");
  *is_default = 0;
  if (cJSON_IsString(sid) && sid->valuestring[0]) {
    pthread_mutex_lock(&s->default_mu);
    *is_default = s->default_id && !strcmp(s->default_id, sid->valuestring);
    pthread_mutex_unlock(&s->default_mu);
    if (*is_default) goto use_default;
    int rc;
    sbx_ref *e = mcp_sandbox_get(s->srv, sid->valuestring, need_envd, c->cancel, &rc, NULL);
    if (!e) {
      char what[160];
      snprintf(what, sizeof what, "sandbox %.100s", sid->valuestring);
      mcp_result_lib_error(r, rc, what);
      return NULL;
    }
    mcp_sandbox_note(s, e->id);
    return e;
  }
  *is_default = 1;
use_default:
  pthread_mutex_lock(&s->default_mu);
  sbx_ref *e = default_locked(c, need_envd, r);
  pthread_mutex_unlock(&s->default_mu);
  return e;
}

char *mcp_sandbox_id_for(mcp_call *c, const cJSON *args, int *is_default) {
  mcp_session *s = c->s;
  const cJSON *sid = cJSON_GetObjectItemCaseSensitive(args, "sandbox_id");
  pthread_mutex_lock(&s->default_mu);
  char *id;
  if (cJSON_IsString(sid) && sid->valuestring[0]) {
    id = asbi_strdup(sid->valuestring);
    *is_default = s->default_id && !strcmp(s->default_id, id);
  } else {
    id = asbi_strdup(s->default_id);
    *is_default = id != NULL;
  }
  pthread_mutex_unlock(&s->default_mu);
  return id;
}

void mcp_sandbox_check_gone(mcp_call *c, sbx_ref *ref, int rc, int is_default, mcp_result *r) {
  if (!is_gone(rc) || !ref) return;
  mcp_sandbox_forget(c->s, ref->id);
  if (is_default)
    mcp_result_text(r,
                    "The default sandbox is gone; the next call without a sandbox_id "
                    "creates a new one.");
}

void mcp_sandbox_end_default(mcp_session *s) {
  mcp_server *srv = s->srv;
  pthread_mutex_lock(&s->default_mu);
  char *id = s->default_id;
  s->default_id = NULL;
  pthread_mutex_unlock(&s->default_mu);
  if (!id) return;
  if (srv->cfg.keep) {
    fprintf(stderr, "agent-sandbox-mcp: keeping the default sandbox %s\n", id);
  } else {
    asb_call_options co = ASB_CALL_OPTIONS_INIT;
    co.timeout_ms = 10000;
    int rc = asb_sandbox_kill_id(srv->client, id, &co);
    if (rc != ASB_OK && rc != ASB_ESANDBOXNOTFOUND)
      fprintf(stderr, "agent-sandbox-mcp: killing the default sandbox %s: %s\n", id,
              asb_error_last()->message);
    else
      mcp_logf(srv, "killed the default sandbox %s", id);
  }
  pthread_mutex_lock(&srv->mu);
  sbx_ref *e = find_locked(srv, id);
  if (e) kill_locked(srv, e);
  pthread_mutex_unlock(&srv->mu);
  free(id);
}
