/* E2B's /secrets API (openapi.yml `/secrets`):
 *
 *   GET    /secrets[?limit=N&nextToken=T]   the Secret objects, oldest first
 *   POST   /secrets                         {name, value, metadata?}: 201
 *   GET    /secrets/{id|name}
 *   POST   /secrets/{id|name}               {value, metadata?}: a new version
 *   DELETE /secrets/{id|name}               204
 *
 * Values go into the store (<state>/secrets.json, 0600) and come out only
 * at egress, substituted into header rules' ${e2b.secrets.<name>}: no
 * reply carries one and nothing here logs a body.
 * SPDX-License-Identifier: Apache-2.0 */
#include "api_secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/egress/secrets.h"
#include "util/util.h"

#define PAGE_MAX 100

static cJSON *body_json(api_req *q, api_reply *r) {
  cJSON *j = q->body_len ? cJSON_ParseWithLength(q->body, q->body_len) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    api_error(r, 400, "the body must be a JSON object");
    return NULL;
  }
  return j;
}

static const char *str_member(const cJSON *j, const char *k, int *bad) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
  if (!v) return NULL;
  if (!cJSON_IsString(v)) {
    *bad = 1;
    return NULL;
  }
  return v->valuestring;
}

static void reply_status(api_reply *r, int st, cJSON *info, const char *err) {
  if (st >= 200 && st < 300) {
    if (info)
      api_reply_json(r, st, info);
    else
      r->status = st;
  } else {
    cJSON_Delete(info);
    api_error(r, st, "%s", err);
  }
}

static void list(asbn_secrets *s, api_req *q, api_reply *r) {
  const char *limit_s = api_query(q, "limit"), *next = api_query(q, "nextToken");
  int64_t limit = PAGE_MAX;
  if (limit_s &&
      (asbi_parse_i64(limit_s, strlen(limit_s), &limit) || limit < 1 || limit > PAGE_MAX))
    return api_error(r, 400, "limit must be 1..%d", PAGE_MAX);
  cJSON *all = asbn_secrets_list(s), *page = cJSON_CreateArray();
  int started = !(next && *next), n = 0, found = started;
  cJSON *it = all ? all->child : NULL;
  while (it) {
    cJSON *nx = it->next;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "secretID");
    if (!started) {
      if (cJSON_IsString(id) && strcmp(id->valuestring, next) == 0) started = found = 1;
    } else if (n < limit) {
      cJSON_AddItemToArray(page, cJSON_DetachItemViaPointer(all, it));
      n++;
    } else {
      const cJSON *last = cJSON_GetArrayItem(page, n - 1);
      snprintf(r->next_token, sizeof r->next_token, "%s",
               cJSON_GetObjectItemCaseSensitive(last, "secretID")->valuestring);
      break;
    }
    it = nx;
  }
  cJSON_Delete(all);
  if (!found) {
    cJSON_Delete(page);
    return api_error(r, 400, "invalid nextToken");
  }
  api_reply_json(r, 200, page);
}

int api_secrets_handle(engine *e, api_req *q, api_reply *r) {
  const char *p = q->path;
  if (strcmp(p, "/secrets") != 0 && !asbi_startswith(p, "/secrets/")) return 0;
  if (!e->secrets) {
    api_error(r, 500, "the secrets store is not open");
    return 1;
  }
  char err[256] = "";
  const char *id = p[8] == '/' ? p + 9 : NULL;
  if (id && (!*id || strchr(id, '/'))) {
    api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
    return 1;
  }
  int get = !strcmp(q->method, "GET"), post = !strcmp(q->method, "POST"),
      del = !strcmp(q->method, "DELETE");
  if (!id && get) {
    list(e->secrets, q, r);
  } else if (!id && post) {
    cJSON *b = body_json(q, r);
    if (!b) return 1;
    int bad = 0;
    const char *name = str_member(b, "name", &bad), *value = str_member(b, "value", &bad);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(b, "metadata");
    cJSON *info = NULL;
    if (bad || !name || !value)
      api_error(r, 400, "name and value are required strings");
    else {
      int st = asbn_secrets_create(e->secrets, name, value, md, &info, err, sizeof err);
      reply_status(r, st, info, err);
    }
    cJSON_Delete(b); /* its value string: freed with it, never copied into a reply */
  } else if (id && get) {
    cJSON *info = NULL;
    int st = asbn_secrets_get(e->secrets, id, &info);
    reply_status(r, st, info, "no such secret");
  } else if (id && post) {
    cJSON *b = body_json(q, r);
    if (!b) return 1;
    int bad = 0;
    const char *value = str_member(b, "value", &bad);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(b, "metadata");
    cJSON *info = NULL;
    if (bad || !value)
      api_error(r, 400, "value is a required string");
    else {
      int st = asbn_secrets_update(e->secrets, id, value, md, &info, err, sizeof err);
      reply_status(r, st, info, err);
    }
    cJSON_Delete(b);
  } else if (id && del) {
    int st = asbn_secrets_delete(e->secrets, id, err, sizeof err);
    reply_status(r, st, NULL, err);
  } else {
    api_error(r, 405, "%s is not allowed on %s", q->method, q->path);
  }
  return 1;
}
