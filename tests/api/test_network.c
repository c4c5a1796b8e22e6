/* The client's half of sandbox networking (issue 17): what it sends for
 * E2B's allowInternetAccess and network at create, for
 * PUT /sandboxes/{id}/network, and what it reads back from GET
 * /sandboxes/{id}. The server is a canned responder on loopback that keeps
 * each request's method, path and body: these tests check the client's
 * JSON encoding against E2B's wire shapes (openapi.yml NewSandbox,
 * SandboxNetworkConfig, SandboxNetworkUpdateConfig, SandboxDetail); the
 * engine's side is tested end to end against the real engine.
 * Also: a program built against version 1 of asb_sandbox_options (a
 * smaller struct) keeps working: nothing past its end is read or written
 * (the sanitizer tree runs this with AddressSanitizer).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb_testing.h"

static struct MHD_Daemon *D;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char g_method[16], g_path[256], g_body[8192];
static int g_requests;
static int g_status;         /* 0: the route's own status */
static const char *g_detail; /* GET /sandboxes/{id}'s reply */

typedef struct upload {
  char buf[8192];
  size_t len;
} upload;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_len, void **req) {
  (void)cls, (void)version;
  if (!*req) {
    *req = calloc(1, sizeof(upload));
    return *req ? MHD_YES : MHD_NO;
  }
  upload *u = *req;
  if (*data_len) {
    size_t n = *data_len < sizeof u->buf - 1 - u->len ? *data_len : sizeof u->buf - 1 - u->len;
    memcpy(u->buf + u->len, data, n);
    u->len += n;
    *data_len = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&mu);
  snprintf(g_method, sizeof g_method, "%s", method);
  snprintf(g_path, sizeof g_path, "%s", url);
  memcpy(g_body, u->buf, u->len + 1);
  g_requests++;
  int status = 200;
  const char *reply = "{}";
  if (!strcmp(method, "POST"))
    reply =
        "{\"sandboxID\":\"n0net0test\",\"templateID\":\"base\",\"envdVersion\":\"0.6.13\","
        "\"envdAccessToken\":\"tok\",\"domain\":\"localhost\"}";
  else if (!strcmp(method, "PUT"))
    status = 204, reply = "";
  else if (!strcmp(method, "GET"))
    reply = g_detail;
  if (g_status) {
    status = g_status;
    reply = "{\"code\":400,\"message\":\"allowOut: 'nope/99' is not a CIDR, IP or domain\"}";
  }
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(reply), (void *)reply, MHD_RESPMEM_MUST_COPY);
  if (*reply) MHD_add_response_header(r, "Content-Type", "application/json");
  pthread_mutex_unlock(&mu);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static void done(void *cls, struct MHD_Connection *c, void **req,
                 enum MHD_RequestTerminationCode t) {
  (void)cls, (void)c, (void)t;
  free(*req);
  *req = NULL;
}

static asb_client *C;
static asb_sandbox *SB;

/* The last request's body, parsed (the caller frees it). */
static cJSON *last_body(void) {
  pthread_mutex_lock(&mu);
  cJSON *j = cJSON_Parse(g_body);
  pthread_mutex_unlock(&mu);
  return j;
}

/* The JSON text of member key of o, or "" when o lacks it. */
static char *member_text(const cJSON *o, const char *key) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
  return m ? cJSON_PrintUnformatted(m) : strdup("");
}

#define CHECK_MEMBER(obj, key, want)  \
  do {                                \
    char *t_ = member_text(obj, key); \
    CHECK_STR(t_, want);              \
    free(t_);                         \
  } while (0)

static const char *const FULL =
    "{\"allowOut\":[\"198.18.0.10\",\"api.example.test\",\"*.pkg.example.test\"],"
    "\"denyOut\":[\"0.0.0.0/0\"],"
    "\"rules\":{\"api.example.test\":[{\"transform\":{\"headers\":"
    "{\"Authorization\":\"Bearer x\"}}}]},"
    "\"egressProxy\":{\"address\":\"198.18.0.20:1080\",\"username\":\"u\",\"password\":\"p\"},"
    "\"allowPublicTraffic\":false,\"maskRequestHost\":\"${PORT}-app.example.test\"}";

TEST(create_sends_e2b_network_body) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.allow_internet_access = -1;
  o.network_json = FULL;
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  CHECK_STR(g_method, "POST");
  CHECK_STR(g_path, "/v2/sandboxes");
  cJSON *b = last_body();
  REQUIRE(b != NULL);
  /* NewSandbox spells it allow_internet_access (and E2B's SDKs send that);
   * the local engine's create reads allowInternetAccess: both are sent */
  CHECK_MEMBER(b, "allow_internet_access", "false");
  CHECK_MEMBER(b, "allowInternetAccess", "false");
  const cJSON *net = cJSON_GetObjectItemCaseSensitive(b, "network");
  REQUIRE(cJSON_IsObject(net));
  cJSON *want = cJSON_Parse(FULL);
  CHECK(cJSON_Compare(net, want, 1)); /* as given, every member */
  CHECK_MEMBER(b, "templateID", "\"base\"");
  cJSON_Delete(want);
  cJSON_Delete(b);
  asb_sandbox_free(sb);

  o.allow_internet_access = 1;
  o.network_json = "{\"denyOut\":[\"198.18.0.0/15\"]}";
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  b = last_body();
  CHECK_MEMBER(b, "allow_internet_access", "true");
  CHECK_MEMBER(b, "network", "{\"denyOut\":[\"198.18.0.0/15\"]}");
  cJSON_Delete(b);
  asb_sandbox_free(sb);
}

TEST(create_defaults_send_no_network) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, NULL), ASB_OK);
  cJSON *b = last_body();
  REQUIRE(b != NULL);
  CHECK(cJSON_GetObjectItemCaseSensitive(b, "allow_internet_access") == NULL);
  CHECK(cJSON_GetObjectItemCaseSensitive(b, "network") == NULL);
  cJSON_Delete(b);
  asb_sandbox_free(sb);
}

/* What a caller built against version 1's header has: its struct ends
 * before the network members. */
typedef struct sandbox_options_v1 {
  unsigned int version;
  const char *template_id;
  long timeout_ms;
  const char *const *metadata;
  const char *const *envs;
  int auto_pause;
  long request_timeout_ms;
  asb_cancel *cancel;
} sandbox_options_v1;
_Static_assert(sizeof(sandbox_options_v1) == offsetof(asb_sandbox_options, allow_internet_access),
               "version 1 of asb_sandbox_options ends where allow_internet_access starts");

/* Heap-allocated at exactly version 1's size, so AddressSanitizer sees any
 * read past it; init writes only its bytes. */
TEST(version1_options_still_work) {
  const size_t v1 = sizeof(sandbox_options_v1);
  unsigned char *mem = malloc(sizeof(asb_sandbox_options) + 16);
  REQUIRE(mem != NULL);
  memset(mem, 0xAB, sizeof(asb_sandbox_options) + 16);
  REQUIRE_RC(asb_sandbox_options_init((asb_sandbox_options *)(void *)mem, 1), ASB_OK);
  int untouched = 1;
  for (size_t i = v1; i < sizeof(asb_sandbox_options) + 16; i++) untouched &= mem[i] == 0xAB;
  CHECK(untouched);
  free(mem);

  sandbox_options_v1 *o = malloc(v1);
  REQUIRE(o != NULL);
  REQUIRE_RC(asb_sandbox_options_init((asb_sandbox_options *)(void *)o, 1), ASB_OK);
  CHECK_INT(o->version, 1);
  o->template_id = "base";
  o->timeout_ms = 60000;
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, (const asb_sandbox_options *)(const void *)o), ASB_OK);
  free(o);
  cJSON *b = last_body();
  CHECK_MEMBER(b, "timeout", "60");
  CHECK(cJSON_GetObjectItemCaseSensitive(b, "allow_internet_access") == NULL);
  CHECK(cJSON_GetObjectItemCaseSensitive(b, "network") == NULL);
  cJSON_Delete(b);
  asb_sandbox_free(sb);

  asb_sandbox_options o3 = ASB_SANDBOX_OPTIONS_INIT;
  o3.version = ASB_SANDBOX_OPTIONS_VERSION + 1;
  CHECK_RC(asb_sandbox_create(&sb, C, &o3), ASB_EVERSION);
  CHECK_RC(asb_sandbox_options_init(&o3, ASB_SANDBOX_OPTIONS_VERSION + 1), ASB_EVERSION);
}

/* Options by name (options.h): the network members are version 2's. */
TEST(options_by_name) {
  void *o = NULL;
  REQUIRE_RC(asb_options_new(&o, "asb_sandbox_options", 2), ASB_OK);
  CHECK_RC(asb_options_set_int(o, "allow_internet_access", -1), ASB_OK);
  CHECK_RC(asb_options_set_string(o, "network_json", "{\"allowOut\":[\"198.18.0.1\"]}"), ASB_OK);
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, o), ASB_OK);
  asb_options_free(o);
  cJSON *b = last_body();
  CHECK_MEMBER(b, "allow_internet_access", "false");
  CHECK_MEMBER(b, "network", "{\"allowOut\":[\"198.18.0.1\"]}");
  cJSON_Delete(b);
  asb_sandbox_free(sb);

  REQUIRE_RC(asb_options_new(&o, "asb_sandbox_options", 1), ASB_OK);
  CHECK_RC(asb_options_set_string(o, "network_json", "{}"), ASB_EVERSION);
  CHECK_RC(asb_options_set_int(o, "allow_internet_access", 1), ASB_EVERSION);
  asb_options_free(o);
}

/* Refused before anything is sent, with the member's name. */
TEST(bad_network_json_is_refused_locally) {
  static const struct {
    const char *json, *why;
  } bad[] = {
      {"{\"allowOut\":[\"a\"", "not JSON"},
      {"[\"198.18.0.1\"]", "not a JSON object"},
      {"{\"allowout\":[]}", "unknown member 'allowout'"},
      {"{\"allowOut\":\"198.18.0.1\"}", "'allowOut' must be a list of strings"},
      {"{\"denyOut\":[\"198.18.0.1\",7]}", "'denyOut' must be a list of strings"},
      {"{\"rules\":[]}", "'rules' must be an object"},
      {"{\"egressProxy\":\"198.18.0.20:1080\"}", "'egressProxy' must be an object"},
      {"{\"allowPublicTraffic\":\"no\"}", "'allowPublicTraffic' must be true or false"},
      {"{\"maskRequestHost\":1}", "'maskRequestHost' must be a string"},
      {"{\"allowInternetAccess\":false}", "give it as allow_internet_access"},
      {"{\"maxConnections\":-1}", "'maxConnections' must be a whole number"},
      {"{\"egressBytesPerSecond\":1.5}", "'egressBytesPerSecond' must be a whole number"},
  };
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int before = g_requests;
    asb_sandbox *sb = NULL;
    o.network_json = bad[i].json;
    CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
    if (!strstr(asb_error_last()->message, bad[i].why))
      ASBT_FAIL("%s: '%s' lacks '%s'", bad[i].json, asb_error_last()->message, bad[i].why);
    CHECK(sb == NULL);
    CHECK_INT(g_requests, before);
  }
  o.network_json = NULL;
  o.allow_internet_access = 2;
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
}

TEST(update_network_puts_the_update_config) {
  REQUIRE_RC(asb_sandbox_update_network(SB, -1,
                                        "{\"allowOut\":[\"api.example.test\"],"
                                        "\"egressProxy\":{\"address\":\"198.18.0.20:1080\"}}",
                                        NULL),
             ASB_OK);
  CHECK_STR(g_method, "PUT");
  CHECK_STR(g_path, "/sandboxes/n0net0test/network");
  cJSON *b = last_body();
  CHECK_MEMBER(b, "allowOut", "[\"api.example.test\"]");
  CHECK_MEMBER(b, "egressProxy", "{\"address\":\"198.18.0.20:1080\"}");
  CHECK_MEMBER(b, "allow_internet_access", "false");
  CHECK_INT(cJSON_GetArraySize(b), 3);
  cJSON_Delete(b);

  /* the local engine's own limits go with an update too */
  REQUIRE_RC(asb_sandbox_update_network(SB, 0, "{\"maxConnections\":8}", NULL), ASB_OK);
  CHECK_STR(g_body, "{\"maxConnections\":8}");

  /* everything left out: every rule cleared, internet the default */
  REQUIRE_RC(asb_sandbox_update_network(SB, 0, NULL, NULL), ASB_OK);
  CHECK_STR(g_body, "{}");
  REQUIRE_RC(asb_sandbox_update_network(SB, 1, NULL, NULL), ASB_OK);
  CHECK_STR(g_body, "{\"allow_internet_access\":true}");

  /* what E2B's update does not take is refused, naming it */
  int before = g_requests;
  CHECK_RC(asb_sandbox_update_network(SB, 0, "{\"allowPublicTraffic\":false}", NULL), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "allowPublicTraffic") != NULL);
  CHECK_RC(asb_sandbox_update_network(SB, 0, "{\"allow_internet_access\":false}", NULL),
           ASB_EINVAL);
  CHECK_RC(asb_sandbox_update_network(SB, 5, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_sandbox_update_network(NULL, 0, NULL, NULL), ASB_EINVAL);
  CHECK_INT(g_requests, before);

  /* the engine's 400 is ASB_EINVAL with its message */
  g_status = 400;
  CHECK_RC(asb_sandbox_update_network(SB, 0, "{\"allowOut\":[\"nope/99\"]}", NULL), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "nope/99") != NULL);
  g_status = 0;
}

TEST(info_reads_the_network) {
  g_detail =
      "{\"sandboxID\":\"n0net0test\",\"templateID\":\"base\",\"allowInternetAccess\":false,"
      "\"network\":{\"allowOut\":[\"198.18.0.10\",\"*.example.test\"],\"denyOut\":[\"0.0.0.0/0\"],"
      "\"allowPublicTraffic\":true,\"egressProxy\":{\"address\":\"198.18.0.20:1080\"}}}";
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_allow_internet_access(i), 0);
  CHECK_INT(asb_sandbox_info_allow_out_count(i), 2);
  CHECK_STR(asb_sandbox_info_allow_out_get(i, 1), "*.example.test");
  CHECK(asb_sandbox_info_allow_out_get(i, 2) == NULL);
  CHECK_INT(asb_sandbox_info_deny_out_count(i), 1);
  CHECK_STR(asb_sandbox_info_deny_out_get(i, 0), "0.0.0.0/0");
  cJSON *net = cJSON_Parse(asb_sandbox_info_network_json(i));
  CHECK_MEMBER(net, "egressProxy", "{\"address\":\"198.18.0.20:1080\"}");
  CHECK_MEMBER(net, "allowPublicTraffic", "true");
  cJSON_Delete(net);
  asb_sandbox_info_free(i);

  /* an engine that says nothing about it: not said, no config */
  g_detail = "{\"sandboxID\":\"n0net0test\",\"templateID\":\"base\",\"network\":7}";
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_allow_internet_access(i), -1);
  CHECK(asb_sandbox_info_network_json(i) == NULL);
  CHECK_INT(asb_sandbox_info_allow_out_count(i), 0);
  CHECK(asb_sandbox_info_deny_out_get(i, 0) == NULL);
  asb_sandbox_info_free(i);
  g_detail = "{\"sandboxID\":\"n0net0test\",\"allowInternetAccess\":true}";
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_allow_internet_access(i), 1);
  asb_sandbox_info_free(i);
  CHECK_INT(asb_sandbox_info_allow_internet_access(NULL), -1);
}

/* E2B's lifecycle and volumeMounts of a SandboxDetail; malformed items
 * are skipped, a malformed field reads as not said. */
TEST(info_reads_lifecycle_and_volume_mounts) {
  g_detail =
      "{\"sandboxID\":\"n0net0test\",\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},"
      "\"volumeMounts\":[{\"name\":\"a\",\"path\":\"/mnt/a\"},7,{\"name\":\"b\"},"
      "{\"name\":\"c\",\"path\":\"/c\"}]}";
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_on_timeout(i), "pause");
  CHECK_INT(asb_sandbox_info_auto_resume(i), 1);
  CHECK_INT(asb_sandbox_info_volume_mount_count(i), 2);
  CHECK_STR(asb_sandbox_info_volume_mount_name(i, 0), "a");
  CHECK_STR(asb_sandbox_info_volume_mount_path(i, 1), "/c");
  CHECK(asb_sandbox_info_volume_mount_name(i, 2) == NULL);
  asb_sandbox_info_free(i);
  g_detail = "{\"sandboxID\":\"n0net0test\",\"lifecycle\":{\"onTimeout\":1},\"volumeMounts\":{}}";
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK(asb_sandbox_info_on_timeout(i) == NULL);
  CHECK_INT(asb_sandbox_info_auto_resume(i), -1);
  CHECK_INT(asb_sandbox_info_volume_mount_count(i), 0);
  asb_sandbox_info_free(i);
  CHECK(asb_sandbox_info_on_timeout(NULL) == NULL);
  CHECK_INT(asb_sandbox_info_volume_mount_count(NULL), 0);
  CHECK(asb_sandbox_info_volume_mount_path(NULL, 0) == NULL);
}

int main(void) {
  D = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                       NULL, handler, NULL, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                       MHD_OPTION_END);
  if (!D) return fprintf(stderr, "cannot start the test server\n"), 2;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u",
           MHD_get_daemon_info(D, MHD_DAEMON_INFO_BIND_PORT)->port);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_key = "k";
  o.api_url = url;
  o.sandbox_url = url;
  o.max_retries = -1;
  if (asb_client_new(&C, &o) != ASB_OK)
    return fprintf(stderr, "client: %s\n", asb_error_last()->message), 2;
  if (asb_sandbox_attach(&SB, C, "n0net0test", NULL) != ASB_OK) return 2;
  RUN(create_sends_e2b_network_body);
  RUN(create_defaults_send_no_network);
  RUN(version1_options_still_work);
  RUN(options_by_name);
  RUN(bad_network_json_is_refused_locally);
  RUN(update_network_puts_the_update_config);
  RUN(info_reads_the_network);
  RUN(info_reads_lifecycle_and_volume_mounts);
  asb_sandbox_free(SB);
  asb_client_free(C);
  MHD_stop_daemon(D);
  TEST_MAIN_END();
}
