/* unit.engine_api: the engine's control-plane front (core/engine/api.c,
 * api_templates.c) on an engine with no runtime and no listener: the route
 * table, the checks of request bodies and queries, and E2B's error bodies.
 * Requests go to api_handle as the HTTP server would pass them; nothing
 * here reaches a sandbox (every request is refused before an operation
 * would need the runtime, or asks for what an empty engine has).
 * SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "engine/api.h"
#include "engine/codei.h"
#include "engine/engine.h"
#include "net/egress/secrets.h"
#include "proto/pjson.h"
#include "testing.h"

static engine E;

typedef struct reply {
  int status;
  cJSON *json; /* the parsed body, or NULL */
  api_reply raw;
} reply;

static reply call(const char *method, const char *target, const char *body) {
  char path[512];
  snprintf(path, sizeof path, "%s", target);
  char *qs = strchr(path, '?');
  if (qs) *qs++ = '\0';
  api_req q;
  memset(&q, 0, sizeof q);
  q.method = method;
  q.path = path;
  q.query = qs ? qs : "";
  q.body = body;
  q.body_len = body ? strlen(body) : 0;
  reply r;
  memset(&r, 0, sizeof r);
  r.raw.total_running = -1;
  api_handle(&E, &q, &r.raw);
  api_req_free(&q);
  r.status = r.raw.status;
  r.json = r.raw.body ? asbi_pj_parse(r.raw.body, strlen(r.raw.body), NULL) : NULL;
  return r;
}

static void done(reply *r) {
  cJSON_Delete(r->json);
  free(r->raw.body);
}

static const char *str(const cJSON *j, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* status, and an E2B error body {"code": status, "message": message}. */
#define CHECK_ERROR(r, st, msg)                                              \
  do {                                                                       \
    CHECK_INT((r).status, st);                                               \
    const cJSON *code_ = cJSON_GetObjectItemCaseSensitive((r).json, "code"); \
    CHECK(cJSON_IsNumber(code_) && code_->valueint == (st));                 \
    CHECK_STR(str((r).json, "message"), msg);                                \
  } while (0)

TEST(routes) {
  reply r = call("GET", "/health", NULL);
  CHECK_INT(r.status, 204);
  CHECK(r.raw.body == NULL);
  done(&r);
  r = call("POST", "/health", NULL);
  CHECK_INT(r.status, 405);
  done(&r);
  r = call("GET", "/nothing/here", NULL);
  CHECK_ERROR(r, 404, "no such endpoint: GET /nothing/here");
  done(&r);
  r = call("PUT", "/sandboxes/abc/pause", NULL);
  CHECK_ERROR(r, 405, "method PUT not allowed on /sandboxes/abc/pause");
  done(&r);
  r = call("GET", "/v2/sandboxes/abc/pause", NULL); /* v2 has no pause */
  CHECK_ERROR(r, 404, "no such endpoint: GET /v2/sandboxes/abc/pause");
  done(&r);
  r = call("GET", "/sandboxes/abc", NULL);
  CHECK_ERROR(r, 404, "sandbox \"abc\" not found");
  CHECK_STR(str(r.json, "sandboxID"), "abc");
  CHECK(cJSON_GetObjectItemCaseSensitive(r.json, "reason") == NULL);
  done(&r);
}

TEST(create_checks_its_body) {
  reply r = call("POST", "/sandboxes", NULL);
  CHECK_ERROR(r, 400, "request body is required (JSON)");
  done(&r);
  r = call("POST", "/sandboxes", "{nope");
  CHECK_INT(r.status, 400);
  CHECK(str(r.json, "message") && !strncmp(str(r.json, "message"), "malformed JSON body", 19));
  done(&r);
  r = call("POST", "/v2/sandboxes", "[]");
  CHECK_ERROR(r, 400, "the body must be a JSON object");
  done(&r);
  r = call("POST", "/sandboxes", "{}");
  CHECK_ERROR(r, 400, "'templateID' is required");
  done(&r);
  r = call("POST", "/sandboxes", "{\"templateID\":\"base\",\"timeout\":1.5}");
  CHECK_ERROR(r, 400, "'timeout' must be a whole number of seconds in 0..2592000");
  done(&r);
  r = call("POST", "/sandboxes", "{\"templateID\":\"base\",\"autoPause\":\"yes\"}");
  CHECK_ERROR(r, 400, "'autoPause' must be a boolean");
  done(&r);
  r = call("POST", "/sandboxes", "{\"templateID\":\"base\",\"metadata\":{\"k\":1}}");
  CHECK_ERROR(r, 400, "'metadata.k' must be a string");
  done(&r);
  r = call("POST", "/sandboxes", "{\"templateID\":\"base\",\"envVars\":{\"A=B\":\"x\"}}");
  CHECK_ERROR(r, 400, "'envVars' has an invalid key 'A=B'");
  done(&r);
  /* a valid body: the operation answers (this engine has no templates) */
  r = call("POST", "/sandboxes", "{\"templateID\":\"base\"}");
  CHECK_ERROR(r, 404, "template \"base\" not found");
  done(&r);
}

TEST(list_checks_its_query) {
  reply r = call("GET", "/v2/sandboxes?state=running,gone", NULL);
  CHECK_ERROR(r, 400, "unknown state 'gone' (running, paused)");
  done(&r);
  r = call("GET", "/v2/sandboxes?order=sideways", NULL);
  CHECK_ERROR(r, 400, "order must be asc or desc");
  done(&r);
  r = call("GET", "/v2/sandboxes?limit=0", NULL);
  CHECK_ERROR(r, 400, "limit must be 1..100");
  done(&r);
  r = call("GET", "/v2/sandboxes?nextToken=x12", NULL);
  CHECK_ERROR(r, 400, "invalid nextToken");
  done(&r);
  r = call("GET", "/v2/sandboxes?startedAfter=yesterday", NULL);
  CHECK_ERROR(r, 400, "startedAfter must be an RFC 3339 date-time");
  done(&r);
  r = call("GET", "/v2/sandboxes?metadata=a%3Db", NULL);
  CHECK_INT(r.status, 200);
  CHECK(cJSON_IsArray(r.json) && cJSON_GetArraySize(r.json) == 0);
  CHECK_INT(r.raw.total_running, 0);
  CHECK_STR(r.raw.next_token, "");
  done(&r);
  r = call("GET", "/sandboxes", NULL); /* classic: no X-Total-Running */
  CHECK_INT(r.status, 200);
  CHECK(cJSON_IsArray(r.json) && cJSON_GetArraySize(r.json) == 0);
  CHECK_INT(r.raw.total_running, -1);
  done(&r);
  r = call("GET", "/sandboxes/metrics?sandbox_ids=a,b", NULL);
  CHECK_INT(r.status, 200);
  CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r.json, "sandboxes")));
  done(&r);
}

TEST(templates) {
  reply r = call("GET", "/templates", NULL);
  CHECK_INT(r.status, 200);
  CHECK(cJSON_IsArray(r.json) && cJSON_GetArraySize(r.json) == 0);
  done(&r);
  r = call("GET", "/templates/nope", NULL);
  CHECK_ERROR(r, 404, "template \"nope\" not found");
  done(&r);
  r = call("DELETE", "/templates/nope", NULL);
  CHECK_ERROR(r, 404, "template \"nope\" not found");
  done(&r);
  r = call("POST", "/templates/builds", NULL);
  CHECK_ERROR(r, 400,
              "the body must be a tar archive of the template directory "
              "(Content-Type: application/x-tar)");
  done(&r);
}

/* The preflight's reading of dpkg's status file (engine/codei.c): one pass
 * over it, exact names, only "install ok installed" counts, the last
 * paragraph needs no blank line after it. */
TEST(codei_preflight_reads_dpkg_status) {
  extern const char codei_packages_txt[];
  asbi_buf st = ASBI_BUF_INIT;
  const char *p = codei_packages_txt;
  int n = 0;
  while (*p) { /* every [core]/[full] package installed, but the first */
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char name[128];
    if (len && p[0] != '#' && p[0] != '[' && sscanf(p, "%127s", name) == 1 && n++ > 0)
      asbi_buf_printf(&st, "Package: %s\nVersion: 1\nStatus: install ok installed\n\n", name);
    p += len + (eol ? 1 : 0);
  }
  /* a removed package and a longer name with the first's as prefix */
  asbi_buf_printf(&st, "Package: python3-ipykernel\nStatus: deinstall ok config-files\n\n");
  asbi_buf_printf(&st, "Package: python3-ipykernelx\nStatus: install ok installed");
  char *r = codei_preflight_status(st.data, st.len);
  CHECK(r != NULL);
  CHECK(strstr(r, "WARN code interpreter packages: 1 of ") != NULL);
  CHECK(strstr(r, "missing: python3-ipykernel.") != NULL);
  CHECK(strstr(r, "ok   code interpreter, the rest of E2B's image") != NULL);
  free(r);
  asbi_buf_free(&st);
}

/* E2B's /secrets (api_secrets.c) on a store in a scratch dir: the
 * routes, E2B's Secret objects, pagination, errors; no reply carries a
 * value. */
static int body_has(const reply *r, const char *s) {
  return r->raw.body && strstr(r->raw.body, s);
}

TEST(secrets) {
  char dir[] = "/tmp/unit-secrets-XXXXXX", err[256], path[128];
  CHECK(mkdtemp(dir) != NULL);
  CHECK(asbn_secrets_open(dir, (asbn_secrets **)&E.secrets, err, sizeof err) == 0);
  reply r = call("POST", "/secrets",
                 "{\"name\":\"Api-Key\",\"value\":\"V4LUE-one\",\"metadata\":{\"a\":\"b\"}}");
  CHECK_INT(r.status, 201);
  CHECK_STR(str(r.json, "name"), "api-key");
  CHECK(!body_has(&r, "V4LUE"));
  char id[64];
  snprintf(id, sizeof id, "%s", str(r.json, "secretID") ? str(r.json, "secretID") : "");
  CHECK(!strncmp(id, "sec_", 4));
  done(&r);
  r = call("POST", "/secrets", "{\"name\":\"api-key\",\"value\":\"x\"}");
  CHECK_INT(r.status, 409);
  done(&r);
  r = call("POST", "/secrets", "{\"name\":\"no spaces\",\"value\":\"x\"}");
  CHECK_INT(r.status, 400);
  done(&r);
  r = call("POST", "/secrets", "{\"name\":\"n\"}");
  CHECK_ERROR(r, 400, "name and value are required strings");
  done(&r);
  r = call("POST", "/secrets", "not json");
  CHECK_ERROR(r, 400, "the body must be a JSON object");
  done(&r);
  r = call("POST", "/secrets", "{\"name\":\"second\",\"value\":\"V4LUE-two\"}");
  CHECK_INT(r.status, 201);
  done(&r);
  r = call("GET", "/secrets?limit=1", NULL);
  CHECK_INT(r.status, 200);
  CHECK(cJSON_GetArraySize(r.json) == 1 && !body_has(&r, "V4LUE"));
  CHECK_STR(r.raw.next_token, id);
  done(&r);
  char target[128];
  snprintf(target, sizeof target, "/secrets?limit=1&nextToken=%s", id);
  r = call("GET", target, NULL);
  CHECK(cJSON_GetArraySize(r.json) == 1 && !r.raw.next_token[0]);
  CHECK_STR(str(cJSON_GetArrayItem(r.json, 0), "name"), "second");
  done(&r);
  r = call("GET", "/secrets?nextToken=sec_nope", NULL);
  CHECK_ERROR(r, 400, "invalid nextToken");
  done(&r);
  r = call("GET", "/secrets/API-KEY", NULL);
  CHECK_INT(r.status, 200);
  CHECK_STR(str(r.json, "secretID"), id);
  done(&r);
  snprintf(target, sizeof target, "/secrets/%s", id);
  r = call("POST", target, "{\"value\":\"V4LUE-three\"}");
  CHECK_INT(r.status, 200);
  CHECK(cJSON_GetObjectItem(r.json, "currentVersion")->valueint == 2 && !body_has(&r, "V4LUE"));
  done(&r);
  r = call("PUT", target, "{}");
  CHECK_INT(r.status, 405);
  done(&r);
  r = call("DELETE", target, NULL);
  CHECK_INT(r.status, 204);
  done(&r);
  r = call("GET", target, NULL);
  CHECK_ERROR(r, 404, "no such secret");
  done(&r);
  asbn_secrets_close(E.secrets);
  E.secrets = NULL;
  snprintf(path, sizeof path, "%s/secrets.json", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  engine_init(&E);
  E.envd_version = strdup("0.0.0");
  RUN(routes);
  RUN(create_checks_its_body);
  RUN(list_checks_its_query);
  RUN(templates);
  RUN(codei_preflight_reads_dpkg_status);
  RUN(secrets);
  engine_free(&E);
  TEST_MAIN_END();
}
