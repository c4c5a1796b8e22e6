/* Public API of the foundation, through the installed header and the shared
 * library only: version, errors, options versioning, configuration
 * resolution from options and environment, cancellation tokens.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdlib.h>

#include "testing.h"

static void clear_env(void) {
  const char *names[] = {"API_KEY", "API_URL", "DOMAIN", "SANDBOX_URL", "DEBUG"};
  char v[64];
  for (size_t i = 0; i < 5; i++) {
    snprintf(v, sizeof v, "ASB_%s", names[i]);
    unsetenv(v);
    snprintf(v, sizeof v, "E2B_%s", names[i]);
    unsetenv(v);
  }
}

TEST(version) {
  int ma = -1, mi = -1, pa = -1;
  CHECK_STR(asb_version(&ma, &mi, &pa), ASB_VERSION_STRING);
  CHECK_INT(ma, ASB_VERSION_MAJOR);
  CHECK_INT(mi, ASB_VERSION_MINOR);
  CHECK_INT(pa, ASB_VERSION_PATCH);
  CHECK_INT(asb_version_number(), ASB_VERSION_NUMBER);
  CHECK_STR(asb_version(NULL, NULL, NULL), ASB_VERSION_STRING);
}

TEST(errors) {
  asb_error_clear();
  const asb_error *e = asb_error_last();
  REQUIRE(e != NULL);
  CHECK_INT(e->code, ASB_OK);
  CHECK_STR(e->message, "");
  CHECK_STR(e->remote_code, "");
  CHECK_STR(e->reason, "");
  CHECK_INT(e->retry_after, -1);
  for (int c = 0; c >= ASB_EPERM; c--) {
    CHECK(strcmp(asb_strerror(c), "unknown error") != 0);
    CHECK(strncmp(asb_status_name(c), "ASB_", 4) == 0);
  }
  CHECK_STR(asb_strerror(-9999), "unknown error");
  CHECK_STR(asb_status_name(ASB_ENOTFOUND), "ASB_ENOTFOUND");
}

TEST(options_versioning) {
  asb_client_options o;
  CHECK_INT(asb_client_options_init(&o, ASB_CLIENT_OPTIONS_VERSION), ASB_OK);
  CHECK_INT(o.version, ASB_CLIENT_OPTIONS_VERSION);
  CHECK_INT(asb_client_options_init(&o, 0), ASB_EVERSION);
  CHECK_INT(asb_client_options_init(&o, 99), ASB_EVERSION);
  asb_client *c = NULL;
  o.version = 42;
  CHECK_INT(asb_client_new(&c, &o), ASB_EVERSION);
  CHECK(c == NULL);
  CHECK_INT(asb_error_last()->code, ASB_EVERSION);
  asb_call_options co;
  CHECK_INT(asb_call_options_init(&co, ASB_CALL_OPTIONS_VERSION), ASB_OK);
  CHECK_INT(asb_call_options_init(&co, 7), ASB_EVERSION);
  CHECK_INT(asb_client_new(NULL, NULL), ASB_EINVAL);
}

TEST(defaults_with_nothing_configured_use_the_local_engine) {
  clear_env();
  setenv("ASB_STATE_DIR", "/nonexistent/asb-state", 1);
  asb_client *c = NULL;
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "http://127.0.0.1:49982");
  CHECK_STR(asb_client_domain(c), "localhost:49982");
  /* Sandbox traffic goes through the engine's router. */
  CHECK_STR(asb_client_sandbox_url(c), "http://127.0.0.1:49982");
  CHECK_INT(asb_client_is_debug(c), 0);
  CHECK_INT(asb_client_request_timeout_ms(c), 60000);
  CHECK_INT(asb_client_has_api_key(c), 0);
  asb_client_free(c);
  unsetenv("ASB_STATE_DIR");
}

TEST(e2b_environment) {
  clear_env();
  setenv("E2B_API_KEY", "e2b_0123", 1);
  asb_client *c = NULL;
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "https://api.e2b.app"); /* key alone: E2B cloud */
  CHECK_STR(asb_client_domain(c), "e2b.app");
  CHECK_INT(asb_client_has_api_key(c), 1);
  asb_client_free(c);

  setenv("E2B_DOMAIN", "cn-hangzhou.e2b.fc.aliyuncs.com", 1);
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "https://api.cn-hangzhou.e2b.fc.aliyuncs.com");
  CHECK_STR(asb_client_domain(c), "cn-hangzhou.e2b.fc.aliyuncs.com");
  asb_client_free(c);

  setenv("E2B_API_URL", "http://127.0.0.1:1234/", 1);
  setenv("E2B_SANDBOX_URL", "http://127.0.0.1:1235", 1);
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "http://127.0.0.1:1234"); /* slash trimmed */
  CHECK_STR(asb_client_sandbox_url(c), "http://127.0.0.1:1235");
  asb_client_free(c);
  clear_env();
}

TEST(precedence_option_over_asb_over_e2b) {
  clear_env();
  setenv("E2B_API_URL", "http://e2b.invalid", 1);
  setenv("ASB_API_URL", "http://asb.invalid", 1);
  asb_client *c = NULL;
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "http://asb.invalid");
  asb_client_free(c);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = "http://option.invalid";
  REQUIRE(asb_client_new(&c, &o) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "http://option.invalid");
  asb_client_free(c);
  /* An empty variable counts as unset. */
  setenv("ASB_API_URL", "", 1);
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_STR(asb_client_api_url(c), "http://e2b.invalid");
  asb_client_free(c);
  clear_env();
}

TEST(debug_mode) {
  clear_env();
  setenv("E2B_DEBUG", "true", 1);
  asb_client *c = NULL;
  REQUIRE(asb_client_new(&c, NULL) == ASB_OK);
  CHECK_INT(asb_client_is_debug(c), 1);
  CHECK_STR(asb_client_api_url(c), "http://localhost:3000");
  asb_client_free(c);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.debug = -1; /* explicit off beats the environment */
  REQUIRE(asb_client_new(&c, &o) == ASB_OK);
  CHECK_INT(asb_client_is_debug(c), 0);
  asb_client_free(c);
  clear_env();
}

TEST(bad_configuration_is_rejected) {
  clear_env();
  asb_client *c = NULL;
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = "ftp://x";
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "ftp://x") != NULL);
  o.api_url = "http://a b";
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  o.api_url = NULL;
  o.sandbox_url = "localhost:49983";
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  o.sandbox_url = NULL;
  o.domain = "evil.com/path";
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  o.domain = NULL;
  const char *bad1[] = {"NoColon", NULL};
  o.headers = bad1;
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  const char *bad2[] = {"X-Inject: a\r\nHost: evil", NULL};
  o.headers = bad2;
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  const char *good[] = {"X-Team: t1", "X-Other:v", NULL};
  o.headers = good;
  CHECK_INT(asb_client_new(&c, &o), ASB_OK);
  asb_client_free(c);
  c = NULL;
  o.headers = NULL;
  o.api_key = "e2b_\nx";
  CHECK_INT(asb_client_new(&c, &o), ASB_EINVAL);
  CHECK(c == NULL);
  asb_client_free(NULL); /* accepted */
}

TEST(cancel_token) {
  asb_cancel *k = NULL;
  REQUIRE(asb_cancel_new(&k) == ASB_OK);
  CHECK_INT(asb_cancel_is_requested(k), 0);
  asb_cancel_request(k);
  asb_cancel_request(k);
  CHECK_INT(asb_cancel_is_requested(k), 1);
  asb_cancel_reset(k);
  CHECK_INT(asb_cancel_is_requested(k), 0);
  asb_cancel_free(k);
  asb_cancel_free(NULL);
  CHECK_INT(asb_cancel_is_requested(NULL), 0);
}

TEST(global_init_is_refcounted) {
  CHECK_INT(asb_global_init(), ASB_OK);
  CHECK_INT(asb_global_init(), ASB_OK);
  asb_global_cleanup();
  asb_client *c = NULL;
  CHECK_INT(asb_client_new(&c, NULL), ASB_OK);
  asb_client_free(c);
  asb_global_cleanup();
}

int main(void) {
  RUN(version);
  RUN(errors);
  RUN(options_versioning);
  RUN(defaults_with_nothing_configured_use_the_local_engine);
  RUN(e2b_environment);
  RUN(precedence_option_over_asb_over_e2b);
  RUN(debug_mode);
  RUN(bad_configuration_is_rejected);
  RUN(cancel_token);
  RUN(global_init_is_refcounted);
  TEST_MAIN_END();
}
