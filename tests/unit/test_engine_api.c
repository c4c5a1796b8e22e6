/* unit.engine_api: the engine's control-plane front (core/engine/api.c,
 * api_templates.c) on an engine with no runtime and no listener: the route
 * table, the checks of request bodies and queries, and E2B's error bodies.
 * Requests go to api_handle as the HTTP server would pass them; nothing
 * here reaches a sandbox (every request is refused before an operation
 * would need the runtime, or asks for what an empty engine has).
 * SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "engine/api.h"
#include "engine/api_builder.h"
#include "engine/codei.h"
#include "engine/engine.h"
#include "engine/pool.h"
#include "engine/swap.h"
#include "engine/templates.h"
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

/* E2B's Template builder API (api_builder.c): its checks and E2B's status
 * codes. The builds themselves run in npm.builder (a real engine). */
TEST(template_builder) {
  char dir[] = "/tmp/asb-unit-builder-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  E.state_dir = strdup(dir);
  snprintf(E.api_key, sizeof E.api_key, "the-key");
  reply r = call("POST", "/v3/templates", "[]");
  CHECK_ERROR(r, 400, "the body must be a JSON object");
  done(&r);
  r = call("POST", "/v3/templates", "{\"name\": \"Bad Name\"}");
  CHECK_INT(r.status, 400);
  CHECK(strstr(str(r.json, "message"), "got 'Bad Name'") != NULL);
  done(&r);
  r = call("POST", "/v3/templates", "{\"name\": \"ok\", \"cpuCount\": 0}");
  CHECK_ERROR(r, 400, "cpuCount: a whole number 1..64");
  done(&r);
  r = call("POST", "/v3/templates", "{\"name\": \"ok\", \"memoryMB\": 1.5}");
  CHECK_ERROR(r, 400, "memoryMB: a whole number 64..1048576");
  done(&r);
  r = call("POST", "/v3/templates", "{\"name\": \"ok:bad tag\"}");
  CHECK_ERROR(r, 400, "tag 'bad tag': 1..128 of A-Z a-z 0-9 . _ -");
  done(&r);
  r = call("GET", "/v3/templates", NULL);
  CHECK_ERROR(r, 405, "method GET not allowed on /v3/templates");
  done(&r);
  /* a good request: 202, E2B's TemplateRequestResponseV3 */
  r = call("POST", "/v3/templates", "{\"name\": \"mine:v1\", \"tags\": [\"stable\"]}");
  CHECK_INT(r.status, 202);
  char id[64], bid[64], path[512];
  snprintf(id, sizeof id, "%s", str(r.json, "templateID"));
  snprintf(bid, sizeof bid, "%s", str(r.json, "buildID"));
  CHECK_INT((int)strlen(id), 20);
  CHECK_INT((int)strlen(bid), 36);
  CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "names"), 0)->valuestring, "mine");
  CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "tags")), 2);
  done(&r);
  /* files: unknown template 404, bad hash 400, a link with a token */
  const char *h = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  snprintf(path, sizeof path, "/templates/nope/files/%s", h);
  r = call("GET", path, NULL);
  CHECK_ERROR(r, 404, "template \"nope\" not found");
  done(&r);
  snprintf(path, sizeof path, "/templates/%s/files/..%%2f..%%2fetc", id);
  r = call("GET", path, NULL);
  CHECK_INT(r.status, 400);
  done(&r);
  snprintf(path, sizeof path, "/templates/%s/files/%s", id, h);
  r = call("GET", path, NULL);
  CHECK_INT(r.status, 201);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "present")));
  const char *url = str(r.json, "url");
  CHECK(url && strstr(url, path) && strstr(url, "?token="));
  /* the upload URL's token opens exactly that PUT */
  const char *uri = url ? strstr(url, "/templates/") : "";
  CHECK(api_builder_upload_ok(&E, "PUT", path, uri));
  CHECK(!api_builder_upload_ok(&E, "GET", path, uri));
  char other[512];
  snprintf(other, sizeof other, "/templates/%s/files/%.63s0", id, h);
  CHECK(!api_builder_upload_ok(&E, "PUT", other, uri));
  CHECK(!api_builder_upload_ok(&E, "PUT", path, path));
  char forged[600];
  snprintf(forged, sizeof forged, "%s?token=%064d", path, 0);
  CHECK(!api_builder_upload_ok(&E, "PUT", path, forged));
  done(&r);
  r = call("PUT", path, "not a tar at all, not a tar at all");
  CHECK_INT(r.status, 400);
  CHECK(strstr(str(r.json, "message"), "the uploaded files: ") != NULL);
  done(&r);
  r = call("GET", path, NULL);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "present"))); /* nothing stored */
  done(&r);
  /* the trigger: unknown build 404, bad bodies 400 with E2B's words */
  snprintf(path, sizeof path, "/v2/templates/%s/builds/nope", id);
  r = call("POST", path, "{\"fromTemplate\": \"base\"}");
  CHECK_INT(r.status, 404);
  CHECK(strstr(str(r.json, "message"), "build \"nope\" of template ") != NULL);
  done(&r);
  snprintf(path, sizeof path, "/v2/templates/%s/builds/%s", id, bid);
  static const struct {
    const char *body, *msg;
  } bad[] = {
      {"{\"fromImage\": \"ubuntu:22.04\"}", "fromImage 'ubuntu:22.04': this engine reaches no"},
      {"{\"fromImage\": \"ghcr.io/x/y:1\"}",
       "fromImage 'ghcr.io/x/y:1': this engine reaches no container registry (sandboxes and "
       "builds are loopback-only); use a local image on the engine's host, an OCI image layout "
       "(oci:/dir[:name]) or a docker save tarball"},
      {"{\"fromImage\": \"oci:/x\", \"fromImageRegistry\": {\"type\": \"registry\"}}",
       "fromImage 'oci:/x': this engine reaches no container registry"},
      {"{\"steps\": []}", "fromTemplate is required"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"ARG\"}]}",
       "steps[0]: unknown step type 'ARG' (known: RUN, COPY, ENV, WORKDIR, USER)"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"id\", "
       "\"bob\"]}]}",
       "steps[0] (RUN): unknown user 'bob'"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"A\"]}]}",
       "steps[0] (ENV): args are [name, value"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"1x\", \"v\"]}]}",
       "steps[0] (ENV): '1x' is not a variable name"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\", \"b\"], "
       "\"filesHash\": \"xyz\"}]}",
       "steps[0] (COPY): filesHash must be"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"../a\", \"b\"], "
       "\"filesHash\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}]}",
       "steps[0] (COPY): src '../a' must be relative, without '..'"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\", \"b\", "
       "\"\", "
       "\"9\"]}], \"filesHash\": \"\"}",
       "steps[0] (COPY): filesHash must be"},
      {"{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\", \"b\"], "
       "\"filesHash\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}]}",
       "the files of a COPY step (filesHash 0123456789abcdef0123456789abcdef0123456789abcdef"
       "0123456789abcdef) were not uploaded"},
      {"nope", "the body must be a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = call("POST", path, bad[i].body);
    CHECK_INT(r.status, 400);
    const char *m = str(r.json, "message");
    CHECK(m && !strncmp(m, bad[i].msg, strlen(bad[i].msg)));
    if (!m || strncmp(m, bad[i].msg, strlen(bad[i].msg)))
      fprintf(stderr, "  body %s: got '%s'\n", bad[i].body, m ? m : "(none)");
    done(&r);
  }
  /* status: still waiting (nothing was started), logs empty */
  snprintf(path, sizeof path, "/templates/%s/builds/%s/status?logsOffset=0", id, bid);
  r = call("GET", path, NULL);
  CHECK_INT(r.status, 200);
  CHECK_STR(str(r.json, "status"), "waiting");
  CHECK(cJSON_IsArray(cJSON_GetObjectItem(r.json, "logEntries")));
  done(&r);
  snprintf(path, sizeof path, "/templates/%s/builds/%s/status?logsOffset=-1", id, bid);
  r = call("GET", path, NULL);
  CHECK_ERROR(r, 400, "logsOffset: expected a whole number >= 0");
  done(&r);
  snprintf(path, sizeof path, "/templates/%s/builds/other/status", id);
  r = call("GET", path, NULL);
  CHECK_INT(r.status, 404);
  done(&r);
  /* aliases and tags */
  r = call("GET", "/templates/aliases/mine", NULL); /* requested, never built */
  CHECK_ERROR(r, 404, "template alias \"mine\" not found");
  done(&r);
  r = call("POST", "/templates/tags", "{\"target\": \"mine:v1\", \"tags\": [\"x\"]}");
  CHECK_ERROR(r, 404, "template \"mine\" with tag \"v1\" not found"); /* not built yet */
  done(&r);
  r = call("POST", "/templates/tags", "{\"target\": \"mine\", \"tags\": []}");
  CHECK_INT(r.status, 400);
  done(&r);
  r = call("DELETE", "/templates/tags", "{\"name\": \"nope\", \"tags\": [\"x\"]}");
  CHECK_ERROR(r, 404, "template \"nope\" not found");
  done(&r);
  r = call("DELETE", "/templates/tags", "{\"name\": \"mine\", \"tags\": [\"x\"]}");
  CHECK_INT(r.status, 204);
  done(&r);
  snprintf(path, sizeof path, "/templates/%s/tags", id);
  r = call("GET", path, NULL);
  CHECK_INT(r.status, 200);
  CHECK(cJSON_IsArray(r.json) && cJSON_GetArraySize(r.json) == 0);
  done(&r);
  r = call("GET", "/templates/nope/tags", NULL);
  CHECK_ERROR(r, 404, "template \"nope\" not found");
  done(&r);
  api_builder_close(&E);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_INT(system(cmd), 0);
}

/* --pool-template values (pool.c) and which pool size a template gets:
 * the option's, by name or id, before its template.yaml's pool.size. */
TEST(pool_options_and_targets) {
  char *name = NULL;
  int n = -1;
  CHECK_INT(pool_parse("base=16", &name, &n), 0);
  CHECK_STR(name, "base");
  CHECK_INT(n, 16);
  free(name);
  CHECK_INT(pool_parse("code-interpreter-v1=0", &name, &n), 0);
  CHECK_INT(n, 0);
  free(name);
  static const char *const bad[] = {"base",      "=3",      "base=",   "base=-1",
                                    "base=1001", "base=3x", "base= 3", NULL};
  for (size_t i = 0; bad[i]; i++) {
    name = NULL;
    if (pool_parse(bad[i], &name, &n) == 0) ASBT_FAIL("'%s' parsed", bad[i]);
    CHECK(name == NULL);
  }
  template_info *t = templates_info_new("abc123", "my-api", "/nonexistent");
  REQUIRE(t);
  CHECK_INT(pool_target(&E, t), 0);
  t->spec = cJSON_Parse("{\"pool\":{\"size\":4}}");
  CHECK_INT(pool_target(&E, t), 4);
  char *names[] = {"other", "my-api"};
  int sizes[] = {7, 9};
  E.pool_names = names;
  E.pool_sizes = sizes;
  E.npool = 2;
  CHECK_INT(pool_target(&E, t), 9); /* by name, over the yaml's */
  names[1] = "abc123";
  CHECK_INT(pool_target(&E, t), 9); /* by id */
  names[1] = "nope";
  CHECK_INT(pool_target(&E, t), 4);
  E.pool_names = NULL;
  E.pool_sizes = NULL;
  E.npool = 0;
  cJSON *j = pool_json(&E, t);
  CHECK_INT(cJSON_GetObjectItem(j, "target")->valueint, 4);
  CHECK_INT(cJSON_GetObjectItem(j, "ready")->valueint, 0);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "heldByMemory")));
  cJSON_Delete(j);
  templates_put(&E, t);
}

/* The preflight's reading of dpkg's status file (engine/codei.c): one pass
 * over it, exact names, only "install ok installed" counts, the last
 * paragraph needs no blank line after it. */
/* --pause-swap SIZE: bytes with K/M/G/T (binary), at least 1 MiB. */
TEST(pause_swap_size) {
  uint64_t b = 0;
  CHECK_INT(swap_parse_size("8G", &b), 0);
  CHECK(b == 8ull << 30);
  CHECK_INT(swap_parse_size("512M", &b), 0);
  CHECK(b == 512ull << 20);
  CHECK_INT(swap_parse_size("640MiB", &b), 0);
  CHECK(b == 640ull << 20);
  CHECK_INT(swap_parse_size("1048576", &b), 0);
  CHECK(b == 1ull << 20);
  CHECK_INT(swap_parse_size("2t", &b), 0);
  CHECK(b == 2ull << 40);
  const char *bad[] = {"", "0", "1023K", "-1G", "1X", "1GG", "G", "12 M", "99999999999T", NULL};
  for (int i = 0; bad[i]; i++) CHECK_INT(swap_parse_size(bad[i], &b), -1);
}

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
  RUN(template_builder);
  RUN(pool_options_and_targets);
  RUN(pause_swap_size);
  RUN(codei_preflight_reads_dpkg_status);
  RUN(secrets);
  engine_free(&E);
  TEST_MAIN_END();
}
