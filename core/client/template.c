/* Templates: build (pack a directory as a deterministic tar and POST it to
 * the engine's /templates/builds), list, get, delete.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "proto/url.h"
#include "util/util.h"
#include "http.h"
#include "internal.h"

#define CONTEXT_MAX (64u << 20)
#define DEFAULT_BUILD_TIMEOUT_MS 1800000L

struct asb_template {
  char *id, *name, *build_id, *description, *log, *json;
  int cpu, mem, disk, cached;
  int64_t created;
};

struct asb_template_list {
  asb_template **v;
  size_t n;
};

ASBI_DEFINE_OPTIONS_INIT(asb_template_build_options, ASB_TEMPLATE_BUILD_OPTIONS_VERSION,
                         ASB_TEMPLATE_BUILD_OPTIONS_INIT)

/* ---- packing -------------------------------------------------------------------- */

/* ---- objects -------------------------------------------------------------------- */

void asb_template_free(asb_template *t) {
  if (!t) return;
  free(t->id);
  free(t->name);
  free(t->build_id);
  free(t->description);
  free(t->log);
  free(t->json);
  free(t);
}

static int64_t parse_time(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return (int64_t)timegm(&tm);
}

static int num(const cJSON *j, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return cJSON_IsNumber(v) ? v->valueint : 0;
}

static asb_template *template_from(const cJSON *j, int with_build) {
  if (!cJSON_IsObject(j)) return NULL;
  asb_template *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  const char *id = NULL, *bid = NULL, *desc = NULL, *log = NULL, *name = NULL, *created = NULL;
  asbi_pj_get_str(j, "templateID", &id);
  asbi_pj_get_str(j, "buildID", &bid);
  asbi_pj_get_str(j, "description", &desc);
  asbi_pj_get_str(j, "buildLog", &log);
  asbi_pj_get_str(j, "name", &name);
  asbi_pj_get_str(j, "createdAt", &created);
  if (!name) {
    const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(j, "aliases");
    const cJSON *first = cJSON_IsArray(aliases) ? cJSON_GetArrayItem(aliases, 0) : NULL;
    if (cJSON_IsString(first)) name = first->valuestring;
  }
  t->id = asbi_strdup(id ? id : "");
  t->name = asbi_strdup(name ? name : (id ? id : ""));
  t->build_id = asbi_strdup(bid ? bid : "");
  t->description = asbi_strdup(desc ? desc : "");
  t->log = with_build && log ? asbi_strdup(log) : NULL;
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_json_print(j, &b) == 0) t->json = asbi_buf_detach(&b, NULL);
  asbi_buf_free(&b);
  t->cpu = num(j, "cpuCount");
  t->mem = num(j, "memoryMB");
  t->disk = num(j, "diskSizeMB");
  t->created = parse_time(created);
  t->cached = with_build ? cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "cached")) : -1;
  if (!t->id || !t->name || !t->build_id || !t->description || !t->json ||
      (with_build && log && !t->log)) {
    asb_template_free(t);
    return NULL;
  }
  return t;
}

const char *asb_template_id(const asb_template *t) {
  return t ? t->id : NULL;
}
const char *asb_template_name(const asb_template *t) {
  return t ? t->name : NULL;
}
const char *asb_template_build_id(const asb_template *t) {
  return t ? t->build_id : NULL;
}
const char *asb_template_description(const asb_template *t) {
  return t ? t->description : NULL;
}
int asb_template_cpu_count(const asb_template *t) {
  return t ? t->cpu : 0;
}
int asb_template_memory_mb(const asb_template *t) {
  return t ? t->mem : 0;
}
int asb_template_disk_mb(const asb_template *t) {
  return t ? t->disk : 0;
}
asb_int64 asb_template_created_at(const asb_template *t) {
  return t ? t->created : 0;
}
int asb_template_cached(const asb_template *t) {
  return t ? t->cached : -1;
}
const char *asb_template_build_log(const asb_template *t) {
  return t ? t->log : NULL;
}
const char *asb_template_json(const asb_template *t) {
  return t ? t->json : NULL;
}

/* ---- calls ---------------------------------------------------------------------- */

int asb_templates_build(asb_template **out, asb_client *c, const char *dir,
                        const asb_template_build_options *o) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !dir || !*dir || !out) return asbi_err(ASB_EINVAL, "template.build: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_TEMPLATE_BUILD_OPTIONS_VERSION, "asb_template_build_options");
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return asbi_err(ASB_ENOTFOUND, "template.build: %s is not a directory", dir);
  char yaml[8192];
  snprintf(yaml, sizeof yaml, "%s/template.yaml", dir);
  if (access(yaml, R_OK) != 0) {
    snprintf(yaml, sizeof yaml, "%s/template.yml", dir);
    if (access(yaml, R_OK) != 0)
      return asbi_err(ASB_EINVAL, "template.build: %s has no template.yaml", dir);
  }
  asbi_buf tar;
  asbi_buf_init(&tar, CONTEXT_MAX);
  char why[8400];
  int rc = asbi_tar_pack_dir(dir, &tar, CONTEXT_MAX, why, sizeof why);
  if (rc == -ENOMEM)
    rc = asbi_oom();
  else if (rc == -EFBIG)
    rc = asbi_err(ASB_EINVAL, "template: %s (a build context is at most %u MiB)", why,
                  CONTEXT_MAX >> 20);
  else if (rc)
    rc = asbi_err(ASB_EINVAL, "template: cannot pack %s", why);
  else if (asbi_tar_finish(&tar))
    rc = asbi_err(ASB_EINVAL, "template: %s is over %u MiB", dir, CONTEXT_MAX >> 20);
  if (rc) {
    asbi_buf_free(&tar);
    return rc;
  }
  long timeout =
      o && o->timeout_ms ? (o->timeout_ms < 0 ? 0 : o->timeout_ms) : DEFAULT_BUILD_TIMEOUT_MS;
  cJSON *reply = NULL;
  int status = 0;
  rc = asbi_cp_request_raw(c, "POST",
                           o && o->force ? "/templates/builds?force=true" : "/templates/builds",
                           tar.data, tar.len, "application/x-tar", timeout, o ? o->cancel : NULL,
                           c->life.stop, 0, "template.build", NULL, &status, &reply, NULL);
  asbi_buf_free(&tar);
  if (rc) {
    asb_error *e = (asb_error *)asb_error_last();
    if (e->http_status == 422) e->code = rc = ASB_EBUILD;
    if (e->http_status == 404 || e->http_status == 405) {
      e->code = rc = ASB_EUNSUPPORTED;
      asbi_err_prefix("the engine at %s cannot build templates", asb_client_api_url(c));
    }
    return rc;
  }
  asb_template *t = template_from(reply, 1);
  cJSON_Delete(reply);
  if (!t) return asbi_err(ASB_EPROTOCOL, "template.build: malformed reply");
  *out = t;
  return ASB_OK;
}

static int template_path(asbi_buf *p, const char *id) {
  asbi_buf_puts(p, "/templates/");
  asbi_url_escape(p, id, 0);
  return p->data ? ASB_OK : asbi_oom();
}

int asb_templates_get(asb_template **out, asb_client *c, const char *id,
                      const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !id || !*id || !out) return asbi_err(ASB_EINVAL, "template.get: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = template_path(&p, id);
  cJSON *reply = NULL;
  if (!rc)
    rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL,
                             asbi_client_timeout(c, call ? call->timeout_ms : 0),
                             call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                             "template.get", NULL, NULL, &reply, NULL);
  asbi_buf_free(&p);
  if (rc) return rc;
  asb_template *t = template_from(reply, 0);
  cJSON_Delete(reply);
  if (!t) return asbi_err(ASB_EPROTOCOL, "template.get: malformed reply");
  *out = t;
  return ASB_OK;
}

static int template_item(const cJSON *j, void *item) {
  const char *id = NULL;
  if (!cJSON_IsObject(j) || asbi_pj_get_str(j, "templateID", &id) || !id || !*id)
    return asbi_err(ASB_EPROTOCOL, "a template without a templateID");
  asb_template *t = template_from(j, 0);
  if (!t) return asbi_oom();
  *(asb_template **)item = t;
  return ASB_OK;
}
static void template_drop(void *item) {
  asb_template_free(*(asb_template **)item);
}

int asb_templates_list(asb_template_list **out, asb_client *c, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out) return asbi_err(ASB_EINVAL, "template.list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *reply = NULL;
  int rc = asbi_cp_request_raw(c, "GET", "/templates", NULL, 0, NULL,
                               asbi_client_timeout(c, call ? call->timeout_ms : 0),
                               call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                               "template.list", NULL, NULL, &reply, NULL);
  if (rc) return rc;
  asb_template_list *l = calloc(1, sizeof *l);
  if (!l)
    rc = asbi_oom();
  else
    rc = asbi_json_items(reply, sizeof *l->v, template_item, template_drop, (void **)&l->v, &l->n);
  cJSON_Delete(reply);
  if (rc) {
    asbi_err_prefix("template.list");
    free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

size_t asb_template_list_count(const asb_template_list *l) {
  return l ? l->n : 0;
}
const asb_template *asb_template_list_get(const asb_template_list *l, size_t i) {
  return l && i < l->n ? l->v[i] : NULL;
}
void asb_template_list_free(asb_template_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) asb_template_free(l->v[i]);
  free(l->v);
  free(l);
}

int asb_templates_delete(asb_client *c, const char *id, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c || !id || !*id) return asbi_err(ASB_EINVAL, "template.delete: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = template_path(&p, id);
  if (!rc)
    rc = asbi_cp_request_raw(
        c, "DELETE", p.data, NULL, 0, NULL, asbi_client_timeout(c, call ? call->timeout_ms : 0),
        call ? call->cancel : NULL, c->life.stop, 0, "template.delete", NULL, NULL, NULL, NULL);
  asbi_buf_free(&p);
  return rc;
}
