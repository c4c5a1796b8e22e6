/* libagentsandbox-server through its public header only, driven over real
 * HTTP with libcurl: registry rules, routes, argument coercion, errors,
 * auth, body limits, concurrency, start/stop and graceful shutdown.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox/server.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testing.h"

#define CHECK_RC(call, want)                                      \
  do {                                                            \
    int rc_ = (call);                                             \
    if (rc_ != (want))                                            \
      ASBT_FAIL("%s = %d, want %d (%s)", #call, rc_, (int)(want), \
                asb_server_error_last()->message);                \
  } while (0)

/* ---- a tiny HTTP client --------------------------------------------------- */

typedef struct resp {
  long status;
  char *body;
  size_t len;
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  resp *r = ud;
  char *nb = realloc(r->body, r->len + sz * n + 1);
  if (!nb) return 0;
  memcpy(nb + r->len, p, sz * n);
  r->len += sz * n;
  nb[r->len] = 0;
  r->body = nb;
  return sz * n;
}

static int use_chunked; /* send bodies with Transfer-Encoding: chunked */

/* body NULL = no body; len (size_t)-1 = strlen(body). token may be NULL. */
static resp http(const char *method, int port, const char *path, const char *body, size_t len,
                 const char *token) {
  resp r = {0, NULL, 0};
  CURL *c = curl_easy_init();
  char url[256], hdr[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  if (use_chunked) h = curl_slist_append(h, "Transfer-Encoding: chunked");
  if (token) {
    snprintf(hdr, sizeof hdr, "X-Access-Token: %s", token);
    h = curl_slist_append(h, hdr);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  if (strcmp(method, "HEAD") == 0) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(len == (size_t)-1 ? strlen(body) : len));
  }
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (!r.body) r.body = strdup("");
  return r;
}

#define POST(port, path, body) http("POST", port, path, body, (size_t)-1, NULL)
#define GET(port, path) http("GET", port, path, NULL, 0, NULL)

static void expect(resp r, long status, const char *body, const char *what) {
  if (r.status != status || (body && strcmp(r.body, body) != 0))
    ASBT_FAIL("%s: HTTP %ld %s, want %ld %s", what, r.status, r.body, status,
              body ? body : "(any)");
  free(r.body);
}

static int contains(const char *s, const char *needle) {
  return s && strstr(s, needle);
}

/* ---- handlers ------------------------------------------------------------- */

static int h_hello(asb_server_call *call, void *ud) {
  char out[256];
  (void)ud;
  snprintf(out, sizeof out, "{\"greeting\":\"%s, %s!\",\"times\":%lld,\"loud\":%s}",
           asb_server_call_string(call, "greeting"), asb_server_call_string(call, "name"),
           (long long)asb_server_call_integer(call, "times"),
           asb_server_call_boolean(call, "loud") ? "true" : "false");
  return asb_server_call_set_result_json(call, out);
}

static int h_fail(asb_server_call *call, void *ud) {
  (void)ud;
  return asb_server_call_error(call, "ValueError", asb_server_call_string(call, "why"));
}

static int h_bare_fail(asb_server_call *call, void *ud) {
  (void)call;
  (void)ud;
  return 7;
}

static int h_types(asb_server_call *call, void *ud) {
  const char *kind = asb_server_call_string(call, "kind");
  (void)ud;
  if (!strcmp(kind, "string")) return asb_server_call_set_result_string(call, "a\"b\n\xc3\xa9");
  if (!strcmp(kind, "int")) return asb_server_call_set_result_integer(call, -9007199254740993LL);
  if (!strcmp(kind, "float")) return asb_server_call_set_result_float(call, 2.5);
  if (!strcmp(kind, "bool")) return asb_server_call_set_result_boolean(call, 1);
  if (!strcmp(kind, "json")) return asb_server_call_set_result_json(call, " [1, {\"a\": null}] ");
  if (!strcmp(kind, "badjson")) {
    int rc = asb_server_call_set_result_json(call, "{nope");
    return rc == ASB_EINVAL ? asb_server_call_set_result_string(call, "refused") : -1;
  }
  return 0; /* "none": no result */
}

/* Echoes the arguments as the handler sees them. */
static int h_echo(asb_server_call *call, void *ud) {
  char out[1024];
  (void)ud;
  snprintf(out, sizeof out,
           "{\"args\":%s,\"has_opt\":%d,\"f\":%g,\"j\":%s,\"s_of_i\":\"%s\",\"cmd\":\"%s\"}",
           asb_server_call_args_json(call), asb_server_call_has(call, "opt"),
           asb_server_call_float(call, "f"),
           asb_server_call_json(call, "j") ? asb_server_call_json(call, "j") : "null",
           asb_server_call_string(call, "i") ? asb_server_call_string(call, "i") : "",
           asb_server_call_command(call));
  return asb_server_call_set_result_json(call, out);
}

/* Two calls of "meet" must be inside the handler at the same time. */
static pthread_mutex_t meet_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cv = PTHREAD_COND_INITIALIZER;
static int meet_inside, meet_max;

static int h_meet(asb_server_call *call, void *ud) {
  (void)ud;
  pthread_mutex_lock(&meet_mu);
  meet_inside++;
  if (meet_inside > meet_max) meet_max = meet_inside;
  pthread_cond_broadcast(&meet_cv);
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 30;
  while (meet_max < 2 && pthread_cond_timedwait(&meet_cv, &meet_mu, &dl) == 0) {
  }
  meet_inside--;
  int met = meet_max >= 2;
  pthread_mutex_unlock(&meet_mu);
  return asb_server_call_set_result_boolean(call, met);
}

/* Blocks until released; for the graceful-shutdown test. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_entered, gate_open;

static int h_gate(asb_server_call *call, void *ud) {
  (void)ud;
  pthread_mutex_lock(&gate_mu);
  gate_entered = 1;
  pthread_cond_broadcast(&gate_cv);
  while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  return asb_server_call_set_result_string(call, "done");
}

static int h_stop(asb_server_call *call, void *ud) {
  asb_server_stop(ud);
  return asb_server_call_set_result_string(call, "stopping");
}

static int destroyed;
static void destroy_counter(void *ud) {
  (void)ud;
  destroyed++;
}

static asb_server *make_server(const char *token) {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = "127.0.0.1";
  o.token = token ? token : "";
  o.max_body_bytes = 4096;
  asb_server *s = NULL;
  if (asb_server_new(&s, &o) != ASB_OK) return NULL;
  asb_server_command *c = NULL;
  asb_server_register(&c, s, "hello", "Greets someone", h_hello, NULL, destroy_counter);
  asb_server_command_add_arg(c, "name", ASB_ARG_STRING, ASB_ARG_REQUIRED, NULL, "who");
  asb_server_command_add_arg(c, "greeting", ASB_ARG_STRING, 0, "Hello", NULL);
  asb_server_command_add_arg(c, "times", ASB_ARG_INTEGER, 0, "1", "how often");
  asb_server_command_add_arg(c, "loud", ASB_ARG_BOOLEAN, 0, "no", NULL);
  asb_server_register(&c, s, "fail", NULL, h_fail, NULL, NULL);
  asb_server_command_add_arg(c, "why", ASB_ARG_STRING, 0, "because", NULL);
  asb_server_register(NULL, s, "bare_fail", NULL, h_bare_fail, NULL, NULL);
  asb_server_register(&c, s, "types", NULL, h_types, NULL, NULL);
  asb_server_command_add_arg(c, "kind", ASB_ARG_STRING, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_register(&c, s, "echo", NULL, h_echo, NULL, NULL);
  asb_server_command_add_arg(c, "i", ASB_ARG_INTEGER, 0, NULL, NULL);
  asb_server_command_add_arg(c, "f", ASB_ARG_FLOAT, 0, "0.5", NULL);
  asb_server_command_add_arg(c, "j", ASB_ARG_JSON, 0, NULL, NULL);
  asb_server_command_add_arg(c, "opt", ASB_ARG_STRING, 0, NULL, NULL);
  asb_server_register(&c, s, "secret.tool", "hidden", h_types, NULL, NULL);
  asb_server_command_set_hidden(c, 1);
  asb_server_command_add_arg(c, "kind", ASB_ARG_STRING, 0, "none", NULL);
  asb_server_register(NULL, s, "meet", NULL, h_meet, NULL, NULL);
  asb_server_register(NULL, s, "gate", NULL, h_gate, NULL, NULL);
  asb_server_register(NULL, s, "stop", NULL, h_stop, s, NULL);
  return s;
}

/* ---- tests ------------------------------------------------------------------ */

TEST(registry_rules) {
  asb_server *s = NULL;
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.version = 99;
  CHECK_RC(asb_server_new(&s, &o), ASB_EVERSION);
  CHECK_RC(asb_server_options_init(&o, 0), ASB_EVERSION);
  CHECK_RC(asb_server_options_init(&o, ASB_SERVER_OPTIONS_VERSION), ASB_OK);
  REQUIRE(asb_server_new(&s, NULL) == ASB_OK);
  asb_server_command *c = NULL;
  destroyed = 0;
  CHECK_RC(asb_server_register(&c, s, "", NULL, h_hello, NULL, destroy_counter), ASB_EINVAL);
  CHECK_INT(destroyed, 1); /* destroy runs when registration fails */
  CHECK_RC(asb_server_register(&c, s, "1abc", NULL, h_hello, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_register(&c, s, "a b", NULL, h_hello, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_register(&c, s, "a/b", NULL, h_hello, NULL, NULL), ASB_EINVAL);
  /* no handler: a command served in pull mode (asb_server_next_call) */
  CHECK_RC(asb_server_register(&c, s, "ok", NULL, NULL, NULL, NULL), ASB_OK);
  char longname[200];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK_RC(asb_server_register(&c, s, longname, NULL, h_hello, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_register(&c, s, "ok.cmd-1", NULL, h_hello, NULL, destroy_counter), ASB_OK);
  CHECK_RC(asb_server_register(NULL, s, "ok.cmd-1", NULL, h_hello, NULL, NULL), ASB_EEXISTS);
  CHECK_RC(asb_server_command_add_arg(c, "x-y", ASB_ARG_STRING, 0, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "x", 0, 0, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "x", 9, 0, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "x", ASB_ARG_STRING, 8, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "n", ASB_ARG_INTEGER, 0, "ten", NULL), ASB_EINVAL);
  CHECK(contains(asb_server_error_last()->message, "not a valid integer"));
  CHECK_RC(asb_server_command_add_arg(c, "j", ASB_ARG_JSON, 0, "{bad", NULL), ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "r", ASB_ARG_STRING, ASB_ARG_REQUIRED, "d", NULL),
           ASB_EINVAL);
  CHECK_RC(asb_server_command_add_arg(c, "n", ASB_ARG_INTEGER, 0, "10", NULL), ASB_OK);
  CHECK_RC(asb_server_command_add_arg(c, "n", ASB_ARG_INTEGER, 0, NULL, NULL), ASB_EEXISTS);
  CHECK_RC(asb_server_command_set_hidden(NULL, 1), ASB_EINVAL);
  CHECK_RC(asb_server_start(s, 70000), ASB_EINVAL);
  CHECK_RC(asb_server_start_background(s, -1), ASB_EINVAL);
  CHECK_INT(asb_server_port(s), 0);
  /* stop/wait on a server that does not run are no-ops */
  CHECK_RC(asb_server_stop(s), ASB_OK);
  CHECK_RC(asb_server_wait(s), ASB_OK);
  asb_server_free(s);
  CHECK_INT(destroyed, 2);
  asb_server_free(NULL);
  CHECK(asb_server_error_last() != NULL);
}

TEST(routes_and_results) {
  asb_server *s = make_server(NULL);
  REQUIRE(s);
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  REQUIRE(port > 0);
  /* the registry is frozen while running */
  CHECK_RC(asb_server_register(NULL, s, "late", NULL, h_hello, NULL, NULL), ASB_EINVAL);
  CHECK_RC(asb_server_start_background(s, 0), ASB_EINVAL);
  expect(GET(port, "/health"), 200, "{\"status\":\"ok\"}", "health");
  expect(http("HEAD", port, "/health", NULL, 0, NULL), 200, "", "health HEAD");
  expect(POST(port, "/health", "{}"), 405, NULL, "POST health");
  resp r = GET(port, "/commands");
  CHECK_INT(r.status, 200);
  CHECK(contains(r.body,
                 "{\"commands\":[{\"name\":\"hello\",\"description\":\"Greets someone\","
                 "\"args\":[{\"name\":\"name\",\"type\":\"string\",\"required\":true,"
                 "\"default\":null,\"description\":\"who\"},{\"name\":\"greeting\","
                 "\"type\":\"string\",\"required\":false,\"default\":\"Hello\","
                 "\"description\":\"\"},{\"name\":\"times\",\"type\":\"integer\","
                 "\"required\":false,\"default\":\"1\",\"description\":\"how often\"}"));
  CHECK(!contains(r.body, "secret.tool"));
  CHECK(contains(r.body, "\"name\":\"echo\""));
  free(r.body);
  expect(GET(port, "/commands/"), 200, NULL, "commands/");
  expect(POST(port, "/commands", "{}"), 405, NULL, "POST /commands");
  expect(GET(port, "/nope"), 404, NULL, "unknown route");

  expect(POST(port, "/commands/hello", "{\"name\":\"Ada\"}"), 200,
         "{\"result\":{\"greeting\":\"Hello, Ada!\",\"times\":1,\"loud\":false}}", "hello");
  expect(POST(port, "/commands/hello",
              "{\"name\":\"Bob\",\"greeting\":\"Hi\",\"times\":\"3\",\"loud\":\"YES\"}"),
         200, "{\"result\":{\"greeting\":\"Hi, Bob!\",\"times\":3,\"loud\":true}}", "coerced");
  expect(POST(port, "/commands/hello", "{\"name\":7,\"loud\":1}"), 200,
         "{\"result\":{\"greeting\":\"Hello, 7!\",\"times\":1,\"loud\":true}}", "number as string");
  expect(GET(port, "/commands/hello"), 405, NULL, "GET a command");

  /* 404 names the visible commands */
  r = POST(port, "/commands/nope", "{}");
  CHECK_INT(r.status, 404);
  CHECK(contains(r.body,
                 "\"error\":\"Unknown command 'nope'; available: hello, fail, "
                 "bare_fail, types, echo, meet, gate, stop\""));
  CHECK(contains(r.body, "\"type\":\"CommandNotFoundError\""));
  free(r.body);
  /* hidden commands are callable */
  expect(POST(port, "/commands/secret.tool", ""), 200, "{\"result\":null}", "hidden");

  /* 400s */
  r = POST(port, "/commands/hello", "{}");
  CHECK_INT(r.status, 400);
  CHECK(contains(r.body, "missing required argument 'name'"));
  CHECK(contains(r.body, "\"type\":\"ValidationError\""));
  free(r.body);
  r = POST(port, "/commands/hello", "{\"name\":\"x\",\"times\":\"many\"}");
  CHECK_INT(r.status, 400);
  CHECK(contains(r.body, "argument 'times': expected an integer"));
  free(r.body);
  r = POST(port, "/commands/hello", "{\"name\":\"x\",\"loud\":\"perhaps\"}");
  CHECK_INT(r.status, 400);
  free(r.body);
  r = POST(port, "/commands/hello", "{\"name\":\"x\",\"extra\":1}");
  CHECK_INT(r.status, 400);
  CHECK(contains(r.body, "unexpected argument 'extra'"));
  free(r.body);
  const char *bad[] = {"{\"name\":",
                       "[\"name\"]",
                       "\"name\"",
                       "{\"name\":\"\\u0000\"}",
                       "{\"name\":\"x\"} trailing",
                       "{\"name\":[1]}",
                       "nul\0l"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    resp b = http("POST", port, "/commands/hello", bad[i], i == 6 ? 6 : (size_t)-1, NULL);
    if (b.status != 400) ASBT_FAIL("bad body %zu: HTTP %ld %s", i, b.status, b.body);
    free(b.body);
  }
  char invalid_utf8[] = "{\"name\":\"\xff\xfe\"}";
  expect(POST(port, "/commands/hello", invalid_utf8), 400, NULL, "invalid UTF-8");

  /* 413: declared and streamed */
  char *big = malloc(10000);
  memset(big, ' ', 9999);
  big[0] = '{';
  big[9997] = '}';
  big[9998] = 0;
  r = POST(port, "/commands/hello", big);
  CHECK_INT(r.status, 413);
  CHECK(contains(r.body, "PayloadTooLarge"));
  free(r.body);
  use_chunked = 1;
  r = POST(port, "/commands/hello", big);
  CHECK_INT(r.status, 413);
  free(r.body);
  expect(POST(port, "/commands/hello", "{\"name\":\"chunky\"}"), 200, NULL, "chunked ok");
  use_chunked = 0;
  free(big);
  expect(GET(port, "/health"), 200, NULL, "alive after 413");

  /* 500s */
  expect(POST(port, "/commands/fail", "{\"why\":\"bad input\"}"), 500,
         "{\"error\":\"bad input\",\"type\":\"ValueError\"}", "fail");
  expect(POST(port, "/commands/fail", "{}"), 500, "{\"error\":\"because\",\"type\":\"ValueError\"}",
         "fail default");
  r = POST(port, "/commands/bare_fail", "{}");
  CHECK_INT(r.status, 500);
  CHECK(contains(r.body, "its handler returned 7"));
  CHECK(contains(r.body, "\"type\":\"Error\""));
  free(r.body);

  /* result types */
  expect(POST(port, "/commands/types", "{\"kind\":\"string\"}"), 200,
         "{\"result\":\"a\\\"b\\n\xc3\xa9\"}", "string");
  expect(POST(port, "/commands/types", "{\"kind\":\"int\"}"), 200, "{\"result\":-9007199254740993}",
         "int");
  expect(POST(port, "/commands/types", "{\"kind\":\"float\"}"), 200, "{\"result\":2.5}", "float");
  expect(POST(port, "/commands/types", "{\"kind\":\"bool\"}"), 200, "{\"result\":true}", "bool");
  expect(POST(port, "/commands/types", "{\"kind\":\"json\"}"), 200, "{\"result\":[1,{\"a\":null}]}",
         "json");
  expect(POST(port, "/commands/types", "{\"kind\":\"badjson\"}"), 200, "{\"result\":\"refused\"}",
         "bad json result");
  expect(POST(port, "/commands/types", "{\"kind\":\"none\"}"), 200, "{\"result\":null}", "none");

  /* getters */
  expect(POST(port, "/commands/echo", "{\"i\":\"12345678901234567891\"}"), 400, NULL, "i64 range");
  expect(POST(port, "/commands/echo", "{\"i\":\"-42\",\"j\":{\"k\":[true]}}"), 200,
         "{\"result\":{\"args\":{\"i\":-42,\"f\":0.5,\"j\":{\"k\":[true]}},\"has_opt\":0,"
         "\"f\":0.5,\"j\":{\"k\":[true]},\"s_of_i\":\"-42\",\"cmd\":\"echo\"}}",
         "echo");
  expect(POST(port, "/commands/echo", "{\"opt\":\"x\",\"f\":\"1e1\"}"), 200,
         "{\"result\":{\"args\":{\"f\":10,\"opt\":\"x\"},\"has_opt\":1,\"f\":10,\"j\":null,"
         "\"s_of_i\":\"\",\"cmd\":\"echo\"}}",
         "echo 2");
  asb_server_free(s);
  /* stopped: nothing listens any more */
  r = GET(port, "/health");
  CHECK_INT(r.status, 0);
  free(r.body);
}

TEST(auth) {
  asb_server *s = make_server("s3cret");
  REQUIRE(s);
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  expect(GET(port, "/health"), 200, NULL, "health needs no token");
  expect(GET(port, "/commands"), 401, "{\"error\":\"unauthorized\",\"type\":\"AuthError\"}",
         "no token");
  expect(http("GET", port, "/commands", NULL, 0, "wrong"), 401, NULL, "wrong token");
  expect(http("GET", port, "/commands", NULL, 0, "s3cret-"), 401, NULL, "longer token");
  expect(http("POST", port, "/commands/hello", "{\"name\":\"x\"}", (size_t)-1, NULL), 401, NULL,
         "post without token");
  expect(http("POST", port, "/commands/nope", "{}", (size_t)-1, NULL), 401, NULL,
         "unknown command without token");
  expect(http("GET", port, "/commands", NULL, 0, "s3cret"), 200, NULL, "token");
  expect(http("POST", port, "/commands/hello", "{\"name\":\"x\"}", (size_t)-1, "s3cret"), 200, NULL,
         "post with token");
  asb_server_free(s);

  /* from the environment */
  setenv("ASB_SERVER_TOKEN", "from-env", 1);
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = "127.0.0.1";
  s = NULL;
  REQUIRE(asb_server_new(&s, &o) == ASB_OK);
  unsetenv("ASB_SERVER_TOKEN");
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  port = asb_server_port(s);
  expect(GET(port, "/commands"), 401, NULL, "env token required");
  expect(http("GET", port, "/commands", NULL, 0, "from-env"), 200, "{\"commands\":[]}",
         "env token");
  asb_server_free(s);

  /* its SHA-256 from the environment (what the engine gives a start
   * command): the token works, the hash does not */
  setenv("ASB_SERVER_TOKEN_SHA256",
         "5be15563b7e4ee3be72026539d59cb0d580d63b77909f4cf7411b99da0edbcc5", 1);
  s = NULL;
  REQUIRE(asb_server_new(&s, &o) == ASB_OK);
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  port = asb_server_port(s);
  expect(GET(port, "/commands"), 401, NULL, "hashed token required");
  expect(http("GET", port, "/commands", NULL, 0,
              "5be15563b7e4ee3be72026539d59cb0d580d63b77909f4cf7411b99da0edbcc5"),
         401, NULL, "the hash is no token");
  expect(http("GET", port, "/commands", NULL, 0, "hashed-s3cret"), 200, "{\"commands\":[]}",
         "hashed token");
  asb_server_free(s);
  /* an explicitly empty ASB_SERVER_TOKEN still means none */
  setenv("ASB_SERVER_TOKEN", "", 1);
  s = NULL;
  REQUIRE(asb_server_new(&s, &o) == ASB_OK);
  unsetenv("ASB_SERVER_TOKEN");
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  port = asb_server_port(s);
  expect(GET(port, "/commands"), 200, "{\"commands\":[]}", "explicitly no token");
  asb_server_free(s);
  setenv("ASB_SERVER_TOKEN_SHA256", "not-hex", 1);
  s = NULL;
  CHECK_INT(asb_server_new(&s, &o), ASB_EINVAL);
  unsetenv("ASB_SERVER_TOKEN_SHA256");
}

typedef struct post_job {
  int port;
  const char *path, *body;
  resp r;
} post_job;

static void *post_thread(void *arg) {
  post_job *j = arg;
  j->r = POST(j->port, j->path, j->body);
  return NULL;
}

TEST(concurrency) {
  asb_server *s = make_server(NULL);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  /* Two calls meet inside their handler: they ran at the same time. */
  meet_inside = meet_max = 0;
  post_job a = {port, "/commands/meet", "{}", {0, NULL, 0}}, b = a;
  pthread_t ta, tb;
  pthread_create(&ta, NULL, post_thread, &a);
  pthread_create(&tb, NULL, post_thread, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  expect(a.r, 200, "{\"result\":true}", "meet a");
  expect(b.r, 200, "{\"result\":true}", "meet b");
  /* Many clients at once all get their own answer. */
  enum { N = 16 };
  post_job jobs[N];
  pthread_t t[N];
  char bodies[N][64];
  for (int i = 0; i < N; i++) {
    snprintf(bodies[i], sizeof bodies[i], "{\"name\":\"n%d\",\"times\":%d}", i, i);
    jobs[i] = (post_job){port, "/commands/hello", bodies[i], {0, NULL, 0}};
    pthread_create(&t[i], NULL, post_thread, &jobs[i]);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    char want[128];
    snprintf(want, sizeof want,
             "{\"result\":{\"greeting\":\"Hello, n%d!\",\"times\":%d,\"loud\":false}}", i, i);
    expect(jobs[i].r, 200, want, "parallel hello");
  }
  asb_server_free(s);
}

TEST(graceful_shutdown) {
  asb_server *s = make_server(NULL);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  gate_entered = gate_open = 0;
  post_job j = {port, "/commands/gate", "{}", {0, NULL, 0}};
  pthread_t t;
  pthread_create(&t, NULL, post_thread, &j);
  pthread_mutex_lock(&gate_mu);
  while (!gate_entered) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  /* Stop while a call is in progress: it still gets its answer. */
  CHECK_RC(asb_server_stop(s), ASB_OK);
  /* New connections are refused once stopping (poll: no timing assumed). */
  long st = -1;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; st != 0 && asbt_now_ms() < end;) {
    resp r = GET(port, "/health");
    st = r.status;
    free(r.body);
    if (st != 0) usleep(5000);
  }
  CHECK_INT(st, 0);
  pthread_mutex_lock(&gate_mu);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(t, NULL);
  expect(j.r, 200, "{\"result\":\"done\"}", "in-flight call finished");
  CHECK_RC(asb_server_wait(s), ASB_OK);
  CHECK_INT(asb_server_port(s), 0);
  /* A stopped server starts again. */
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  port = asb_server_port(s);
  expect(GET(port, "/health"), 200, NULL, "restarted");
  asb_server_free(s);
}

typedef struct blocking {
  asb_server *s;
  int port, rc;
} blocking;

static void *run_blocking(void *arg) {
  blocking *b = arg;
  b->rc = asb_server_start(b->s, b->port);
  return NULL;
}

TEST(blocking_start) {
  asb_server *s = make_server(NULL);
  REQUIRE(s);
  blocking b = {s, 0, -1};
  pthread_t t;
  pthread_create(&t, NULL, run_blocking, &b);
  int port = 0;
  WAIT_UNTIL((port = asb_server_port(s)) > 0, ASBT_DEADLINE_MS);
  REQUIRE(port > 0);
  expect(GET(port, "/health"), 200, NULL, "blocking health");
  /* A handler stops it. */
  expect(POST(port, "/commands/stop", "{}"), 200, "{\"result\":\"stopping\"}", "stop");
  pthread_join(t, NULL);
  CHECK_RC(b.rc, ASB_OK);
  /* The port is taken: a clear error. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0);
  socklen_t al = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &al);
  CHECK_RC(asb_server_start(s, ntohs(a.sin_port)), ASB_ECONNECTION);
  CHECK(contains(asb_server_error_last()->message, "in use"));
  close(fd);
  asb_server_free(s);
}

TEST(raw_garbage) {
  asb_server *s = make_server(NULL);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  const char *junk[] = {"GARBAGE\r\n\r\n",
                        "POST /commands/hello HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                        "POST /commands/hello HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                        "\x00\x01\x02\r\n\r\n", "GET /commands HTTP/1.1\r\nHost: a\r\n"};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      if (write(fd, junk[i], strlen(junk[i]) + (i == 3 ? 3 : 0)) < 0) {
      }
      shutdown(fd, SHUT_WR);
      char buf[512];
      while (read(fd, buf, sizeof buf) > 0) {
      }
    }
    close(fd);
  }
  expect(GET(port, "/health"), 200, NULL, "alive after garbage");
  asb_server_free(s);
}

/* ---- pull mode and deferred replies ------------------------------------------- */

/* A server whose "add" and "slow" have no handler (pull mode), next to
 * "hello" (a handler). */
static asb_server *pull_server(long grace_ms) {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = "127.0.0.1";
  o.token = "";
  o.shutdown_grace_ms = grace_ms;
  asb_server *s = NULL;
  if (asb_server_new(&s, &o) != ASB_OK) return NULL;
  asb_server_command *c = NULL;
  asb_server_register(&c, s, "add", "a + b", NULL, NULL, NULL);
  asb_server_command_add_arg(c, "a", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_command_add_arg(c, "b", ASB_ARG_INTEGER, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_register(NULL, s, "slow", NULL, NULL, NULL, NULL);
  asb_server_register(&c, s, "hello", NULL, h_hello, NULL, NULL);
  asb_server_command_add_arg(c, "name", ASB_ARG_STRING, ASB_ARG_REQUIRED, NULL, NULL);
  asb_server_command_add_arg(c, "greeting", ASB_ARG_STRING, 0, "Hello", NULL);
  asb_server_command_add_arg(c, "times", ASB_ARG_INTEGER, 0, "1", NULL);
  asb_server_command_add_arg(c, "loud", ASB_ARG_BOOLEAN, 0, "no", NULL);
  return s;
}

/* Answers an "add" call (or fails a bad one). */
static void answer(asb_server_call *call) {
  if (strcmp(asb_server_call_command(call), "add") != 0) {
    CHECK_RC(asb_server_call_fail(call, "NotHere", "only add"), ASB_OK);
    return;
  }
  asb_int64 a = asb_server_call_integer(call, "a"), b = asb_server_call_integer(call, "b");
  if (a < 0) {
    CHECK_RC(asb_server_call_fail(call, "ValueError", "a must be >= 0"), ASB_OK); /* sent */
    return;
  }
  CHECK_RC(asb_server_call_set_result_integer(call, a + b), ASB_OK);
  CHECK_RC(asb_server_call_reply(call), ASB_OK);
}

/* Lua-style: ONE thread runs both the clients (a curl multi) and the
 * server's program side (poll its fd through curl_multi_poll's extra fds,
 * take calls, answer them). Nothing of the program runs on another thread. */
TEST(pull_single_threaded_loop) {
  asb_server *s = pull_server(0);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  enum { N = 24 };
  CURLM *m = curl_multi_init();
  CURL *e[N];
  resp r[N];
  char body[N][64], url[128];
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  snprintf(url, sizeof url, "http://127.0.0.1:%d/commands/add", port);
  for (int i = 0; i < N; i++) {
    memset(&r[i], 0, sizeof r[i]);
    snprintf(body[i], sizeof body[i], "{\"a\":%d,\"b\":%d}", i == 5 ? -1 : i, 1000);
    e[i] = curl_easy_init();
    curl_easy_setopt(e[i], CURLOPT_URL, url);
    curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e[i], CURLOPT_POSTFIELDS, body[i]);
    curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &r[i]);
    curl_multi_add_handle(m, e[i]);
  }
  int running = N, served = 0;
  time_t give_up = time(NULL) + 120; /* only so a broken server fails, not hangs */
  while (running > 0 && time(NULL) < give_up) {
    curl_multi_perform(m, &running);
    struct curl_waitfd w = {asb_server_fd(s), CURL_WAIT_POLLIN, 0};
    curl_multi_poll(m, &w, 1, 1000, NULL);
    if (w.revents & CURL_WAIT_POLLIN) {
      asb_server_call *call = NULL;
      while (asb_server_next_call(&call, s, 0) == ASB_OK) {
        answer(call);
        served++;
      }
    }
  }
  CHECK_INT(running, 0);
  CHECK_INT(served, N);
  for (int i = 0; i < N; i++) {
    long st = 0;
    curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &st);
    char want[64];
    if (i == 5) {
      CHECK_INT(st, 500);
      CHECK(contains(r[i].body, "\"type\":\"ValueError\""));
    } else {
      snprintf(want, sizeof want, "{\"result\":%d}", i + 1000);
      CHECK_INT(st, 200);
      CHECK_STR(r[i].body, want);
    }
    curl_multi_remove_handle(m, e[i]);
    curl_easy_cleanup(e[i]);
    free(r[i].body);
  }
  curl_multi_cleanup(m);
  curl_slist_free_all(h);
  /* No call waiting: next_call says so at once, or after its timeout. */
  asb_server_call *none = NULL;
  CHECK_RC(asb_server_next_call(&none, s, 0), ASB_ETIMEOUT);
  CHECK_RC(asb_server_next_call(&none, s, 30), ASB_ETIMEOUT);
  CHECK(none == NULL);
  /* Handler commands of the same server work as before. */
  expect(POST(port, "/commands/hello", "{\"name\":\"Ada\"}"), 200,
         "{\"result\":{\"greeting\":\"Hello, Ada!\",\"times\":1,\"loud\":false}}",
         "handler next to pull commands");
  asb_server_free(s);
}

/* poll(2) on the server's fd next to other fds; the loop hands each call
 * to a worker thread that answers it later (deferred replies from another
 * thread); clients on threads of their own. */
typedef struct work {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  asb_server_call *q[64];
  int n, closed;
} work;

static void *worker(void *arg) {
  work *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (!w->n && !w->closed) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->n) {
      pthread_mutex_unlock(&w->mu);
      return NULL;
    }
    asb_server_call *call = w->q[--w->n];
    pthread_mutex_unlock(&w->mu);
    answer(call);
  }
}

typedef struct client {
  pthread_t t;
  int port, i, done_fd;
  resp r;
} client;

static void *client_main(void *arg) {
  client *c = arg;
  char body[64];
  snprintf(body, sizeof body, "{\"a\":%d,\"b\":1}", c->i);
  c->r = POST(c->port, "/commands/add", body);
  char one = 1;
  if (write(c->done_fd, &one, 1) != 1) ASBT_FAIL("write");
  return NULL;
}

TEST(poll_loop_with_deferred_replies) {
  asb_server *s = pull_server(0);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int done[2];
  REQUIRE(pipe(done) == 0);
  work w;
  memset(&w, 0, sizeof w);
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  pthread_t wt;
  pthread_create(&wt, NULL, worker, &w);
  enum { N = 12 };
  client cs[N];
  for (int i = 0; i < N; i++) {
    cs[i] = (client){.port = asb_server_port(s), .i = i, .done_fd = done[1]};
    pthread_create(&cs[i].t, NULL, client_main, &cs[i]);
  }
  int finished = 0, taken = 0;
  while (finished < N) {
    struct pollfd p[2] = {{asb_server_fd(s), POLLIN, 0}, {done[0], POLLIN, 0}};
    if (poll(p, 2, 60000) <= 0) {
      ASBT_FAIL("nothing happened for 60 s");
      break;
    }
    if (p[0].revents & POLLIN) {
      asb_server_call *call = NULL;
      while (asb_server_next_call(&call, s, 0) == ASB_OK) {
        pthread_mutex_lock(&w.mu);
        w.q[w.n++] = call;
        pthread_cond_signal(&w.cv);
        pthread_mutex_unlock(&w.mu);
        taken++;
      }
    }
    if (p[1].revents & POLLIN) {
      char b[16];
      ssize_t k = read(done[0], b, sizeof b);
      if (k > 0) finished += (int)k;
    }
  }
  CHECK_INT(taken, N);
  for (int i = 0; i < N; i++) {
    pthread_join(cs[i].t, NULL);
    char want[64];
    snprintf(want, sizeof want, "{\"result\":%d}", i + 1);
    expect(cs[i].r, 200, want, "deferred reply");
  }
  pthread_mutex_lock(&w.mu);
  w.closed = 1;
  pthread_cond_signal(&w.cv);
  pthread_mutex_unlock(&w.mu);
  pthread_join(wt, NULL);
  close(done[0]);
  close(done[1]);
  asb_server_free(s);
}

/* A handler defers its call and another thread answers it. */
static asb_server_call *deferred_call;
static pthread_mutex_t defer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t defer_cv = PTHREAD_COND_INITIALIZER;

static int h_defer(asb_server_call *call, void *ud) {
  (void)ud;
  CHECK_RC(asb_server_call_defer(call), ASB_OK);
  CHECK_RC(asb_server_call_defer(call), ASB_EINVAL); /* once */
  pthread_mutex_lock(&defer_mu);
  deferred_call = call;
  pthread_cond_broadcast(&defer_cv);
  pthread_mutex_unlock(&defer_mu);
  return 1; /* ignored: the call was deferred */
}

TEST(handler_defers_its_call) {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = "127.0.0.1";
  o.token = "";
  asb_server *s = NULL;
  REQUIRE(asb_server_new(&s, &o) == ASB_OK);
  asb_server_command *c = NULL;
  REQUIRE(asb_server_register(&c, s, "later", NULL, h_defer, NULL, NULL) == ASB_OK);
  asb_server_command_add_arg(c, "x", ASB_ARG_STRING, 0, "?", NULL);
  REQUIRE(asb_server_start_background(s, 0) == ASB_OK);
  post_job j = {asb_server_port(s), "/commands/later", "{\"x\":\"hi\"}", {0, NULL, 0}};
  pthread_t t;
  pthread_create(&t, NULL, post_thread, &j);
  pthread_mutex_lock(&defer_mu);
  while (!deferred_call) pthread_cond_wait(&defer_cv, &defer_mu);
  asb_server_call *call = deferred_call;
  deferred_call = NULL;
  pthread_mutex_unlock(&defer_mu);
  /* the handler returned long ago; the request still waits */
  CHECK_STR(asb_server_call_string(call, "x"), "hi");
  CHECK_RC(asb_server_call_set_result_string(call, "answered later"), ASB_OK);
  CHECK_RC(asb_server_call_reply(call), ASB_OK);
  pthread_join(t, NULL);
  expect(j.r, 200, "{\"result\":\"answered later\"}", "deferred");
  asb_server_free(s);
}

/* Stopping: queued calls are answered 503 at once, next_call returns
 * ASB_ECANCELED and the fd turns readable; a taken call gets 503 after the
 * grace, and a late reply (even after asb_server_free) is safe. */
TEST(pull_mode_stops) {
  asb_server *s = pull_server(300);
  REQUIRE(s && asb_server_start_background(s, 0) == ASB_OK);
  int port = asb_server_port(s);
  post_job taken_job = {port, "/commands/slow", "{}", {0, NULL, 0}};
  post_job queued_job = {port, "/commands/add", "{\"a\":1,\"b\":2}", {0, NULL, 0}};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, post_thread, &taken_job);
  asb_server_call *held = NULL;
  CHECK_RC(asb_server_next_call(&held, s, 60000), ASB_OK);
  REQUIRE(held);
  CHECK_STR(asb_server_call_command(held), "slow");
  pthread_create(&t2, NULL, post_thread, &queued_job);
  struct pollfd p = {asb_server_fd(s), POLLIN, 0};
  CHECK(poll(&p, 1, 60000) == 1); /* the second call is queued */
  CHECK_RC(asb_server_stop(s), ASB_OK);
  pthread_join(t2, NULL);
  CHECK_INT(queued_job.r.status, 503);
  free(queued_job.r.body);
  asb_server_call *none = NULL;
  CHECK_RC(asb_server_next_call(&none, s, -1), ASB_ECANCELED);
  p.revents = 0;
  CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLIN)); /* readable: stopped */
  pthread_join(t1, NULL); /* the taken call was given up after the grace */
  CHECK_INT(taken_job.r.status, 503);
  free(taken_job.r.body);
  CHECK_RC(asb_server_wait(s), ASB_OK);
  asb_server_free(s);
  CHECK_RC(asb_server_call_reply(held), ASB_ECANCELED); /* the last reference */
}

int main(void) {
  curl_global_init(CURL_GLOBAL_ALL);
  RUN(registry_rules);
  RUN(routes_and_results);
  RUN(auth);
  RUN(concurrency);
  RUN(graceful_shutdown);
  RUN(blocking_start);
  RUN(raw_garbage);
  RUN(pull_single_threaded_loop);
  RUN(poll_loop_with_deferred_replies);
  RUN(handler_defers_its_call);
  RUN(pull_mode_stops);
  curl_global_cleanup();
  TEST_MAIN_END();
}
