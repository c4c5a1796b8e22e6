/* The client's list calls against replies a broken or hostile server could
 * send: wrong shapes, entries without ids, truncated JSON, half-valid lists.
 * Each must fail with ASB_EPROTOCOL and a message naming the call, keep
 * nothing half-built (the sanitizer tree runs this with LeakSanitizer), and
 * the same calls must still read good replies. The server is a canned
 * responder on loopback: it stands for a faulty remote, not for our engine,
 * whose real replies the e2e tests read.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb_testing.h"

static struct MHD_Daemon *D;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_body = "[]";
static const char *g_next; /* x-next-token, or NULL */
static char g_path[256], g_port_hdr[16];

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_len, void **req) {
  (void)cls, (void)method, (void)version, (void)upload, (void)upload_len;
  if (!*req) { /* headers only */
    *req = c;
    return MHD_YES;
  }
  if (*upload_len) { /* a request's body (fork's): read and dropped */
    *upload_len = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&mu);
  snprintf(g_path, sizeof g_path, "%s", url);
  const char *port = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
  snprintf(g_port_hdr, sizeof g_port_hdr, "%s", port ? port : "");
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(g_body), (void *)g_body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (g_next) MHD_add_response_header(r, "x-next-token", g_next);
  pthread_mutex_unlock(&mu);
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static void serve(const char *body, const char *next) {
  pthread_mutex_lock(&mu);
  g_body = body;
  g_next = next;
  g_path[0] = g_port_hdr[0] = '\0';
  pthread_mutex_unlock(&mu);
}

static asb_client *C;
static asb_sandbox *SB;

/* The call failed with ASB_EPROTOCOL and says which call and what is wrong. */
#define CHECK_PROTOCOL(expr, call, why)                                       \
  do {                                                                        \
    CHECK_RC(expr, ASB_EPROTOCOL);                                            \
    const char *m_ = asb_error_last()->message;                               \
    if (!strstr(m_, call) || !strstr(m_, why))                                \
      ASBT_FAIL("%s: message '%s' lacks '%s' or '%s'", #expr, m_, call, why); \
  } while (0)

TEST(sandbox_list_reads_a_good_page) {
  serve(
      "[{\"sandboxID\":\"a1\",\"templateID\":\"base\",\"alias\":\"base\","
      "\"startedAt\":\"2026-01-02T03:04:05Z\",\"cpuCount\":2,\"memoryMB\":512,"
      "\"metadata\":{\"user\":\"ann\",\"n\":7}},"
      "{\"sandboxID\":\"b2\",\"templateID\":\"t\",\"state\":\"paused\"}]",
      "page2");
  asb_sandbox_page *p = NULL;
  REQUIRE_RC(asb_sandbox_list(&p, C, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 2);
  const asb_sandbox_info *a = asb_sandbox_page_get(p, 0), *b = asb_sandbox_page_get(p, 1);
  REQUIRE(a && b);
  CHECK_STR(asb_sandbox_info_id(a), "a1");
  CHECK_STR(asb_sandbox_info_state(a), "running");
  CHECK_STR(asb_sandbox_info_metadata(a, "user"), "ann");
  CHECK(asb_sandbox_info_metadata(a, "n") == NULL); /* metadata values are strings */
  CHECK_INT(asb_sandbox_info_cpu_count(a), 2);
  CHECK(asb_sandbox_info_started_at(a) > 0);
  CHECK_STR(asb_sandbox_info_state(b), "paused");
  CHECK_STR(asb_sandbox_page_next_token(p), "page2");
  asb_sandbox_page_free(p);

  serve("[]", NULL);
  REQUIRE_RC(asb_sandbox_list(&p, C, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 0);
  CHECK(asb_sandbox_page_get(p, 0) == NULL);
  CHECK(asb_sandbox_page_next_token(p) == NULL);
  asb_sandbox_page_free(p);
}

TEST(sandbox_list_rejects_malformed_replies) {
  static const struct {
    const char *body, *why;
  } bad[] = {
      {"{\"sandboxID\":\"a1\"}", "not a list"},
      {"[{\"sandboxID\":\"a1\"},7]", "without a sandboxID"},
      {"[{\"sandboxID\":\"a1\"},{\"templateID\":\"base\"}]", "without a sandboxID"},
      {"[{\"sandboxID\":\"a1\"},{\"sandboxID\":\"\"}]", "without a sandboxID"},
      {"[{\"sandboxID\":\"a1\"},{\"sandboxID\":42}]", "without a sandboxID"},
      {"[{\"sandboxID\":\"a1\",\"metadata\":{\"k\":\"v\"}},null]", "without a sandboxID"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    serve(bad[i].body, "next");
    asb_sandbox_page *p = NULL;
    CHECK_PROTOCOL(asb_sandbox_list(&p, C, NULL), "sandbox.list", bad[i].why);
    CHECK(p == NULL);
  }
  /* truncated JSON: the reply cannot be parsed at all */
  serve("[{\"sandboxID\":\"a1\"", NULL);
  asb_sandbox_page *p = NULL;
  CHECK_RC(asb_sandbox_list(&p, C, NULL), ASB_EPROTOCOL);
  CHECK(p == NULL);
}

TEST(sandbox_info_needs_an_id) {
  asb_sandbox_info *i = NULL;
  serve("{\"sandboxID\":\"i0named0test0sandbox\",\"templateID\":\"base\"}", NULL);
  REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_template_id(i), "base");
  CHECK_STR(g_path, "/sandboxes/i0named0test0sandbox");
  asb_sandbox_info_free(i);
  i = NULL;
  serve("{\"templateID\":\"base\"}", NULL);
  CHECK_PROTOCOL(asb_sandbox_get_info(&i, SB, NULL), "sandbox.get_info", "without a sandboxID");
  CHECK(i == NULL);
  serve("[]", NULL);
  CHECK_PROTOCOL(asb_sandbox_get_info(&i, SB, NULL), "sandbox.get_info", "without a sandboxID");
}

/* The swap object (ours, --pause-swap) through the getters: its numbers
 * when swappedBytes and residentBytes are there and non-negative
 * (residentBeforeBytes on its own), -1 ("none", never a 0 that looks like
 * data) otherwise: E2B's cloud sends none, nor does a running sandbox. */
TEST(sandbox_info_swap_or_none) {
  static const struct {
    const char *swap;
    long long swapped, resident, before;
  } cases[] = {
      {",\"swap\":{\"swappedBytes\":268435456,\"residentBytes\":1048576,"
       "\"residentBeforeBytes\":270532608}",
       268435456, 1048576, 270532608},
      {",\"swap\":{\"swappedBytes\":0,\"residentBytes\":0,\"residentBeforeBytes\":0}", 0, 0, 0},
      {"", -1, -1, -1}, /* E2B, running, filesystem pause, no --pause-swap */
      {",\"swap\":null", -1, -1, -1},
      {",\"swap\":{}", -1, -1, -1},
      /* residentBeforeBytes not known (an engine that adopted it paused) */
      {",\"swap\":{\"swappedBytes\":5,\"residentBytes\":6}", 5, 6, -1},
      {",\"swap\":{\"swappedBytes\":5,\"residentBytes\":6,\"residentBeforeBytes\":null}", 5, 6, -1},
      {",\"swap\":{\"swappedBytes\":5,\"residentBeforeBytes\":7}", -1, -1, -1},
      {",\"swap\":{\"swappedBytes\":\"5\",\"residentBytes\":6,\"residentBeforeBytes\":7}", -1, -1,
       -1},
      {",\"swap\":{\"swappedBytes\":-5,\"residentBytes\":6,\"residentBeforeBytes\":7}", -1, -1, -1},
      {",\"swap\":[1,2,3]", -1, -1, -1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"sandboxID\":\"i0named0test0sandbox\",\"state\":\"paused\","
             "\"pauseMode\":\"memory\"%s}",
             cases[k].swap);
    serve(body, NULL);
    asb_sandbox_info *i = NULL;
    REQUIRE_RC(asb_sandbox_get_info(&i, SB, NULL), ASB_OK);
    CHECK_STR(asb_sandbox_info_pause_mode(i), "memory");
    CHECK_INT(asb_sandbox_info_swapped_bytes(i), cases[k].swapped);
    CHECK_INT(asb_sandbox_info_resident_bytes(i), cases[k].resident);
    CHECK_INT(asb_sandbox_info_resident_before_bytes(i), cases[k].before);
    asb_sandbox_info_free(i);
  }
  CHECK_INT(asb_sandbox_info_swapped_bytes(NULL), -1);
  CHECK_INT(asb_sandbox_info_resident_bytes(NULL), -1);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(NULL), -1);
}

TEST(metrics) {
  serve(
      "[{\"timestampUnix\":\"1700000000\",\"cpuCount\":2,\"cpuUsedPct\":12.5,"
      "\"memUsed\":\"1048576\",\"memTotal\":\"2097152\",\"diskUsed\":\"1\",\"diskTotal\":\"2\"},"
      "{\"timestampUnix\":1700000005}]",
      NULL);
  asb_metrics *m = NULL;
  REQUIRE_RC(asb_sandbox_get_metrics(&m, SB, 0, 0, NULL), ASB_OK);
  CHECK_INT(asb_metrics_count(m), 2);
  CHECK(asb_metrics_sampled_at(m, 0) == 1700000000);
  CHECK(asb_metrics_cpu_used_pct(m, 0) == 12.5);
  CHECK(asb_metrics_mem_used(m, 0) == 1048576);
  CHECK(asb_metrics_sampled_at(m, 1) == 1700000005);
  CHECK(asb_metrics_mem_used(m, 1) == 0);
  asb_metrics_free(m);
  m = NULL;
  serve("{\"timestampUnix\":\"1700000000\"}", NULL);
  CHECK_PROTOCOL(asb_sandbox_get_metrics(&m, SB, 0, 0, NULL), "sandbox.get_metrics", "not a list");
  CHECK(m == NULL);
}

TEST(templates) {
  serve(
      "[{\"templateID\":\"t1\",\"buildID\":\"b1\",\"aliases\":[\"hello\"]},"
      "{\"templateID\":\"t2\",\"name\":\"two\"}]",
      NULL);
  asb_template_list *l = NULL;
  REQUIRE_RC(asb_templates_list(&l, C, NULL), ASB_OK);
  CHECK_INT(asb_template_list_count(l), 2);
  CHECK_STR(asb_template_name(asb_template_list_get(l, 0)), "hello");
  CHECK_STR(asb_template_id(asb_template_list_get(l, 1)), "t2");
  CHECK(asb_template_list_get(l, 2) == NULL);
  asb_template_list_free(l);
  l = NULL;
  serve("[{\"templateID\":\"t1\",\"aliases\":[\"hello\"]},{\"name\":\"no id\"}]", NULL);
  CHECK_PROTOCOL(asb_templates_list(&l, C, NULL), "template.list", "without a templateID");
  serve("[{\"templateID\":\"t1\"},\"t2\"]", NULL);
  CHECK_PROTOCOL(asb_templates_list(&l, C, NULL), "template.list", "without a templateID");
  serve("{}", NULL);
  CHECK_PROTOCOL(asb_templates_list(&l, C, NULL), "template.list", "not a list");
  CHECK(l == NULL);
}

TEST(code_contexts) {
  serve("[{\"id\":\"c1\",\"language\":\"python\",\"cwd\":\"/home/user\"},{\"id\":\"c2\"}]", NULL);
  asb_code_context_list *l = NULL;
  REQUIRE_RC(asb_code_contexts_list(&l, SB, NULL), ASB_OK);
  CHECK_STR(g_port_hdr, "49999");
  CHECK_INT(asb_code_context_list_count(l), 2);
  CHECK_STR(asb_code_context_language(asb_code_context_list_get(l, 1)), "python");
  asb_code_context_list_free(l);
  l = NULL;
  serve("[{\"id\":\"c1\",\"language\":\"bash\"},{\"language\":\"js\"}]", NULL);
  CHECK_PROTOCOL(asb_code_contexts_list(&l, SB, NULL), "code.context_list", "without an id");
  serve("{\"id\":\"c1\"}", NULL);
  CHECK_PROTOCOL(asb_code_contexts_list(&l, SB, NULL), "code.context_list", "not a list");
  CHECK(l == NULL);
}

TEST(named_commands) {
  serve("{\"commands\":[{\"name\":\"a\",\"args\":[{\"name\":\"x\",\"default\":3}]}]}", NULL);
  asb_named_command_list *l = NULL;
  REQUIRE_RC(asb_sandbox_commands_list(&l, SB, NULL), ASB_OK);
  CHECK_INT(asb_named_command_list_count(l), 1);
  CHECK_STR(asb_named_command_arg_default(asb_named_command_list_get(l, 0), 0), "3");
  asb_named_command_list_free(l);
  l = NULL;
  /* the second command fails after its name and first argument were read:
   * what it had is freed with it */
  serve(
      "{\"commands\":[{\"name\":\"a\",\"args\":[{\"name\":\"x\"}]},"
      "{\"name\":\"b\",\"description\":\"d\",\"args\":[{\"name\":\"y\",\"default\":\"z\"},5]}]}",
      NULL);
  CHECK_PROTOCOL(asb_sandbox_commands_list(&l, SB, NULL), "list_commands", "malformed argument");
  serve("{\"commands\":[{\"name\":\"a\"},{\"description\":\"nameless\"}]}", NULL);
  CHECK_PROTOCOL(asb_sandbox_commands_list(&l, SB, NULL), "list_commands", "without a name");
  serve("{\"commands\":{\"name\":\"a\"}}", NULL);
  CHECK_PROTOCOL(asb_sandbox_commands_list(&l, SB, NULL), "list_commands", "\"commands\" list");
  CHECK(l == NULL);
}

/* A multi-fork reply (E2B's [{sandbox} or {error}]): each entry's handle
 * or error through asb_fork_list_take, forkMode read; replies without a
 * fork fail whole, keeping nothing. */
TEST(fork_list_entries) {
  static const char good[] =
      "[{\"sandbox\":{\"sandboxID\":\"f1\",\"envdVersion\":\"0.6.4\","
      "\"forkMode\":\"processes\"}},"
      "{\"error\":{\"code\":500,\"message\":\"no room for it\"}},"
      "{\"sandbox\":{\"sandboxID\":\"f3\",\"envdVersion\":\"0.6.4\"}}]";
  asb_fork_options o = ASB_FORK_OPTIONS_INIT;
  o.count = 3;
  asb_fork_list *l = NULL;
  asb_sandbox *f = NULL;
  serve(good, NULL);
  REQUIRE_RC(asb_sandbox_fork_many(&l, SB, &o, NULL), ASB_OK);
  CHECK_STR(g_path, "/sandboxes/i0named0test0sandbox/fork");
  CHECK_INT((int)asb_fork_list_count(l), 3);
  CHECK_RC(asb_fork_list_take(&f, l, 1), ASB_ERROR); /* that fork's error */
  CHECK(f == NULL && strstr(asb_error_last()->message, "no room for it"));
  CHECK_RC(asb_fork_list_take(&f, l, 0), ASB_OK);
  CHECK_STR(asb_sandbox_id(f), "f1");
  CHECK_STR(asb_sandbox_fork_mode(f), "processes");
  asb_sandbox_free(f);
  asb_fork_list_free(l); /* frees f3's handle, not taken */
  /* more entries than asked: the first count; asb_sandbox_fork_ex the first */
  o.count = 1;
  CHECK_RC(asb_sandbox_fork_ex(&f, SB, &o, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_id(f), "f1");
  asb_sandbox_free(f);
  serve("[{\"error\":{\"code\":500,\"message\":\"no room\"}}]", NULL);
  CHECK_RC(asb_sandbox_fork_ex(&f, SB, &o, NULL), ASB_ERROR);
  CHECK(f == NULL);
  CHECK_RC(asb_sandbox_fork(&f, SB, 0, NULL), ASB_ERROR);
  /* no fork in the reply, or one without envdVersion after a good one */
  o.count = 2;
  static const char *const bad[] = {
      "[]", "{}", "[{\"other\":1}]",
      "[{\"sandbox\":{\"sandboxID\":\"f1\",\"envdVersion\":\"0.6.4\"}},"
      "{\"sandbox\":{\"sandboxID\":\"f2\"}}]"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    serve(bad[k], NULL);
    CHECK_PROTOCOL(asb_sandbox_fork_many(&l, SB, &o, NULL), "sandbox.fork", "");
    CHECK(l == NULL);
  }
  /* refused before asking */
  o.count = 101;
  CHECK_RC(asb_sandbox_fork_many(&l, SB, &o, NULL), ASB_EINVAL);
  o.count = 2;
  CHECK_RC(asb_sandbox_fork_ex(&f, SB, &o, NULL), ASB_EINVAL);
  o.count = 1;
  o.keep_processes = 2;
  CHECK_RC(asb_sandbox_fork_ex(&f, SB, &o, NULL), ASB_EINVAL);
  CHECK_RC(asb_fork_list_take(&f, NULL, 0), ASB_EINVAL);
  CHECK(asb_fork_list_count(NULL) == 0);
  CHECK(asb_sandbox_fork_mode(SB) == NULL); /* attached: no reply */
}

int main(void) {
  D = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                       NULL, handler, NULL, MHD_OPTION_END);
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
  if (asb_sandbox_attach(&SB, C, "i0named0test0sandbox", NULL) != ASB_OK) return 2;
  RUN(sandbox_list_reads_a_good_page);
  RUN(sandbox_list_rejects_malformed_replies);
  RUN(sandbox_info_needs_an_id);
  RUN(sandbox_info_swap_or_none);
  RUN(metrics);
  RUN(templates);
  RUN(code_contexts);
  RUN(named_commands);
  RUN(fork_list_entries);
  asb_sandbox_free(SB);
  asb_client_free(C);
  MHD_stop_daemon(D);
  TEST_MAIN_END();
}
