/* The C ABI's network calls against the real engine: create with E2B's
 * allowInternetAccess and network (options version 2, and by name),
 * read the effective config back, update it live, the engine's refusals
 * as ASB_EINVAL with its reason, a killed sandbox's update refused, the
 * traffic token every sandbox gets (public traffic too). What
 * the rules do to packets is the datapath's tests' (tests/net, in a closed
 * topology); no packet is sent here.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;

/* 1 if entry e is among the info's allowOut (deny: denyOut) entries. */
static int has(const asb_sandbox_info *i, int deny, const char *e) {
  size_t n = deny ? asb_sandbox_info_deny_out_count(i) : asb_sandbox_info_allow_out_count(i);
  for (size_t k = 0; k < n; k++) {
    const char *x =
        deny ? asb_sandbox_info_deny_out_get(i, k) : asb_sandbox_info_allow_out_get(i, k);
    if (x && strcmp(x, e) == 0) return 1;
  }
  return 0;
}

TEST(create_read_back_update) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.allow_internet_access = -1;
  o.network_json =
      "{\"allowOut\":[\"198.18.0.10\",\"198.18.1.0/24\",\"example.test\",\"*.example.test\"],"
      "\"denyOut\":[\"198.18.0.66\"]}";
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  /* public traffic, and a traffic token all the same (the code
   * interpreter's credential for E2B's SDKs: docs/networking.md), apart
   * from the envd token; a connect hands out the same */
  const char *tt = asb_sandbox_traffic_access_token(sb);
  CHECK(tt && *tt && strcmp(tt, asb_sandbox_envd_access_token(sb)) != 0);
  asb_sandbox *again = NULL;
  CHECK_RC(asb_sandbox_connect(&again, C, asb_sandbox_id(sb), 120000, NULL), ASB_OK);
  CHECK(again && tt && asb_sandbox_traffic_access_token(again) &&
        strcmp(asb_sandbox_traffic_access_token(again), tt) == 0);
  asb_sandbox_free(again);
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_allow_internet_access(i), 0);
  CHECK(asb_sandbox_info_network_json(i) != NULL);
  CHECK(has(i, 0, "198.18.1.0/24"));
  CHECK(has(i, 0, "*.example.test"));
  CHECK(has(i, 1, "198.18.0.66"));
  asb_sandbox_info_free(i);

  /* live: the new config replaces the old; what is left out is cleared */
  REQUIRE_RC(asb_sandbox_update_network(sb, 1, "{\"denyOut\":[\"198.18.2.0/24\"]}", NULL), ASB_OK);
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_allow_internet_access(i), 1);
  CHECK_INT(asb_sandbox_info_allow_out_count(i), 0);
  CHECK(has(i, 1, "198.18.2.0/24"));
  CHECK(!has(i, 1, "198.18.0.66"));
  asb_sandbox_info_free(i);

  /* the engine judges the values: a bad CIDR is its 400, with its reason */
  CHECK_RC(asb_sandbox_update_network(sb, 0, "{\"allowOut\":[\"198.18.0.0/99\"]}", NULL),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "198.18.0.0/99") != NULL);
  CHECK_RC(asb_sandbox_update_network(sb, 0, "{\"denyOut\":[\"example.test\"]}", NULL), ASB_EINVAL);
  /* and a refused update changed nothing */
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK(has(i, 1, "198.18.2.0/24"));
  asb_sandbox_info_free(i);

  REQUIRE_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  int rc = asb_sandbox_update_network(sb, -1, NULL, NULL);
  CHECK(rc == ASB_ESANDBOXNOTFOUND || rc == ASB_ESANDBOXGONE);
  asb_sandbox_free(sb);
}

/* Everything of E2B's config round-trips through the engine, but the egress
 * proxy's password, a credential, which GET never shows. */
TEST(full_config_round_trip) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.network_json =
      "{\"allowOut\":[\"api.example.test\"],"
      "\"rules\":{\"api.example.test\":[{\"transform\":{\"headers\":{\"X-Test\":\"yes\"}}}]},"
      "\"egressProxy\":{\"address\":\"198.18.0.20:1080\",\"username\":\"proxy-user\","
      "\"password\":\"pw-never-shown\"},"
      "\"allowPublicTraffic\":false,\"maskRequestHost\":\"${PORT}-app.example.test\","
      "\"maxConnections\":64}";
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  const char *j = asb_sandbox_info_network_json(i);
  REQUIRE(j != NULL);
  CHECK(strstr(j, "\"X-Test\":\"yes\"") != NULL);
  CHECK(strstr(j, "198.18.0.20:1080") != NULL && strstr(j, "proxy-user") != NULL);
  CHECK(strstr(j, "pw-never-shown") == NULL);
  CHECK(strstr(j, "\"allowPublicTraffic\":false") != NULL);
  CHECK(strstr(j, "${PORT}-app.example.test") != NULL);
  CHECK(strstr(j, "\"maxConnections\":64") != NULL);
  asb_sandbox_info_free(i);
  /* an update replaces the egress rules; allowPublicTraffic, maskRequestHost
   * and the limits stay */
  REQUIRE_RC(asb_sandbox_update_network(sb, 0, "{\"allowOut\":[\"198.18.0.10\"]}", NULL), ASB_OK);
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  j = asb_sandbox_info_network_json(i);
  REQUIRE(j != NULL);
  CHECK(strstr(j, "X-Test") == NULL && strstr(j, "egressProxy") == NULL);
  CHECK(strstr(j, "\"allowPublicTraffic\":false") != NULL);
  CHECK(strstr(j, "\"maxConnections\":64") != NULL);
  CHECK(has(i, 0, "198.18.0.10"));
  asb_sandbox_info_free(i);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(by_name_and_refused_at_create) {
  void *o = NULL;
  REQUIRE_RC(asb_options_new(&o, "asb_sandbox_options", 2), ASB_OK);
  CHECK_RC(asb_options_set_int(o, "timeout_ms", 120000), ASB_OK);
  CHECK_RC(asb_options_set_string(o, "network_json", "{\"denyOut\":[\"198.18.0.0/15\"]}"), ASB_OK);
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, o), ASB_OK);
  asb_options_free(o);
  if (sb) {
    asb_sandbox_info *i = NULL;
    CHECK_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
    CHECK(has(i, 1, "198.18.0.0/15"));
    CHECK(asb_sandbox_info_allow_internet_access(i) != 0); /* the default: allowed */
    asb_sandbox_info_free(i);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  /* a create the engine refuses makes no sandbox */
  asb_sandbox_options bad = ASB_SANDBOX_OPTIONS_INIT;
  bad.network_json = "{\"allowOut\":[\"not a destination\"]}";
  sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &bad), ASB_EINVAL);
  CHECK(sb == NULL);
}

/* examples/network.c, configured as users run it: only ASB_STATE_DIR. */
TEST(example) {
  char cmd[1024], env[256];
  snprintf(env, sizeof env, "%s", F.state);
  setenv("ASB_STATE_DIR", env, 1);
  snprintf(cmd, sizeof cmd,
           "env -u E2B_API_URL -u E2B_API_KEY -u E2B_SANDBOX_URL -u ASB_API_URL -u ASB_API_KEY "
           "%s/network > /tmp/asb-net-example-%d.log 2>&1",
           ASB_EXAMPLES_DIR, (int)getpid());
  int rc = system(cmd);
  snprintf(cmd, sizeof cmd, "/tmp/asb-net-example-%d.log", (int)getpid());
  FILE *f = fopen(cmd, "r");
  char out[8192] = "";
  size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
  out[n] = '\0';
  if (f) fclose(f);
  remove(cmd);
  if (rc != 0) ASBT_FAIL("examples/network exited with %d:\n%s", rc, out);
  CHECK(strstr(out, "created: internet off") != NULL);
  CHECK(strstr(out, "allowOut 198.18.0.0/24") != NULL);
  CHECK(strstr(out, "updated: internet off") != NULL);
  CHECK(strstr(out, "refused: ") != NULL && strstr(out, "allowout") != NULL);
}

int main(void) {
  if (engine_fixture_start(&F, "netclient") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  if (engine_fixture_client(&F, &C) != ASB_OK) {
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(create_read_back_update);
  RUN(full_config_round_trip);
  RUN(by_name_and_refused_at_create);
  RUN(example);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
