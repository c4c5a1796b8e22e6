/* Named commands through the public APIs of both libraries: a real
 * libagentsandbox-server on loopback and the client calling it the way it
 * calls a sandbox (the client's sandbox URL with E2b-Sandbox-* headers).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <agentsandbox/server.h>
#include <stdio.h>
#include <stdlib.h>

#include "asb_testing.h"

static int h_hello(asb_server_call *call, void *ud) {
  char out[256];
  (void)ud;
  snprintf(out, sizeof out, "{\"greeting\":\"Hello, %s!\",\"n\":%lld}",
           asb_server_call_string(call, "name"), (long long)asb_server_call_integer(call, "n"));
  return asb_server_call_set_result_json(call, out);
}

static int h_fail(asb_server_call *call, void *ud) {
  (void)ud;
  return asb_server_call_error(call, "HelloError", "no greeting today");
}

static int h_big(asb_server_call *call, void *ud) {
  (void)ud;
  return asb_server_call_set_result_integer(call, 12345678901234567LL);
}

static asb_server *S;
static asb_client *C;

static asb_sandbox *attach(const char *token) {
  asb_sandbox_attach_options a = ASB_SANDBOX_ATTACH_OPTIONS_INIT;
  a.envd_access_token = token;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_attach(&sb, C, "i0named0test0sandbox", &a) != ASB_OK) return NULL;
  return sb;
}

TEST(run) {
  asb_sandbox *sb = attach("tok");
  REQUIRE(sb);
  char *out = NULL;
  REQUIRE_RC(asb_sandbox_run_command(&out, sb, "hello", "{\"name\":\"Ada\",\"n\":\"3\"}", NULL),
             ASB_OK);
  CHECK_STR(out, "{\"greeting\":\"Hello, Ada!\",\"n\":3}");
  asb_free(out);
  out = NULL;
  REQUIRE_RC(asb_sandbox_run_command(&out, sb, "big", NULL, NULL), ASB_OK);
  CHECK_STR(out, "12345678901234567");
  asb_free(out);

  /* unknown command */
  out = (char *)"untouched";
  CHECK_RC(asb_sandbox_run_command(&out, sb, "nope", "{}", NULL), ASB_ECOMMANDNOTFOUND);
  CHECK(out == NULL);
  CHECK_INT(asb_error_last()->http_status, 404);
  CHECK_STR(asb_error_last()->remote_code, "CommandNotFoundError");
  CHECK(strstr(asb_error_last()->message, "Unknown command 'nope'; available: hello, fail, big"));
  /* bad arguments */
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{}", NULL), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "missing required argument 'name'"));
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{\"name\":\"x\",\"n\":\"lots\"}", NULL),
           ASB_EINVAL);
  CHECK_INT(asb_error_last()->http_status, 400);
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{\"name\":\"x\",\"zzz\":1}", NULL),
           ASB_EINVAL);
  /* args_json must be an object: refused before any request */
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "[1]", NULL), ASB_EINVAL);
  CHECK_INT(asb_error_last()->http_status, 0);
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{oops", NULL), ASB_EINVAL);
  /* the command raised */
  CHECK_RC(asb_sandbox_run_command(&out, sb, "fail", NULL, NULL), ASB_ECOMMANDFAILED);
  CHECK_STR(asb_error_last()->remote_code, "HelloError");
  CHECK_INT(asb_error_last()->http_status, 500);
  CHECK(strstr(asb_error_last()->message, "HelloError: no greeting today"));
  /* misuse */
  CHECK_RC(asb_sandbox_run_command(&out, sb, "", NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_sandbox_run_command(NULL, sb, "hello", NULL, NULL), ASB_EINVAL);
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  o.version = 7;
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", NULL, &o), ASB_EVERSION);
  CHECK_RC(asb_named_command_options_init(&o, ASB_NAMED_COMMAND_OPTIONS_VERSION), ASB_OK);
  o.port = 70000;
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", NULL, &o), ASB_EINVAL);
  asb_sandbox_free(sb);
}

TEST(auth) {
  asb_sandbox *sb = attach("wrong");
  REQUIRE(sb);
  char *out = NULL;
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{\"name\":\"x\"}", NULL), ASB_EAUTH);
  CHECK_STR(asb_error_last()->remote_code, "AuthError");
  asb_named_command_list *l = NULL;
  CHECK_RC(asb_sandbox_commands_list(&l, sb, NULL), ASB_EAUTH);
  asb_sandbox_free(sb);
}

TEST(list) {
  asb_sandbox *sb = attach("tok");
  REQUIRE(sb);
  asb_named_command_list *l = NULL;
  REQUIRE_RC(asb_sandbox_commands_list(&l, sb, NULL), ASB_OK);
  CHECK_INT(asb_named_command_list_count(l), 3);
  const asb_named_command *c = asb_named_command_list_find(l, "hello");
  REQUIRE(c);
  CHECK_STR(asb_named_command_name(c), "hello");
  CHECK_STR(asb_named_command_description(c), "Greets someone");
  CHECK_INT(asb_named_command_arg_count(c), 2);
  CHECK_STR(asb_named_command_arg_name(c, 0), "name");
  CHECK_STR(asb_named_command_arg_type(c, 0), "string");
  CHECK_INT(asb_named_command_arg_required(c, 0), 1);
  CHECK(asb_named_command_arg_default(c, 0) == NULL);
  CHECK_STR(asb_named_command_arg_description(c, 0), "who to greet");
  CHECK_STR(asb_named_command_arg_type(c, 1), "integer");
  CHECK_INT(asb_named_command_arg_required(c, 1), 0);
  CHECK_STR(asb_named_command_arg_default(c, 1), "1");
  CHECK_STR(asb_named_command_arg_description(c, 1), "");
  CHECK(asb_named_command_arg_name(c, 2) == NULL);
  CHECK(asb_named_command_list_find(l, "secret") == NULL); /* hidden */
  CHECK_STR(asb_named_command_description(asb_named_command_list_get(l, 1)), "");
  CHECK(asb_named_command_list_get(l, 3) == NULL);
  asb_named_command_list_free(l);
  asb_named_command_list_free(NULL);
  asb_sandbox_free(sb);
}

TEST(nothing_listening) {
  int port = asb_server_port(S);
  asb_server_stop(S);
  asb_server_wait(S);
  asb_sandbox *sb = attach("tok");
  REQUIRE(sb);
  char *out = NULL;
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  o.timeout_ms = 20000;
  CHECK_RC(asb_sandbox_run_command(&out, sb, "hello", "{\"name\":\"x\"}", &o), ASB_ECONNECTION);
  asb_sandbox_free(sb);
  (void)port;
}

int main(void) {
  asb_server_options so = ASB_SERVER_OPTIONS_INIT;
  so.host = "127.0.0.1";
  so.token = "tok";
  if (asb_server_new(&S, &so) != ASB_OK) return 1;
  asb_server_command *c = NULL;
  asb_server_register(&c, S, "hello", "Greets someone", h_hello, NULL, NULL);
  asb_server_command_add_arg(c, "name", ASB_ARG_STRING, ASB_ARG_REQUIRED, NULL, "who to greet");
  asb_server_command_add_arg(c, "n", ASB_ARG_INTEGER, 0, "1", NULL);
  asb_server_register(NULL, S, "fail", NULL, h_fail, NULL, NULL);
  asb_server_register(NULL, S, "big", NULL, h_big, NULL, NULL);
  asb_server_register(&c, S, "secret", NULL, h_big, NULL, NULL);
  asb_server_command_set_hidden(c, 1);
  if (asb_server_start_background(S, 0) != ASB_OK) return 1;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", asb_server_port(S));
  asb_client_options co = ASB_CLIENT_OPTIONS_INIT;
  co.api_url = url; /* unused: no control-plane call is made */
  co.api_key = "e2b_0000";
  co.sandbox_url = url;
  co.debug = -1;
  co.max_retries = -1;
  if (asb_client_new(&C, &co) != ASB_OK) return 1;
  RUN(run);
  RUN(auth);
  RUN(list);
  RUN(nothing_listening);
  asb_client_free(C);
  asb_server_free(S);
  TEST_MAIN_END();
}
