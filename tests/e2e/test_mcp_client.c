/* E2B's mcp create option through the C ABI (asb_sandbox_options version
 * 5, mcp_json) against the real engine: the library makes the sandbox from
 * the bundled mcp-gateway template and starts mcp-gateway in it as root
 * with a fresh token; the stdio server of tests/npm/mcp/echo_server.py is
 * served at port 50005 /mcp through the engine's router over plain HTTP
 * (libcurl): tools/list and tools/call with asb_sandbox_mcp_token's token,
 * 401 without it; a connected handle reads the token file; a bad config
 * is "Failed to start MCP gateway: <stderr>" and leaves no sandbox; a
 * version-4 struct has no mcp_json. docs/mcp.md, "The gateway".
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb_testing.h"
#include "engine_http.h"

static engine_fixture F;
static asb_client *C;

/* POST a JSON-RPC request to the sandbox's gateway through the router;
 * the HTTP status, the body into *out (free it). */
static long rpc(const char *id, const char *token, const char *body, char **out) {
  char auth[200];
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token ? token : "");
  const char *hs[] = {"Content-Type: application/json",
                      "Accept: application/json, text/event-stream", token ? auth : NULL, NULL};
  engine_req r = {.json = body, .sandbox = id, .port = 50005, .headers = hs, .timeout_s = 120};
  return engine_http(&F, "POST", "/mcp", &r, out);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = calloc(1, 1 << 16);
  if (s) (void)fread(s, 1, (1 << 16) - 1, f);
  fclose(f);
  return s;
}

/* The config: the echo server, with a GREETING that has a single quote
 * (the library quotes the JSON for the shell). */
static char *config(void) {
  char *src = read_all(ASB_ECHO_SERVER);
  if (!src) return NULL;
  size_t n = strlen(src) + 32;
  char *run = malloc(n);
  snprintf(run, n, "python3 -c '%s'", src);
  free(src);
  cJSON *root = cJSON_CreateObject();
  cJSON *srv = cJSON_AddObjectToObject(root, "github/asb-tests/echo");
  cJSON_AddStringToObject(srv, "installCmd", "echo installed > marker");
  cJSON_AddStringToObject(srv, "runCmd", run);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(srv, "envs"), "GREETING", "it's");
  free(run);
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

static int running(void) {
  asb_sandbox_page *p = NULL;
  if (asb_sandbox_list(&p, C, NULL) != ASB_OK) return -1;
  int n = (int)asb_sandbox_page_count(p);
  asb_sandbox_page_free(p);
  return n;
}

TEST(create_with_mcp_json) {
  char *cfg = config();
  REQUIRE(cfg != NULL);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.mcp_json = cfg;
  asb_sandbox *sb = NULL;
  int rc = asb_sandbox_create(&sb, C, &o);
  free(cfg);
  if (rc) ASBT_FAIL("create: %s", asb_error_message(asb_error_last()));
  REQUIRE_RC(rc, ASB_OK);
  char id[160], url[512], want[700];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(asb_sandbox_mcp_url(url, sizeof url, sb), ASB_OK);
  snprintf(want, sizeof want, "http://50005-%s.localhost:%d/mcp", id, F.port);
  CHECK_STR(url, want);
  char small[8];
  CHECK_RC(asb_sandbox_mcp_url(small, sizeof small, sb), ASB_EINVAL);
  char *token = NULL;
  REQUIRE_RC(asb_sandbox_mcp_token(&token, sb, NULL), ASB_OK);
  CHECK(strlen(token) == 36 && token[14] == '4');
  /* the template was mcp-gateway (no template named) */
  asb_sandbox_info *info = NULL;
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_OK) {
    CHECK_STR(asb_sandbox_info_name(info), "mcp-gateway");
    asb_sandbox_info_free(info);
  }
  /* a connected handle reads /etc/mcp-gateway/.token as root */
  asb_sandbox *other = NULL;
  REQUIRE_RC(asb_sandbox_connect(&other, C, id, 0, NULL), ASB_OK);
  char *t2 = NULL;
  CHECK_RC(asb_sandbox_mcp_token(&t2, other, NULL), ASB_OK);
  if (t2) CHECK_STR(t2, token);
  asb_free(t2);
  asb_sandbox_free(other);

  char *body = NULL;
  CHECK(rpc(id, token, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &body) == 200);
  CHECK(body && strstr(body, "\"echo.echo\"") && strstr(body, "\"sandbox.run_command\""));
  free(body);
  CHECK(rpc(id, token,
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"echo.echo\",\"arguments\":{\"text\":\"world\"}}}",
            &body) == 200);
  CHECK(body && strstr(body, "it's world installed"));
  free(body);
  /* without the token, or with another: 401 */
  CHECK(rpc(id, NULL, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", &body) == 401);
  free(body);
  CHECK(rpc(id, "x", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}", &body) == 401);
  free(body);
  asb_free(token);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(bad_configs) {
  int before = running();
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 60000;
  o.mcp_json = "{\"github/a/b\":{\"runCmd\":\"echo boom >&2; exit 5\"}}";
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_ERROR);
  const char *m = asb_error_message(asb_error_last());
  CHECK(strncmp(m, "Failed to start MCP gateway: ", 29) == 0);
  CHECK(strstr(m, "exited with status 5") && strstr(m, "boom"));
  CHECK(sb == NULL);
  /* refused locally: not a JSON object */
  o.mcp_json = "[1]";
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
  CHECK(running() == before);
  /* a handle that did not start one: no token file */
  o.mcp_json = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char *t = NULL;
  CHECK_RC(asb_sandbox_mcp_token(&t, sb, NULL), ASB_ENOTFOUND);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  /* version 4 (a program built before mcp_json) has no such member */
  void *old = NULL;
  REQUIRE_RC(asb_options_new(&old, "asb_sandbox_options", 4), ASB_OK);
  CHECK_RC(asb_options_set_string(old, "mcp_json", "{}"), ASB_EVERSION);
  asb_options_free(old);
}

int main(void) {
  if (engine_fixture_start(&F, "mcpclient") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  if (engine_fixture_client(&F, &C) != ASB_OK) {
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(create_with_mcp_json);
  RUN(bad_configs);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
